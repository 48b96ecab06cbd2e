package protocol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// EventKind says what a transport event carries.
type EventKind int

// Transport events.
const (
	EventMessage EventKind = iota // a participant's message
	EventJoin                     // a participant connected and sent its hello
	EventLeave                    // a participant's connection ended
)

// Event is something that arrived for the coordinator.
type Event struct {
	Kind EventKind
	From int
	Msg  Message
}

// Transport connects the coordinator to its participants: it delivers the
// coordinator's envelopes and yields what the participants send back.
type Transport interface {
	Deliver(ctx context.Context, envs []Envelope) error
	Next(ctx context.Context) (Event, error)
}

// ErrIdle is returned by Transport.Next when nothing can arrive any more.
var ErrIdle = errors.New("transport: nothing left to deliver")

// Serve runs the coordinator over a transport until the federation finishes.
func Serve(ctx context.Context, c *Coordinator, t Transport, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for !c.Finished() {
		ev, err := t.Next(ctx)
		if errors.Is(err, ErrIdle) && c.Phase() != "" {
			// Nothing more can arrive: the phase's deadline has come.
			log.Warn("phase deadline", "round", c.Round(), "phase", c.Phase())
			if err := t.Deliver(ctx, c.Expire()); err != nil {
				return fmt.Errorf("serve: deliver: %w", err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("serve: round %d: %w", c.Round(), err)
		}
		var out []Envelope
		switch ev.Kind {
		case EventJoin:
			out = c.Connect(ev.From, ev.Msg)
		case EventLeave:
			log.Info("participant left", "client", ev.From, "round", c.Round(), "phase", c.Phase())
			out = c.Disconnect(ev.From)
		default:
			out = c.Receive(ev.From, ev.Msg)
		}
		for _, e := range out {
			if e.Msg.Kind == KindError {
				log.Warn("rejected participant message", "client", e.To, "round", c.Round(), "error", e.Msg.Err)
			}
		}
		if err := t.Deliver(ctx, out); err != nil {
			return fmt.Errorf("serve: deliver: %w", err)
		}
	}
	return nil
}
