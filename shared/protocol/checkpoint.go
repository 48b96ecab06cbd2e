package protocol

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/seal"
)

// checkpointVersion changes whenever the saved state changes shape so that
// this build can no longer read an older one; a field added that may be
// absent (as Best) does not change it.
const checkpointVersion = 2 // 1: the configuration before its zero value meant the defaults (checkpoint_legacy.go)

// roundVersion is the round part's: 2 puts the sealed vectors after the
// gob of the rest (roundState.Alpha and SealedW empty) so that encoding
// makes one buffer of the checkpoint's size, not gob's copies of it (at
// 5,000 participants the dual values are 80 MB, and encoding them through
// gob held 340 MB); 1, which this build still reads, has them in the gob.
const roundVersion = 2

// Checkpoint is the coordinator's state at a round boundary, in two parts:
// Setup (registrations, the sealed squared norms and group statistics) is
// fixed once the federation has started, Round (the sealed dual values, w,
// the primal contributions, the history and the participation draws)
// changes every round. Round names the Setup it belongs to by its digest,
// so a server that writes Setup once and Round after every round can never
// pair a round with the wrong setup. Setup is in the coordinator's first
// checkpoint only (and the first after Restore): later ones carry its
// digest, and a writer keeps the Setup it got until it has written it (the
// coordinator does not keep it: 80 MB of sealed norms at 5,000
// participants).
//
// A Checkpoint from a Ready holds the round part as references to the state
// at the boundary, not yet encoded: Encode encodes it, where the caller
// chooses (the server's checkpoint writer, off the federation's lock). The
// references stay valid: sealed chunks are never changed in place
// (seal.AddInto replaces them), and what the coordinator changes in place
// is copied.
type Checkpoint struct {
	Round int
	Setup []byte // nil after the first checkpoint: SetupDigest names it
	// SetupDigest is the setup part's SHA-256 (the round part names its
	// setup by it): a writer compares it to know whether it has written
	// that setup.
	SetupDigest [32]byte
	RoundData   []byte // filled by Encode

	capture *roundCapture
}

// roundCapture is a round boundary's state before encoding.
type roundCapture struct {
	scheme  seal.Scheme
	rs      roundState // without its sealed parts
	alpha   seal.Vec
	sealedW []seal.Vec
}

// Encode encodes the round part into RoundData, once, and returns cp. Not
// safe for concurrent use: one goroutine encodes a checkpoint.
func (cp *Checkpoint) Encode() *Checkpoint {
	rc := cp.capture
	if rc == nil {
		return cp
	}
	var b bytes.Buffer
	b.Grow(rc.size())
	if err := cp.WriteRound(&b); err != nil {
		panic(fmt.Sprintf("checkpoint: %v", err)) // a bytes.Buffer: cannot fail
	}
	cp.RoundData = b.Bytes()
	return cp
}

// WriteRound writes the round part to w (RoundData's bytes, which Restore
// reads) without building it in memory first: the server's writer streams
// it to disk (the dual values are 80 MB at 5,000 participants). Once: the
// references it writes from are let go. With the round part encoded
// already, it writes RoundData.
func (cp *Checkpoint) WriteRound(w io.Writer) error {
	rc := cp.capture
	if rc == nil {
		_, err := w.Write(cp.RoundData)
		return err
	}
	cp.capture = nil
	// The gob, then the dual values, then the count of sealed shares of w
	// and each (empty for none), every one as uvarint length and bytes.
	if err := gob.NewEncoder(w).Encode(rc.rs); err != nil {
		return fmt.Errorf("checkpoint: gob: %w", err)
	}
	var n [binary.MaxVarintLen64]byte
	put := func(v seal.Vec) error {
		size := 0
		if v != nil {
			size = seal.VecSize(rc.scheme, v)
		}
		if _, err := w.Write(binary.AppendUvarint(n[:0], uint64(size))); err != nil || v == nil {
			return err
		}
		return seal.WriteVec(w, rc.scheme, v)
	}
	if err := put(rc.alpha); err != nil {
		return err
	}
	if _, err := w.Write(binary.AppendUvarint(n[:0], uint64(len(rc.sealedW)))); err != nil {
		return err
	}
	for _, v := range rc.sealedW {
		if err := put(v); err != nil {
			return err
		}
	}
	return nil
}

// size is about the bytes of the round part (the gob's size a guess).
func (rc *roundCapture) size() int {
	size := 1 << 10
	for _, v := range append([]seal.Vec{rc.alpha}, rc.sealedW...) {
		size += binary.MaxVarintLen64
		if v != nil {
			size += seal.VecSize(rc.scheme, v)
		}
	}
	return size
}

// decodeRound reads a round part: the gob, then (version 2) the sealed
// vectors after it.
func decodeRound(round []byte) (roundState, error) {
	var rs roundState
	r := bytes.NewReader(round) // an io.ByteReader: gob reads no further than its value
	if err := gob.NewDecoder(r).Decode(&rs); err != nil {
		return rs, err
	}
	switch rs.Version {
	case 1:
		return rs, nil
	case roundVersion:
	default:
		return rs, fmt.Errorf("version %d, this build reads 1 and %d", rs.Version, roundVersion)
	}
	rest := round[len(round)-r.Len():]
	next := func(what string) ([]byte, error) {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return nil, fmt.Errorf("%s: length %d past the %d bytes left", what, n, len(rest))
		}
		v := rest[k : k+int(n)]
		rest = rest[k+int(n):]
		return v, nil
	}
	var err error
	if rs.Alpha, err = next("dual values"); err != nil {
		return rs, err
	}
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)) {
		return rs, errors.New("the count of sealed shares of w is unreadable")
	}
	rest = rest[k:]
	rs.SealedW = nil
	for i := range n {
		v, err := next(fmt.Sprintf("sealed share of w %d", i))
		if err != nil {
			return rs, err
		}
		if len(v) == 0 {
			v = nil
		}
		rs.SealedW = append(rs.SealedW, v)
	}
	if len(rest) != 0 {
		return rs, fmt.Errorf("%d bytes after the sealed vectors", len(rest))
	}
	return rs, nil
}

type setupState struct {
	Version     int
	Scheme      string
	Config      Config
	Fingerprint string
	NumFeatures int
	Clients     []helloState
	Norms       []byte
	// Keys is the threshold key's setup (absent with the shared key).
	Keys *keyCheckpoint
	// Prep is what a federation with a schema found in its preparation
	// (absent without one); Notices what it told its organizer.
	Prep    *prepCheckpoint
	Notices []string
}

type helloState struct {
	Registered bool
	Pseudonyms []string
	Heldout    []bool
	Features   []int
	Magnitudes []int
	Labelled   bool
	Bias       float64
	Digest     string // OPRF pseudonyms: the hello's digest of its ids
}

// prepCheckpoint is prepState as saved: the sealed sums, the samples left
// out per group, and every column's scaling map.
type prepCheckpoint struct {
	Labels, Stats       []byte
	LeftTrain, LeftHeld []int
	Maps                []schema.Map
	Reported            []bool
}

type roundState struct {
	Version     int
	SetupDigest [32]byte
	Round       int
	Alpha       []byte
	W           []float64
	HatW        [][]float64
	SealedW     [][]byte // SealPrimal, paper rule: each client's sealed share of w
	WStale      bool
	LocalSteps  []int // averaging baselines
	History     []RoundMetrics
	RNG         []byte
	Finished    bool
	// Best is the model handed out (Coordinator.Model); absent in
	// checkpoints from before it was kept.
	Best *Iterate
	// The block rule's measured scale and Gram factors (absent before it).
	Sigma float64
	Kappa []float64
	// What a restart that every participant resumes needs to go on
	// exactly (absent before it: those restarts refresh everyone).
	WVersion   int
	NeedFullIP bool
	Flags      []clientFlags
	// Lost: the sample groups the federation re-formed without;
	// Disputed those of two holders that disagreed, still to take out.
	Lost, Disputed []int
}

// clientFlags is a participant's standing at a round boundary.
type clientFlags struct {
	Stale, Returned bool
	WHeld           int
	// Its strikes, refused messages and why it was dropped
	// (coordinator_strikes.go): they outlive a restart.
	Strikes, Rejected int
	Dropped           string
	Disagree          []int // the holders it disagreed with
}

// EnableCheckpoints makes the coordinator capture its state at every round
// boundary from now on; the next Ready carries each one.
func (c *Coordinator) EnableCheckpoints() { c.checkpoints = true }

func (c *Coordinator) checkpoint() *Checkpoint {
	var setup []byte
	if !c.setupHanded {
		if c.setupBlob == nil { // else restored: hand on the same bytes
			c.setupBlob = c.encodeSetup()
			c.setupDigest = sha256.Sum256(c.setupBlob)
		}
		setup, c.setupBlob, c.setupHanded = c.setupBlob, nil, true
	}
	// Copies of what changes in place; references to what never does (the
	// history's entries, the best iterate, sealed chunks).
	n := len(c.history)
	rc := &roundCapture{scheme: c.scheme, alpha: make(seal.Vec, len(c.alpha))}
	rc.rs = roundState{Version: roundVersion, SetupDigest: c.setupDigest, Round: c.round, W: slices.Clone(c.w),
		History: c.history[:n:n], Finished: c.done(), Best: c.best, Sigma: c.sigma, Kappa: slices.Clone(c.kappa),
		WStale: c.wStale, WVersion: c.wVersion, NeedFullIP: c.needFullIP, Lost: c.lostGroups(), Disputed: sortedSet(c.disputed)}
	for ci, ch := range c.alpha {
		rc.alpha[ci] = ch
	}
	for _, cs := range c.clients {
		rc.rs.Flags = append(rc.rs.Flags, clientFlags{Stale: cs.stale, Returned: cs.returned, WHeld: cs.wHeld,
			Strikes: cs.strikes, Rejected: cs.rejected, Dropped: cs.dropped, Disagree: sortedSet(cs.disagree)})
		rc.rs.HatW = append(rc.rs.HatW, slices.Clone(cs.hatW))
		rc.sealedW = append(rc.sealedW, cs.sealedW)
		rc.rs.LocalSteps = append(rc.rs.LocalSteps, cs.localSteps)
	}
	var err error
	if rc.rs.RNG, err = c.pcg.MarshalBinary(); err != nil {
		panic(fmt.Sprintf("checkpoint: draws: %v", err))
	}
	return &Checkpoint{Round: c.round, Setup: setup, SetupDigest: c.setupDigest, capture: rc}
}

// encodeSetup encodes the setup part.
func (c *Coordinator) encodeSetup() []byte {
	st := setupState{Version: checkpointVersion, Scheme: c.scheme.Name(), Config: c.cfg,
		Fingerprint: c.fingerprint, NumFeatures: c.numFeatures, Keys: c.keyCheckpoint(), Notices: c.notices}
	for _, cs := range c.clients {
		h := helloState{}
		if cs.hello != nil {
			h = helloState{Registered: true, Pseudonyms: cs.hello.Pseudonyms, Heldout: cs.hello.Heldout, Features: cs.hello.Features,
				Magnitudes: cs.hello.Magnitudes, Labelled: cs.hello.Labelled, Bias: cs.hello.Bias, Digest: cs.hello.Digest}
		}
		st.Clients = append(st.Clients, h)
	}
	var err error
	if ps := c.prep; ps != nil {
		pc := &prepCheckpoint{LeftTrain: ps.leftTrain, LeftHeld: ps.leftHeld, Maps: ps.maps, Reported: ps.ok}
		if pc.Labels, err = seal.MarshalVec(c.scheme, ps.labels); err != nil {
			panic(fmt.Sprintf("checkpoint: label sums: %v", err))
		}
		if pc.Stats, err = seal.MarshalVec(c.scheme, ps.stats); err != nil {
			panic(fmt.Sprintf("checkpoint: column statistics: %v", err))
		}
		st.Prep = pc
	}
	if st.Norms, err = seal.MarshalVec(c.scheme, c.norms); err != nil {
		panic(fmt.Sprintf("checkpoint: norms: %v", err)) // our own ciphertexts: cannot fail
	}
	return encodeGob(st)
}

func encodeGob(v any) []byte {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		panic(fmt.Sprintf("checkpoint: gob: %v", err)) // plain structs: cannot fail
	}
	return b.Bytes()
}

// Restore rebuilds a coordinator from a checkpoint. It comes back held at
// the saved round boundary with every participant disconnected: each
// returns with its session (set up again, refreshed from the sealed dual
// values), and an InputResume starts the next round.
func Restore(scheme seal.Scheme, setup, round []byte) (*Coordinator, error) {
	st, err := decodeSetup(setup)
	if err != nil {
		return nil, fmt.Errorf("restore: setup: %w", err)
	}
	if st.Version != checkpointVersion {
		return nil, fmt.Errorf("restore: setup version %d, this build reads %d", st.Version, checkpointVersion)
	}
	if st.Scheme != scheme.Name() {
		return nil, fmt.Errorf("restore: saved with scheme %s, asked to restore with %s", st.Scheme, scheme.Name())
	}
	rs, err := decodeRound(round)
	if err != nil {
		return nil, fmt.Errorf("restore: round: %w", err)
	}
	if rs.SetupDigest != sha256.Sum256(setup) {
		return nil, fmt.Errorf("restore: the round state belongs to another setup")
	}
	c, err := NewCoordinator(st.Config, scheme)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	c.fingerprint, c.numFeatures = st.Fingerprint, st.NumFeatures
	for _, h := range st.Clients {
		cs := &clientState{}
		if h.Registered {
			cs.hello = &Message{Kind: KindHello, Pseudonyms: h.Pseudonyms, Heldout: h.Heldout, Features: h.Features,
				NumFeatures: st.NumFeatures, Fingerprint: st.Fingerprint, Magnitudes: h.Magnitudes, Labelled: h.Labelled, Bias: h.Bias, Digest: h.Digest}
		}
		c.clients = append(c.clients, cs)
	}
	if err := c.align(); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if st.Config.Keys == KeysThreshold {
		if err := c.restoreKeys(st.Keys); err != nil {
			return nil, err
		}
	}
	c.notices = st.Notices
	if err := c.restorePrep(st.Prep); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	maxChunks := c.numSlots/scheme.ChunkLen() + 1
	if c.norms, err = seal.UnmarshalVec(scheme, st.Norms, maxChunks); err != nil {
		return nil, fmt.Errorf("restore: norms: %w", err)
	}
	if c.alpha, err = seal.UnmarshalVec(scheme, rs.Alpha, maxChunks); err != nil {
		return nil, fmt.Errorf("restore: dual values: %w", err)
	}
	if err := c.restoreLens(c.norms, len(c.chunkGroup), c.sampleExtent); err != nil {
		return nil, fmt.Errorf("restore: norms: %w", err)
	}
	if err := c.restoreLens(c.alpha, len(c.chunkGroup), c.sampleExtent); err != nil {
		return nil, fmt.Errorf("restore: dual values: %w", err)
	}
	if len(rs.W) != c.numFeatures || len(rs.HatW) != len(c.clients) {
		return nil, fmt.Errorf("restore: saved state does not match the registrations")
	}
	c.w = rs.W
	if len(rs.Kappa) != 0 && len(rs.Kappa) != len(c.groups) || !(rs.Sigma >= 0) {
		return nil, fmt.Errorf("restore: %d Gram factors for %d groups, scale %v", len(rs.Kappa), len(c.groups), rs.Sigma)
	}
	for _, k := range rs.Kappa {
		if !(k >= 1) || math.IsInf(k, 0) {
			return nil, fmt.Errorf("restore: Gram factor %v", k)
		}
	}
	c.sigma, c.kappa = rs.Sigma, rs.Kappa
	if b := rs.Best; b != nil {
		if len(b.W) != c.numFeatures || b.Round < 0 || b.Round > rs.Round {
			return nil, fmt.Errorf("restore: the best iterate (round %d, %d weights) does not fit round %d's %d features", b.Round, len(b.W), rs.Round, c.numFeatures)
		}
		c.best = b
	}
	for k, cs := range c.clients {
		if cs.hello == nil {
			continue
		}
		cs.stale, cs.returned = true, true
		if k < len(rs.Flags) {
			f := rs.Flags[k]
			cs.strikes, cs.rejected, cs.dropped = f.Strikes, f.Rejected, f.Dropped
			for _, o := range f.Disagree {
				if cs.disagree == nil {
					cs.disagree = map[int]bool{}
				}
				cs.disagree[o] = true
			}
		}
		if k < len(rs.LocalSteps) {
			cs.localSteps = rs.LocalSteps[k]
		}
		if !c.rule.dual() {
			continue // no primal contributions: the participants hold their models
		}
		if c.cfg.SealPrimal {
			if k < len(rs.SealedW) && len(rs.SealedW[k]) > 0 {
				if cs.sealedW, err = seal.UnmarshalVec(scheme, rs.SealedW[k], c.numFeatures/scheme.ChunkLen()+1); err != nil {
					return nil, fmt.Errorf("restore: client %d: sealed share of w: %w", k, err)
				}
				chunks := (c.numFeatures + scheme.ChunkLen() - 1) / scheme.ChunkLen()
				if err := c.restoreLens(cs.sealedW, chunks, c.featureExtent); err != nil {
					return nil, fmt.Errorf("restore: client %d: sealed share of w: %w", k, err)
				}
			}
			continue
		}
		if len(rs.HatW[k]) != len(cs.features) {
			return nil, fmt.Errorf("restore: client %d: %d primal values for %d features", k, len(rs.HatW[k]), len(cs.features))
		}
		cs.hatW = rs.HatW[k]
	}
	if err := c.pcg.UnmarshalBinary(rs.RNG); err != nil {
		return nil, fmt.Errorf("restore: draws: %w", err)
	}
	c.rng = rand.New(c.pcg)
	for _, gi := range rs.Lost {
		if gi < 0 || gi >= len(c.groups) {
			return nil, fmt.Errorf("restore: lost group %d of %d", gi, len(c.groups))
		}
	}
	c.applyLost(rs.Lost)
	for _, gi := range rs.Disputed {
		if gi < 0 || gi >= len(c.groups) {
			return nil, fmt.Errorf("restore: disputed group %d of %d", gi, len(c.groups))
		}
		if c.disputed == nil {
			c.disputed = map[int]bool{}
		}
		c.disputed[gi] = true
	}
	c.round, c.history, c.started = rs.Round, rs.History, true
	c.dualFromHistory()
	c.reported = len(c.history) // a Ready before the restart carried them
	c.cur = RoundMetrics{Seconds: map[string]float64{}}
	c.needFullIP, c.wStale = true, rs.WStale
	if len(rs.Flags) == len(c.clients) && c.rule.dual() && c.cfg.Algo == AlgoHyFDCA && c.cfg.Keys != KeysThreshold {
		// Participants that kept the boundary resume it (coordinator_resume.go).
		c.resumeAt = &resumeState{round: rs.Round, wVersion: rs.WVersion, needFullIP: rs.NeedFullIP, flags: rs.Flags, answered: map[int]bool{}}
	}
	c.setupBlob, c.setupDigest = setup, rs.SetupDigest
	if rs.Finished {
		c.finished = true
	} else {
		c.waiting = true
	}
	return c, nil
}

// restorePrep takes the preparation's results back (a federation with a
// schema).
func (c *Coordinator) restorePrep(pc *prepCheckpoint) error {
	if (pc == nil) != (c.cfg.Schema == nil) {
		return fmt.Errorf("the preparation's state does not fit the configuration")
	}
	if pc == nil {
		return nil
	}
	ng := len(c.groups)
	if len(pc.LeftTrain) != ng || len(pc.LeftHeld) != ng || len(pc.Maps) != c.numFeatures || len(pc.Reported) != c.numFeatures {
		return fmt.Errorf("preparation: %d and %d counts for %d groups, %d maps for %d features", len(pc.LeftTrain), len(pc.LeftHeld), ng, len(pc.Maps), c.numFeatures)
	}
	ps := &prepState{leftTrain: pc.LeftTrain, leftHeld: pc.LeftHeld, maps: pc.Maps, ok: pc.Reported}
	var err error
	if ps.labels, err = seal.UnmarshalVec(c.scheme, pc.Labels, c.numSlots/c.scheme.ChunkLen()+1); err != nil {
		return fmt.Errorf("preparation: label sums: %w", err)
	}
	if err := c.restoreLens(ps.labels, len(c.chunkGroup), c.sampleExtent); err != nil {
		return fmt.Errorf("preparation: label sums: %w", err)
	}
	if ps.stats, err = seal.UnmarshalVec(c.scheme, pc.Stats, len(c.stats.chunkGroup)+1); err != nil {
		return fmt.Errorf("preparation: column statistics: %w", err)
	}
	if err := c.restoreLens(ps.stats, len(c.stats.chunkGroup), c.statExtent); err != nil {
		return fmt.Errorf("preparation: column statistics: %w", err)
	}
	c.prep = ps
	return c.applyLeftOut()
}

// restoreLens checks that the chunks of v, read from a checkpoint, lie in
// the layout's first chunks and seal their extent, cutting to it the
// chunks of a checkpoint written before chunks sealed only their span
// (they hold every slot's value).
func (c *Coordinator) restoreLens(v seal.Vec, chunks int, extent func(ci int) int) error {
	spans := seal.Spans(c.scheme)
	for ci, ch := range v {
		if ci >= chunks {
			return fmt.Errorf("chunk %d beyond the layout's %d", ci, chunks)
		}
		want := c.scheme.ChunkLen()
		if spans {
			want = extent(ci)
			t, err := seal.Trim(c.scheme, ch, want)
			if err != nil {
				return fmt.Errorf("chunk %d: %w", ci, err)
			}
			v[ci] = t
		}
		if n := seal.Len(c.scheme, v[ci]); n != want {
			return fmt.Errorf("chunk %d seals %d values, its layout %d", ci, n, want)
		}
	}
	return nil
}
