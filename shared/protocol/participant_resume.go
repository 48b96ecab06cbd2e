package protocol

import (
	"slices"
)

// A participant keeps its state at the last few round boundaries, so that
// a server that restarts from its checkpoint of one of them can have it go
// on exactly as if nothing had happened: no refresh, no inner products
// computed afresh, the same numbers to the last bit.

// boundary is the state a participant carries from one round to the next.
type boundary struct {
	round            int
	alpha, ip, ipErr []float64
	w, hw            []float64
}

// A participant keeps the last keptBoundaries boundaries, and every one
// since the latest the server says is on disk (Message.Saved: a slow disk
// may leave the checkpoints behind the rounds), at most maxBoundaries.
const (
	keptBoundaries = 3
	maxBoundaries  = 16
)

// markRound keeps the state as of the last round before a message of a
// later round changes it.
func (p *Participant) markRound(m Message) {
	p.saved = max(p.saved, m.Saved)
	if p.setup == nil || !p.ready || m.Round <= p.lastRound {
		return
	}
	p.keepBoundary()
	p.lastRound = m.Round
}

// keepBoundary keeps the participant's state as the boundary of its last
// round (once).
func (p *Participant) keepBoundary() {
	if p.alpha == nil || p.hybrid != nil || slices.ContainsFunc(p.boundaries, func(b boundary) bool { return b.round == p.lastRound }) {
		return // nothing set up, or FedHybrid's state, which it does not keep
	}
	b := boundary{round: p.lastRound, alpha: slices.Clone(p.alpha), ip: slices.Clone(p.ip), ipErr: slices.Clone(p.ipErr),
		w: slices.Clone(p.w), hw: slices.Clone(p.hw)}
	p.boundaries = append(p.boundaries, b)
	for len(p.boundaries) > maxBoundaries || len(p.boundaries) > keptBoundaries && (p.saved == 0 || p.boundaries[0].round < p.saved) {
		p.boundaries = p.boundaries[1:]
	}
}

// TakeBoundaries gives a participant made afresh for a new connection the
// boundaries the previous one kept, and its state as the last of them: a
// restarted server may resume either.
func (p *Participant) TakeBoundaries(prev *Participant) {
	if prev == nil {
		return
	}
	prev.keepBoundary()
	p.boundaries, p.saved = slices.Clone(prev.boundaries), prev.saved
}

// resumeBoundary restores the boundary of round r after a setup, and
// says whether it could (the coordinator otherwise refreshes it).
func (p *Participant) resumeBoundary(r int) bool {
	i := slices.IndexFunc(p.boundaries, func(b boundary) bool { return b.round == r })
	n := p.block.N()
	if i < 0 {
		return false
	}
	b := p.boundaries[i]
	if len(b.alpha) != n || len(b.ip) != n || len(b.w) != len(p.block.Features) {
		return false
	}
	p.alpha, p.ip, p.ipErr = slices.Clone(b.alpha), slices.Clone(b.ip), slices.Clone(b.ipErr)
	p.w, p.hw = slices.Clone(b.w), slices.Clone(b.hw)
	p.lastRound = r
	p.boundaries = p.boundaries[:i+1] // what came after r will be redone
	return true
}
