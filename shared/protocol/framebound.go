package protocol

import (
	"slices"

	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/solve"
)

// What a participant may send bounds what a server reads from it: a frame
// past its participant's bound is no message of the protocol, and a reader
// that stops there keeps an invited participant from making the server
// buffer the operator's largest frame on every connection it holds.

// FrameSize is what one participant frame may carry, for MaxFrameBytes.
type FrameSize struct {
	Sealed int // bytes of the sealed vectors' chunks, each with its index and length
	Floats int // per-feature values, in W, HatW, DW and DWCentered together
	Plain  int // JSON bytes of per-group and per-feature fields, beyond plainMargin
	Keys   int // bytes of the key layer's messages, their lengths included
}

// plainMargin bounds the JSON header of a participant message apart from
// its per-group and per-feature fields: every field's name (400 bytes
// empty), a metrics reply's numbers (18 candidate steps at most: 2 kB) and
// the text of an error a participant quits with.
const plainMargin = 8 << 10

// jsonNumber bounds one number of a JSON header with its comma
// (-1.2345678901234567e-300).
const jsonNumber = 25

// MaxFrameBytes bounds the encoding (EncodeMessage) of a participant
// message carrying at most f.
func MaxFrameBytes(f FrameSize) int {
	// Magic, version, header length; per sealed vector its length and
	// "hv" header; per float vector its length; the key messages' count.
	return 7 + plainMargin + f.Plain + 2*(4+7) + f.Sealed + 4*len(floatFields(&Message{})) + 8*f.Floats + 4 + f.Keys
}

// FrameLimit bounds participant k's frames.
type FrameLimit struct {
	// Bytes bounds every frame k may send from now on (MaxFrameBytes; 0:
	// no bound is known, the scheme's chunks have none).
	Bytes int
	// Final: Bytes holds for the rest of the federation, which has
	// recorded a round. Before, a participant refused at the start makes
	// the federation align again, which may raise it: only a reader that
	// checks a frame once its sender was sent what it answers may hold it
	// to Bytes then, and a frame answering the layout before may still
	// come.
	Final bool
}

// FrameLimit returns what bounds participant k's frames now. Before the
// federation has its layout a registered participant has nothing to send
// but an error; after, the bound is its largest reply of any kind: a
// sealed vector over its chunks of the sample, statistics, Gram or feature
// layout (each chunk as long as the layout's span, which check enforces),
// its per-feature values and, under threshold keys, the key layer's
// messages of a committee member.
func (c *Coordinator) FrameLimit(k int) FrameLimit {
	if k >= 0 && k < len(c.clients) && c.clients[k].hello != nil && c.oprf != nil {
		return FrameLimit{Bytes: c.oprfFrameBytes(k)}
	}
	if k < 0 || k >= len(c.clients) || c.clients[k].hello == nil || !(c.aligned || c.started) {
		return FrameLimit{Bytes: MaxFrameBytes(FrameSize{})}
	}
	if seal.MaxSealedWireSize(c.scheme, 1) == 0 {
		return FrameLimit{}
	}
	cs := c.clients[k]
	cl := c.scheme.ChunkLen()
	chunk := func(n int) int { return 8 + seal.MaxSealedWireSize(c.scheme, n) }
	samples := 0
	for ci := range cs.chunks {
		samples += chunk(c.sampleExtent(ci))
	}
	sealed := samples // one vector over its samples
	if c.stats != nil {
		stats := 0
		for ci := range cs.statChunks {
			stats += chunk(c.statExtent(ci))
		}
		sealed = samples + stats // prep-part: label codes and column statistics
	}
	if c.cfg.Step == StepBlock && c.rule.dual() {
		per := gramChunks(blockPicks(c.cfg), cl)
		grams := 0
		for _, g := range cs.groups {
			for j := range per {
				if n := c.gramExtent(g*per + j); n > 0 {
					grams += chunk(n)
				}
			}
		}
		sealed = max(sealed, grams) // gram-part
		if c.cfg.GroupSteps() && c.cfg.SolveOnce() {
			sealed = max(sealed, 2*samples) // solved: a centered direction in Alpha
		}
	}
	// The feature layout (sealed primal, local-part): two limbs a feature
	// under FedHybrid, whose chunks hold every participant's features.
	slots := c.numFeatures
	if _, ok := c.rule.(fedHybridRule); ok {
		slots *= 2
	}
	features := 0
	for ci := 0; ci*cl < slots; ci++ {
		features += chunk(min(cl, slots-ci*cl))
	}
	size := FrameSize{
		Sealed: max(sealed, features),
		// opened: w; dir-part: DW and DWCentered.
		Floats: max(c.numFeatures, 2*len(cs.features)),
		// norms-part after a preparation: 3 label counts a local group,
		// a scaling map (2 numbers) a feature; metrics: a loss and a
		// conjugate sum a candidate step for each group it reports or
		// checks.
		Plain: jsonNumber * max(3*len(cs.groups)+2*len(cs.features), 2*solve.MaxCandidates*len(cs.groups)),
		Keys:  c.keyFrameBytes(),
	}
	return FrameLimit{Bytes: MaxFrameBytes(size), Final: c.started && len(c.history) > 0}
}

// keyFrameBytes bounds the key layer's messages in one participant frame
// under threshold keys, as if every participant were on the committee
// (another key setup may choose it): a setup share, its Shamir shares for
// the other members, or a switch request's switching shares (the request's
// jobs: up to switchRequestJobs, or more for one chunk with many
// receivers, two a receiver when both its vectors carry the chunk).
func (c *Coordinator) keyFrameBytes() int {
	if c.cfg.Keys != KeysThreshold {
		return 0
	}
	members := c.cfg.KeyCommittee
	if members <= 0 {
		members = DefaultKeyCommittee
	}
	poly := (seal.MaxSealedWireSize(c.scheme, c.scheme.ChunkLen()) - 8) / 2 // a chunk is a header and two polynomials
	head := 256 + 4*members                                                 // a message's header, party ids, nonce, tags, digest
	setup := 4 + 2*poly + head
	dealt := members * (4 + poly + head)
	jobs := switchRequestJobs + 2*len(c.clients)
	switched := jobs * (4 + 2*poly + head)
	return max(setup, dealt, switched)
}

// oprfFrameBytes bounds participant k's frames in the pseudonym phase:
// its pseudonyms (a JSON string each) and its blinded ids or, from a
// member, its dealing or the evaluations of every participant's ids with
// their proofs.
func (c *Coordinator) oprfFrameBytes(k int) int {
	const point, head = 32, 256 // an encoded element; a batch's header, context and proof
	batch := func(rows int) int { return head*((rows+oprfBatch-1)/oprfBatch) + point*rows }
	rows := len(c.clients[k].hello.Heldout)
	keys := batch(rows)
	if slices.Contains(c.oprf.members, k) {
		all := 0
		for _, cs := range c.clients {
			if cs.hello != nil {
				all += batch(len(cs.hello.Heldout))
			}
		}
		n := len(c.oprf.members)
		keys = max(keys, all, n*(head+point*c.oprf.threshold))
	}
	return MaxFrameBytes(FrameSize{Plain: (pseudonymHex + 3) * rows, Keys: keys})
}

// Seats counts the participants the federation knows: registered (a hello
// it holds, connected or away; a participant that left before the start
// is forgotten at the start) and, of those, connected.
func (c *Coordinator) Seats() (registered, connected int) {
	return c.numRegistered(), c.numConnected()
}
