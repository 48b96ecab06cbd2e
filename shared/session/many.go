package session

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hyfed/hyfed/shared/partition"
)

// RunMany runs one participant per block, each on its own connection, and
// returns when all have finished. They register one after another (each
// waits for the previous one's welcome), so the server numbers them in
// block order, as an in-process experiment does. The first error cancels
// the others.
func RunMany(ctx context.Context, l Link, blocks []*partition.Block, o Options) ([]*Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]*Result, len(blocks))
	errs := make([]error, len(blocks))
	var wg sync.WaitGroup
	for i, b := range blocks {
		welcomed := make(chan struct{})
		var once sync.Once
		oi := o
		oi.OnWelcome = func(session, name string) {
			once.Do(func() { close(welcomed) })
			if o.OnWelcome != nil {
				o.OnWelcome(session, name)
			}
		}
		if o.Log != nil {
			oi.Log = o.Log.With("block", i)
		}
		finished := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(finished)
			results[i], errs[i] = Run(ctx, l, b, oi)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("participant %d: %w", i, errs[i])
				cancel()
			}
		}()
		select {
		case <-welcomed:
		case <-finished:
			// It ended before it was welcomed: its error says why.
		case <-ctx.Done():
		}
	}
	wg.Wait()
	return results, errors.Join(errs...)
}
