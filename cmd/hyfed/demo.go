package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/session"
)

// demoSeats is the server's DemoData for hyfed serve --demo: the demo
// federation's blocks (MNIST, quadrants:2) for pages that pick "use demo
// block k", and simulated native participants for the seats left free.
// It keeps the join link, and so the federation secret, in this process
// but outside the server package: the coordinator never sees it.
type demoSeats struct {
	ctx    context.Context
	log    *slog.Logger
	mu     sync.Mutex
	feds   map[string]demoFed
	wg     sync.WaitGroup
	finish func(id string, err error) // tests watch the simulated participants end
}

type demoFed struct {
	link   session.Link
	blocks []*partition.Block
}

func newDemoSeats(ctx context.Context, log *slog.Logger) *demoSeats {
	return &demoSeats{ctx: ctx, log: log, feds: map[string]demoFed{}}
}

func (d *demoSeats) add(id string, link session.Link, blocks []partition.Block) {
	d.mu.Lock()
	defer d.mu.Unlock()
	bs := make([]*partition.Block, len(blocks))
	for i := range blocks {
		bs[i] = &blocks[i]
	}
	d.feds[id] = demoFed{link: link, blocks: bs}
}

// Blocks implements server.DemoData.
func (d *demoSeats) Blocks(id string) []*partition.Block {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.feds[id].blocks
}

// Fill implements server.DemoData: one native participant per block, on
// its own loopback websocket, as hyfed sim runs them.
func (d *demoSeats) Fill(id string, ks []int) error {
	d.mu.Lock()
	f, ok := d.feds[id]
	d.mu.Unlock()
	if !ok {
		return fmt.Errorf("no demo federation %q in this process", id)
	}
	blocks := make([]*partition.Block, len(ks))
	for i, k := range ks {
		if k < 0 || k >= len(f.blocks) {
			return fmt.Errorf("demo block %d: there are %d", k, len(f.blocks))
		}
		blocks[i] = f.blocks[k]
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		_, err := session.RunMany(d.ctx, f.link, blocks, session.Options{Dial: session.WebSocket(64 << 20), Log: d.log.With("demo", id)})
		if err != nil && d.ctx.Err() == nil {
			d.log.Warn("simulated participants ended", "federation", id, "error", err)
		}
		if d.finish != nil {
			d.finish(id, err)
		}
	}()
	return nil
}
