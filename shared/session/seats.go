package session

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
)

// Seats holds demo federations' blocks and runs simulated participants for
// their free seats: the server's DemoData (hyfed serve --demo; the browser
// tests). It keeps the join links, and so the federation secrets, outside
// the server package: the coordinator never sees them.
type Seats struct {
	ctx  context.Context
	log  *slog.Logger
	mu   sync.Mutex
	feds map[string]seatsFed
	wg   sync.WaitGroup
	// Finished, if set, sees each batch of simulated participants end.
	Finished func(id string, err error)
}

type seatsFed struct {
	link   Link
	blocks []*partition.Block
	first  []string // the pseudonym of each block's first record
}

// NewSeats runs simulated participants until ctx ends, logging to log.
func NewSeats(ctx context.Context, log *slog.Logger) *Seats {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Seats{ctx: ctx, log: log, feds: map[string]seatsFed{}}
}

// Add registers demo federation id: its join link and its blocks.
func (d *Seats) Add(id string, link Link, blocks []partition.Block) {
	d.mu.Lock()
	defer d.mu.Unlock()
	bs := make([]*partition.Block, len(blocks))
	for i := range blocks {
		bs[i] = &blocks[i]
	}
	first := make([]string, len(blocks))
	for i := range blocks {
		if len(blocks[i].IDs) > 0 {
			first[i] = link.Secret.Pseudonym(blocks[i].IDs[0])
		}
	}
	d.feds[id] = seatsFed{link: link, blocks: bs, first: first}
}

// Seat returns the block of demo federation id whose records a hello's
// pseudonyms name (same first pseudonym, same count, same features), or -1
// (server.DemoData): a demo seat is taken when its block joins.
func (d *Seats) Seat(id string, hello *protocol.Message) int {
	d.mu.Lock()
	f, ok := d.feds[id]
	d.mu.Unlock()
	if !ok || hello == nil || len(hello.Pseudonyms) == 0 {
		return -1
	}
	for k, b := range f.blocks {
		if f.first[k] == hello.Pseudonyms[0] && b.N() == len(hello.Pseudonyms) && slices.Equal(b.Features, hello.Features) {
			return k
		}
	}
	return -1
}

// Blocks returns demo federation id's blocks (server.DemoData).
func (d *Seats) Blocks(id string) []*partition.Block {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.feds[id].blocks
}

// Fill runs one native participant per block, each on its own websocket,
// as hyfed sim does, in the background (server.DemoData).
func (d *Seats) Fill(id string, ks []int) error {
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
		_, err := RunMany(d.ctx, f.link, blocks, Options{Dial: WebSocket(64 << 20), Log: d.log.With("demo", id)})
		if err != nil && d.ctx.Err() == nil {
			d.log.Warn("simulated participants ended", "federation", id, "error", err)
		}
		if d.Finished != nil {
			d.Finished(id, err)
		}
	}()
	return nil
}

// Wait waits for every simulated participant started so far to end.
func (d *Seats) Wait() { d.wg.Wait() }
