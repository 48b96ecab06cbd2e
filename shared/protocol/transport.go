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

// Transport connects the coordinator to its participants: it delivers what
// a Step produced (its envelopes; a transport may also keep its checkpoint)
// and yields what the participants send back.
type Transport interface {
	Deliver(ctx context.Context, r Ready) error
	Next(ctx context.Context) (Event, error)
}

// ErrIdle is returned by Transport.Next when nothing can arrive any more.
var ErrIdle = errors.New("transport: nothing left to deliver")

// Serve runs the coordinator over a transport until the federation
// finishes: every event becomes an Input, every Ready's envelopes are
// delivered (a server does the same with its websockets, deadlines and
// checkpoints).
func Serve(ctx context.Context, c *Coordinator, t Transport, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Where the coordinator stands before the first event (restored
	// federations start at a round boundary).
	r := Ready{Round: c.Round(), Phase: c.Phase(), Finished: c.Finished()}
	for !r.Finished {
		if err := t.Deliver(ctx, r); err != nil {
			return fmt.Errorf("serve: deliver: %w", err)
		}
		ev, err := t.Next(ctx)
		if errors.Is(err, ErrIdle) && r.Phase != "" {
			// Nothing more can arrive: the phase's deadline has come.
			log.Warn("phase deadline", "round", r.Round, "phase", r.Phase)
			r = c.Step(Input{Kind: InputDeadline})
			continue
		}
		if err != nil {
			return fmt.Errorf("serve: round %d: %w", r.Round, err)
		}
		in := Input{Kind: InputMessage, From: ev.From, Msg: ev.Msg}
		switch ev.Kind {
		case EventJoin:
			in.Kind = InputJoin
		case EventLeave:
			log.Info("participant left", "client", ev.From, "round", r.Round, "phase", r.Phase)
			in.Kind = InputLeave
		}
		r = c.Step(in)
		for _, e := range r.Envelopes {
			if e.Msg.Kind == KindError {
				log.Warn("rejected participant message", "client", e.To, "round", r.Round, "error", e.Msg.Err)
			}
		}
	}
	return t.Deliver(ctx, r)
}
