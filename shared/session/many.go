package session

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hyfed/hyfed/shared/partition"
)

// DialAhead is how many participants RunMany lets open their sockets
// before their turn to register: well under the server's bound on
// unregistered sockets per federation (server.Options.MaxPending, 32).
const DialAhead = 8

// RunMany runs one participant per block, each on its own connection, and
// returns when all have finished. They prepare (keys, pseudonyms, the
// hello) and open their sockets up to DialAhead ahead of their turn, but
// send their hellos one after another (each waits for the previous
// one's welcome), so the server numbers them in block order, as an
// in-process experiment does. With Options.Unordered they register up to
// DialAhead at once, in whatever order the server admits them. The first
// error cancels the others.
func RunMany(ctx context.Context, l Link, blocks []*partition.Block, o Options) ([]*Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]*Result, len(blocks))
	errs := make([]error, len(blocks))
	// welcomed[i] closes when participant i is welcomed, or has ended
	// without a welcome (its error says why, and cancels the others).
	welcomed := make([]chan struct{}, len(blocks))
	for i := range welcomed {
		welcomed[i] = make(chan struct{})
	}
	wait := func(i int) func(context.Context) error {
		if i < 0 {
			return nil
		}
		return func(ctx context.Context) error {
			select {
			case <-welcomed[i]:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	slots := make(chan struct{}, DialAhead) // Unordered: registrations under way
	var wg sync.WaitGroup
	for i, b := range blocks {
		var once sync.Once
		var holds bool // set before Run, read after its welcome or end
		done := func() {
			once.Do(func() {
				close(welcomed[i])
				if holds {
					<-slots
				}
			})
		}
		oi := o
		oi.OnWelcome = func(session, name string) {
			done()
			if o.OnWelcome != nil {
				o.OnWelcome(session, name)
			}
		}
		if !o.Unordered {
			oi.beforeHello = wait(i - 1)
		}
		if o.Log != nil {
			oi.Log = o.Log.With("block", i)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer done()
			// Its turn to prepare (key, pseudonyms) and connect: DialAhead
			// ahead of its hello in block order, or one of DialAhead
			// registrations under way.
			var err error
			if o.Unordered {
				select {
				case slots <- struct{}{}:
					holds = true
				case <-ctx.Done():
					err = ctx.Err()
				}
			} else if w := wait(i - DialAhead); w != nil {
				err = w(ctx)
			}
			if err == nil {
				results[i], err = Run(ctx, l, b, oi)
			}
			if err != nil {
				errs[i] = fmt.Errorf("participant %d: %w", i, err)
				cancel()
			}
		}()
	}
	wg.Wait()
	return results, errors.Join(errs...)
}
