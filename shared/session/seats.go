package session

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/table"
)

// Seats holds demo federations' blocks, as the files a page hands out, and
// runs simulated participants for their free seats: the server's DemoData
// (hyfed serve --demo; the browser tests). It keeps the join links, and so
// the federation secrets, outside the server package: the coordinator
// never sees them.
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
	schema *schema.Schema
	files  []partition.File
	// What Seat matches a hello against: each block's first pseudonym,
	// its samples and its features, as the file reads.
	first    []string
	samples  []int
	features [][]int
}

// NewSeats runs simulated participants until ctx ends, logging to log.
func NewSeats(ctx context.Context, log *slog.Logger) *Seats {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Seats{ctx: ctx, log: log, feds: map[string]seatsFed{}}
}

// Add registers demo federation id: its join link, its schema (nil: a
// federation of block files) and its blocks as the files the pages hand
// out. Every participant reads them alike (table.Load, as a page's
// participant does): the simulated ones read the same bytes.
func (d *Seats) Add(id string, link Link, s *schema.Schema, files []partition.File) error {
	f := seatsFed{link: link, schema: s, files: files}
	for _, file := range files {
		b, err := loadFile(file, s)
		if err != nil {
			return err
		}
		first := ""
		if len(b.IDs) > 0 {
			first = link.Secret.Pseudonym(b.IDs[0])
		}
		f.first, f.samples, f.features = append(f.first, first), append(f.samples, b.N()), append(f.features, b.Features)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.feds[id] = f
	return nil
}

func loadFile(f partition.File, s *schema.Schema) (*partition.Block, error) {
	b, _, err := table.Load(f.Name, f.Data, s, table.Options{})
	if err != nil {
		return nil, fmt.Errorf("demo block %s: %w", f.Name, err)
	}
	return b, nil
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
	for k := range f.files {
		if f.first[k] == hello.Pseudonyms[0] && f.samples[k] == len(hello.Pseudonyms) && slices.Equal(f.features[k], hello.Features) {
			return k
		}
	}
	return -1
}

// Files returns demo federation id's files, in block order (nil: no such
// demo federation in this process; server.DemoData).
func (d *Seats) Files(id string) []partition.File {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.feds[id].files
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
		if k < 0 || k >= len(f.files) {
			return fmt.Errorf("demo block %d: there are %d", k, len(f.files))
		}
		b, err := loadFile(f.files[k], f.schema)
		if err != nil {
			return err
		}
		blocks[i] = b
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
