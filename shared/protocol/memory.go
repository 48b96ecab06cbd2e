package protocol

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
)

// Memory is the in-process transport: the participants live in the same
// process and are called directly. Each batch of envelopes is handled by the
// recipients in parallel, and their replies queue in recipient order, so a
// run is deterministic for a seed.
type Memory struct {
	parts     []*Participant
	makePart  func(k int) (*Participant, error)
	connected []bool
	queue     []Event
	// Observe, if set, sees every message: toServer tells the direction.
	Observe func(toServer bool, client int, m *Message)
	// OnError, if set, sees participant errors (by default they fail the run).
	OnError func(client int, err error)
	// Workers bounds the parallel handlers; 0 means GOMAXPROCS.
	Workers int
	// Hook, if set, runs before every event is taken: scripted scenarios
	// drop and rejoin clients from it.
	Hook func()
	// Lose, if set, silently loses the messages to a client for which it
	// returns true (a stalled connection; the coordinator's deadline ends it).
	Lose func(to int, m *Message) bool
	// OnReady, if set, sees every Ready delivered (its checkpoint, its
	// rounds) before its envelopes go out.
	OnReady func(r Ready)
}

// NewMemory creates participants with makePart (called again for a client
// that rejoins, as a reloaded page would start afresh) and queues their joins.
func NewMemory(n int, makePart func(k int) (*Participant, error)) (*Memory, error) {
	m := &Memory{makePart: makePart, parts: make([]*Participant, n), connected: make([]bool, n)}
	for k := 0; k < n; k++ {
		if err := m.Join(k); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Participant returns client k's state machine.
func (m *Memory) Participant(k int) *Participant { return m.parts[k] }

// Join (re)connects client k with a fresh participant.
func (m *Memory) Join(k int) error {
	if m.connected[k] {
		return fmt.Errorf("memory: client %d is connected", k)
	}
	p, err := m.makePart(k)
	if err != nil {
		return fmt.Errorf("memory: client %d: %w", k, err)
	}
	m.parts[k], m.connected[k] = p, true
	h := p.Hello()
	if m.Observe != nil {
		m.Observe(true, k, &h)
	}
	m.queue = append(m.queue, Event{Kind: EventJoin, From: k, Msg: h})
	return nil
}

// Drop disconnects client k: messages to it are lost from now on.
func (m *Memory) Drop(k int) {
	if !m.connected[k] {
		return
	}
	m.connected[k] = false
	m.queue = append(m.queue, Event{Kind: EventLeave, From: k})
}

// Connected reports whether client k is connected.
func (m *Memory) Connected(k int) bool { return m.connected[k] }

// Next implements Transport.
func (m *Memory) Next(ctx context.Context) (Event, error) {
	if err := ctx.Err(); err != nil {
		return Event{}, err
	}
	if m.Hook != nil {
		m.Hook()
	}
	if len(m.queue) == 0 {
		return Event{}, ErrIdle
	}
	ev := m.queue[0]
	m.queue = m.queue[1:]
	return ev, nil
}

// Deliver implements Transport.
func (m *Memory) Deliver(ctx context.Context, r Ready) error {
	if m.OnReady != nil {
		m.OnReady(r)
	}
	byClient := map[int][]Message{}
	for _, e := range r.Envelopes {
		if e.To < 0 || e.To >= len(m.parts) || !m.connected[e.To] {
			continue
		}
		if m.Observe != nil {
			m.Observe(false, e.To, &e.Msg)
		}
		if e.Msg.Close {
			m.connected[e.To] = false // the coordinator already counts it gone
			continue
		}
		if m.Lose != nil && m.Lose(e.To, &e.Msg) {
			continue
		}
		byClient[e.To] = append(byClient[e.To], e.Msg)
	}
	clients := make([]int, 0, len(byClient))
	for k := range byClient {
		clients = append(clients, k)
	}
	sort.Ints(clients)
	replies := make([][]Message, len(clients))
	errs := make([]error, len(clients))
	workers := m.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for i, k := range clients {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			for _, msg := range byClient[k] {
				r, err := m.parts[k].Handle(msg)
				if err != nil {
					errs[i] = err
					return
				}
				replies[i] = append(replies[i], r...)
			}
		}()
	}
	wg.Wait()
	for i, k := range clients {
		if errs[i] != nil {
			if m.OnError == nil {
				return fmt.Errorf("client %d: %w", k, errs[i])
			}
			m.OnError(k, errs[i])
		}
		for j := range replies[i] {
			if m.Observe != nil {
				m.Observe(true, k, &replies[i][j])
			}
			m.queue = append(m.queue, Event{Kind: EventMessage, From: k, Msg: replies[i][j]})
		}
	}
	return ctx.Err()
}
