// Package curious is an honest-but-curious server (docs/design.md section 3): it watches
// exactly the messages the server receives and sends, and runs the two
// reconstruction attacks of the HyFDCA paper, sec. 3 on them.
//
//   - The inner-product attack (ReconstructIP): a client sends x_{k,n}.v for
//     every sample n of its block and a vector v the server chose and sent
//     it (the trial direction u of every round, w on a full recomputation).
//     Each round is one linear equation in the unknown row x_{k,n}; once the
//     vectors span the block's features, least squares gives the row.
//   - The dual attack (ReconstructDual): a client's primal contribution is
//     linear in its dual values, hat_w_k = X_k^T alpha (and the round's share
//     dw_k = X_k^T d for the direction d). Each round is one equation per
//     feature in the unknown column of X_k over the training samples; once
//     the dual vectors span the samples, least squares gives the block.
//
// Both need per-sample values (x.v, alpha, d) that the protocol seals. The
// curious server holds no key, so it tries the only opener it has, the
// plaintext scheme's: in an insecure (plaintext) run that reads everything,
// under BGV it reads nothing and the attacks have no equations at all.
package curious

import (
	"fmt"
	"sort"
	"sync"

	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/seal"
)

// Observer records the server's view of a federation, one client at a time.
// Observe has the signature of experiment.Options.Observe and
// protocol.Memory.Observe; it is safe for concurrent use.
type Observer struct {
	scheme string
	// opener is what a keyless server can try on a sealed vector: the
	// plaintext scheme's key opens plaintext chunks and refuses any other.
	opener seal.Key

	mu      sync.Mutex
	clients map[int]*view
}

// view is what the server saw of one client.
type view struct {
	// From the hello, when the observer was attached before it (an
	// in-process run attaches it after the first hellos: then only the
	// setup names the samples, in the same order).
	pseudonyms []string
	heldout    []bool
	features   []int
	slots      []int // layout slot of each sample, from the last setup sent
	lambdaN    float64

	// The vector of the last trial or full weights message, waiting for
	// the client's inner products.
	vec      []float64
	vecRound int
	ip       []pair // (v, x_{k,n}.v for every sample n)

	// The last dual vector the server sent (refresh: alpha; direction: d),
	// waiting for the client's hat_w or dw.
	dual      []float64
	dualKind  protocol.Kind
	dualRound int
	dualPairs []pair // (alpha or d over the samples, hat_w or dw)

	// changes are the plaintext shares dw_k of the round's direction a
	// client sent (without SealPrimal): X_k^T d, a combination of the few
	// samples the round moved, readable with no dual value at all.
	changes []Change

	unreadable int // sealed vectors the opener refused
}

// Change is one round's plaintext change of a client's primal contribution
// as the server received it: dw_k = sum_n d_n x_{k,n} on the client's
// features (in the order of its hello), over the samples the round moved.
type Change struct {
	Round int
	DW    []float64
}

// pair is one round's observation: a known vector and the client's answer.
type pair struct {
	round int
	in    []float64
	out   []float64
}

// NewObserver returns an observer of a federation run with the named scheme
// ("plaintext" or "bgv"; recorded for reports: the attack tries the
// plaintext opener whatever the scheme, as a server without the key must).
func NewObserver(scheme string) *Observer {
	return &Observer{scheme: scheme, opener: seal.PlainKey{S: seal.Plaintext{}}, clients: map[int]*view{}}
}

// Scheme returns the scheme name the observer was created with.
func (o *Observer) Scheme() string { return o.scheme }

// Frame observes a wire frame (protocol.EncodeMessage) as a server's
// Received and Sent hooks see them: what the server actually received and
// sent. Frames of unregistered connections (client < 0: hellos) and frames
// that do not decode are skipped, as the server itself refuses the latter.
func (o *Observer) Frame(toServer bool, client int, frame []byte) error {
	if client < 0 {
		return nil
	}
	scheme, err := seal.ByName(o.scheme)
	if err != nil {
		return err
	}
	m, err := protocol.DecodeMessage(scheme, frame, protocol.DefaultLimits)
	if err != nil {
		return fmt.Errorf("curious: client %d: %w", client, err)
	}
	o.Observe(toServer, client, &m)
	return nil
}

// Observe records one message between the server and client: toServer says
// the client sent it. Everything is copied or opened now, because the server
// reuses received chunks when it adds them up.
func (o *Observer) Observe(toServer bool, client int, m *protocol.Message) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v := o.clients[client]
	if v == nil {
		v = &view{}
		o.clients[client] = v
	}
	if toServer {
		o.received(v, m)
	} else {
		o.sent(v, m)
	}
}

// sent handles a message from the server to the client.
func (o *Observer) sent(v *view, m *protocol.Message) {
	switch m.Kind {
	case protocol.KindSetup:
		if m.Setup != nil {
			v.slots = append([]int(nil), m.Setup.Slots...)
			v.lambdaN = m.Setup.Config.Lambda * float64(m.Setup.NumTrain)
		}
	case protocol.KindTrial:
		// The client answers with x_{k,n}.u for the round's direction u.
		v.vec, v.vecRound = append([]float64(nil), m.W...), m.Round
	case protocol.KindWeights:
		// Only a full recomputation is answered, with x_{k,n}.w.
		if m.Full {
			v.vec, v.vecRound = append([]float64(nil), m.W...), m.Round
		} else {
			v.vec = nil
		}
	case protocol.KindRefresh, protocol.KindDirection:
		// alpha (refresh) or the round's direction d (direction) on the
		// client's samples; the client answers with X_k^T of it.
		v.dual, v.dualKind, v.dualRound = o.open(v, m.Sealed), m.Kind, m.Round
	}
}

// received handles a message from the client to the server.
func (o *Observer) received(v *view, m *protocol.Message) {
	switch m.Kind {
	case protocol.KindSolved:
		// A group's solver (block step, one solver a group) seals the
		// direction d it found and answers with X_k^T d as the others do.
		v.dual, v.dualKind, v.dualRound = o.open(v, m.Sealed), protocol.KindDirection, m.Round
	case protocol.KindHello:
		v.pseudonyms = append([]string(nil), m.Pseudonyms...)
		v.heldout = append([]bool(nil), m.Heldout...)
		v.features = append([]int(nil), m.Features...)
	case protocol.KindIPPart:
		in := v.vec
		v.vec = nil
		if in == nil || v.vecRound != m.Round {
			return // not an answer to a vector we saw (a stale reply)
		}
		if allZero(in) {
			return // 0 = 0 says nothing (a round without a direction)
		}
		if ips := o.open(v, m.Sealed); ips != nil {
			v.ip = append(v.ip, pair{round: m.Round, in: in, out: ips})
		}
	case protocol.KindPrimal, protocol.KindDirPart:
		in, kind := v.dual, v.dualKind
		v.dual = nil
		want, out := protocol.KindRefresh, m.HatW
		if m.Kind == protocol.KindDirPart {
			want, out = protocol.KindDirection, m.DW
			if len(m.DW) > 0 && !allZero(m.DW) {
				v.changes = append(v.changes, Change{Round: m.Round, DW: append([]float64(nil), m.DW...)})
			}
		}
		if len(out) == 0 && len(m.Sealed) > 0 {
			// Sealed primal (SealPrimal): the client's share divided by
			// lambda N, per feature, which the setup made public.
			if out = o.openFeatures(v, m.Sealed); out == nil {
				return
			}
			for j := range out {
				out[j] *= v.lambdaN
			}
		}
		if in == nil || kind != want || v.dualRound != m.Round || allZero(in) || len(out) == 0 {
			return
		}
		v.dualPairs = append(v.dualPairs, pair{round: m.Round, in: in, out: append([]float64(nil), out...)})
	}
}

// open reads a sealed vector at the client's slots with the plaintext
// opener; nil if it cannot (a BGV ciphertext), counted as unreadable.
func (o *Observer) open(v *view, s seal.Vec) []float64 {
	if v.slots == nil {
		return nil
	}
	vals, err := seal.OpenSlots(o.opener, s, v.slots)
	if err != nil {
		v.unreadable++
		return nil
	}
	return vals
}

// openFeatures reads a sealed vector in the feature layout at the client's
// features; nil if it cannot.
func (o *Observer) openFeatures(v *view, s seal.Vec) []float64 {
	if v.features == nil {
		return nil
	}
	vals, err := seal.OpenSlots(o.opener, s, v.features)
	if err != nil {
		v.unreadable++
		return nil
	}
	return vals
}

func allZero(xs []float64) bool {
	for _, x := range xs {
		if x != 0 {
			return false
		}
	}
	return true
}

// Changes returns the plaintext changes of client k's primal contribution
// the server received, oldest first (none under SealPrimal).
func (o *Observer) Changes(client int) []Change {
	o.mu.Lock()
	defer o.mu.Unlock()
	if v := o.clients[client]; v != nil {
		return append([]Change(nil), v.changes...)
	}
	return nil
}

// Clients returns the clients seen, ascending.
func (o *Observer) Clients() []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]int, 0, len(o.clients))
	for k := range o.clients {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// snapshot returns a copy of client k's view header and its pairs up to
// round upTo (all if upTo <= 0), under the lock.
func (o *Observer) snapshot(client, upTo int, dual bool) (view, []pair, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v := o.clients[client]
	if v == nil || v.slots == nil {
		return view{}, nil, fmt.Errorf("curious: client %d: no setup observed", client)
	}
	if v.pseudonyms != nil && len(v.slots) != len(v.pseudonyms) {
		return view{}, nil, fmt.Errorf("curious: client %d: %d slots for %d samples", client, len(v.slots), len(v.pseudonyms))
	}
	src := v.ip
	if dual {
		src = v.dualPairs
	}
	var ps []pair
	for _, p := range src {
		if upTo <= 0 || p.round <= upTo {
			ps = append(ps, p) // pairs are never changed once recorded
		}
	}
	return *v, ps, nil
}
