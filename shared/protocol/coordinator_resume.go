package protocol

import "fmt"

// A server restored from its checkpoint of a round boundary asks every
// returning participant to resume that boundary (Setup.Resume). When all
// of them do, the federation goes on exactly as it would have without the
// restart: their flags, w's version and the schedule of full inner
// products as they were. One that cannot (a participant made afresh) is
// refreshed, as a returning participant always was.

// resumeState is what the checkpoint kept for resuming.
type resumeState struct {
	round      int
	wVersion   int
	needFullIP bool
	flags      []clientFlags
	answered   map[int]bool // participant -> it resumed
}

// sendResumeSetup sends a returning participant its setup with the
// boundary to resume.
func (c *Coordinator) sendResumeSetup(k int) {
	s := c.setupFor(k)
	s.Resume, s.Round = true, c.resumeAt.round
	c.send(k, Message{Kind: KindSetup, Round: c.round, Setup: s})
}

// resumedIn takes a participant's answer to a resume request.
func (c *Coordinator) resumedIn(k int, m Message) error {
	rs, cs := c.resumeAt, c.clients[k]
	if rs == nil {
		return nil // the federation went on without waiting (a deadline): the participant is refreshed
	}
	if m.Round != rs.round {
		return Errorf(CodeOutOfPhase, "resumed: no resume of round %d asked", m.Round)
	}
	if _, dup := rs.answered[k]; dup {
		return Errorf(CodeOutOfPhase, "resumed: answered twice")
	}
	rs.answered[k] = m.Applied
	if m.Applied && k < len(rs.flags) {
		f := rs.flags[k]
		cs.stale, cs.returned, cs.wHeld = f.Stale, f.Returned, f.WHeld
	}
	if rs.allAnswered(c) {
		all := true
		for _, ok := range rs.answered {
			all = all && ok
		}
		if all {
			c.needFullIP, c.wVersion = rs.needFullIP, rs.wVersion
		}
		c.resumeIfQuorate()
	}
	return nil
}

// allAnswered reports whether every registered participant is back and
// has answered.
func (rs *resumeState) allAnswered(c *Coordinator) bool {
	for k, cs := range c.clients {
		if cs.hello == nil || cs.dropped != "" {
			continue
		}
		if _, ok := rs.answered[k]; !ok || !cs.connected {
			return false
		}
	}
	return true
}

func (rs *resumeState) String() string { return fmt.Sprintf("resume of round %d", rs.round) }
