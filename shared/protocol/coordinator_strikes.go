package protocol

import (
	"errors"
	"fmt"
)

// A participant that sends a value it cannot have computed is dropped at
// once; one whose replies keep failing (malformed, late, out of phase) is
// dropped once it has used up its strikes. Either way it is named to the
// organizer, never let back in (the count survives reconnections and,
// through the checkpoint, restarts), and the federation goes on without
// it as it does without any missing holder.

// maxStrikes is how many refused or missed replies to its phase a
// participant may have in a federation; maxRejected how many messages
// refused outright (out of phase, duplicates).
const (
	maxStrikes  = 3
	maxRejected = 16
)

// ImpossibleError is a value no honest participant sends: the federation
// drops its sender.
type ImpossibleError struct{ Msg string }

func (e *ImpossibleError) Error() string { return e.Msg }

// badReply is a participant's reply to the phase waiting for it that
// check refused.
type badReply struct{ err error }

func (e *badReply) Error() string { return e.err.Error() }
func (e *badReply) Unwrap() error { return e.err }

// impossible returns an ImpossibleError.
func impossible(format string, args ...any) error {
	return &ImpossibleError{Msg: fmt.Sprintf(format, args...)}
}

// refused handles an error about participant k's message m: an
// impossible value drops it, a reply to the phase waiting for it that
// check refused takes it out of the phase at once (it reconnects and is
// refreshed) and counts a strike, anything else is rejected and counted.
func (c *Coordinator) refused(k int, m Message, err error) {
	var ie *ImpossibleError
	br := (*badReply)(nil)
	reply := errors.As(err, &br)
	if reply {
		err = br.err // the reason, as the participant is told it
	}
	registered := k >= 0 && k < len(c.clients) && c.clients[k].hello != nil && c.clients[k].connected
	switch {
	case !registered || !c.started:
		c.reject(k, err)
	case errors.As(err, &ie):
		c.drop(k, fmt.Sprintf("round %d: %s %s", c.round, m.Kind, ie.Msg))
		c.afterDrop(k)
	case reply && c.phase != nil && c.phase.waiting[k]:
		c.clients[k].strikes++
		if c.clients[k].strikes >= maxStrikes {
			c.drop(k, fmt.Sprintf("%d replies refused or missed; the last, in round %d: %v", c.clients[k].strikes, c.round, err))
		} else {
			c.deadlineDrop(c.phase, k, fmt.Sprintf("your %s reply was refused (%v)", m.Kind, err))
		}
		c.afterDrop(k)
	default:
		c.reject(k, err)
		c.clients[k].rejected++
		if c.clients[k].rejected >= maxRejected {
			c.drop(k, fmt.Sprintf("%d messages refused; the last, in round %d: %v", c.clients[k].rejected, c.round, err))
			c.afterDrop(k)
		}
	}
}

// afterDrop lets the key committee and the phase go on without k.
func (c *Coordinator) afterDrop(k int) {
	if c.finished || !c.started {
		return // refused before the first round: the federation starts again
	}
	c.keysGone(k)
	if !c.finished {
		c.maybeFinishPhase()
	}
}

// missed counts a strike against participant k for letting phase p's
// deadline pass (from the first round on: the setup waits for everyone)
// and reports whether that dropped it.
func (c *Coordinator) missed(p *phaseState, k int) bool {
	if len(c.history) == 0 {
		return false
	}
	cs := c.clients[k]
	cs.strikes++
	if cs.strikes < maxStrikes {
		return false
	}
	c.drop(k, fmt.Sprintf("%d replies refused or missed; the last: no %s reply before the deadline of round %d", cs.strikes, p.reply, c.round))
	return true
}

// misbehaved counts a strike against participant k, whose connection the
// server closed for what it sent (why), and lets the round go on without
// it; at maxStrikes it is dropped.
func (c *Coordinator) misbehaved(k int, why string) {
	if k < 0 || k >= len(c.clients) || c.clients[k].hello == nil {
		return
	}
	cs := c.clients[k]
	cs.strikes++
	if cs.strikes >= maxStrikes {
		c.drop(k, fmt.Sprintf("%d strikes; the last: %s", cs.strikes, why))
		c.afterDrop(k)
		return
	}
	c.disconnect(k)
}

// drop takes participant k out of the federation for good, with why for
// the organizer and for k, and out of the phase waiting for it (the
// caller runs keysGone and maybeFinishPhase). Before the first round it
// is refused instead: the federation forgets its registration and starts
// without it.
func (c *Coordinator) drop(k int, why string) {
	cs := c.clients[k]
	if len(c.history) == 0 {
		c.refuse(&refusal{[]int{k}, fmt.Errorf("%s was refused: %s", c.name(k), why)})
		cs.dropped = why // and stays out
		return
	}
	cs.dropped = why
	c.note(fmt.Sprintf("%s was dropped: %s. The samples of its groups can no longer be scored without its features: "+
		"the rounds are partial until the federation re-forms without them, at the first round boundary where their other holders are all connected", c.name(k), why))
	if cs.connected {
		c.send(k, Message{Kind: KindError, Round: c.round, Code: CodeDropped, Close: true,
			Err: "the federation dropped this participant: " + why})
	}
	cs.connected, cs.ready = false, false
	if p := c.phase; p != nil && p.waiting[k] {
		delete(p.waiting, k)
		p.dropped = append(p.dropped, k)
	}
}
