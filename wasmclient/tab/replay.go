package tab

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
)

// Trace is what one participant received during a recorded run: replaying
// it times the participant's own work per round without a server or
// other participants, the same way natively and in the browser (hyfed's
// wasm-vs-native benchmark).
type Trace struct {
	Secret secret.Secret
	Scheme string
	Block  []byte   // the block file (LIBSVM)
	Frames [][]byte // coordinator messages in arrival order, wire-encoded
}

// Encode writes the trace with gob.
func (t *Trace) Encode() ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(t); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	return buf.Bytes(), nil
}

// DecodeTrace reads Encode's output.
func DecodeTrace(b []byte) (*Trace, error) {
	var t Trace
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&t); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	return &t, nil
}

// ReplayResult is what a replay measured.
type ReplayResult struct {
	Rounds int `json:"rounds"`
	// Seconds is the time spent handling the rounds' messages (after the
	// setup), decoding included; SetupSeconds the setup's.
	Seconds      float64 `json:"seconds"`
	SetupSeconds float64 `json:"setup_seconds"`
	Replies      int     `json:"replies"`
	// PlainHash is a SHA-256 over the plaintext headers of every reply
	// (ciphertexts are randomized, their contents are not): equal hashes
	// mean the participant computed the same numbers.
	PlainHash string `json:"plain_hash"`
}

// Replay runs a fresh participant through the trace.
func Replay(t *Trace) (*ReplayResult, error) {
	b, err := partition.ReadBlock(bytes.NewReader(t.Block), "trace block")
	if err != nil {
		return nil, err
	}
	scheme, err := seal.ByName(t.Scheme)
	if err != nil {
		return nil, err
	}
	key, err := seal.NewKeyFor(scheme, t.Secret.Derive(seal.KeyPurpose))
	if err != nil {
		return nil, err
	}
	p, err := protocol.NewParticipant(b, t.Secret, key)
	if err != nil {
		return nil, err
	}
	p.Hello()
	h := sha256.New()
	res := &ReplayResult{}
	start := time.Now()
	setupDone := false
	lastRound := 0
	for i, f := range t.Frames {
		m, err := protocol.DecodeMessage(scheme, f, protocol.DefaultLimits)
		if err != nil {
			return nil, fmt.Errorf("trace frame %d: %w", i, err)
		}
		if !setupDone && m.Round > 0 {
			res.SetupSeconds = time.Since(start).Seconds()
			start, setupDone = time.Now(), true
		}
		if m.Round > lastRound {
			lastRound = m.Round
			res.Rounds++
		}
		replies, err := p.Handle(m)
		if err != nil {
			return nil, fmt.Errorf("trace frame %d (%s, round %d): %w", i, m.Kind, m.Round, err)
		}
		for _, r := range replies {
			enc, err := protocol.EncodeMessage(scheme, r)
			if err != nil {
				return nil, err
			}
			hdr, _, _ := protocol.FrameParts(enc)
			h.Write(enc[:hdr])
			res.Replies++
		}
	}
	res.Seconds = time.Since(start).Seconds()
	res.PlainHash = hex.EncodeToString(h.Sum(nil))
	return res, nil
}

// Record runs an in-process federation over blocks and returns the trace
// of client k.
func Record(blocks []partition.Block, k int, sec secret.Secret, cfg protocol.Config, schemeName string) (*Trace, error) {
	scheme, err := seal.ByName(schemeName)
	if err != nil {
		return nil, err
	}
	coord, err := protocol.NewCoordinator(cfg, scheme)
	if err != nil {
		return nil, err
	}
	mem, err := protocol.NewMemory(len(blocks), func(i int) (*protocol.Participant, error) {
		// A key per participant: keys are not safe for concurrent use.
		key, err := seal.NewKeyFor(scheme, sec.Derive(seal.KeyPurpose))
		if err != nil {
			return nil, err
		}
		return protocol.NewParticipant(&blocks[i], sec, key)
	})
	if err != nil {
		return nil, err
	}
	t := &Trace{Secret: sec, Scheme: schemeName}
	var encErr error
	mem.Observe = func(toServer bool, client int, m *protocol.Message) {
		if toServer || client != k || encErr != nil {
			return
		}
		f, err := protocol.EncodeMessage(scheme, *m)
		if err != nil {
			encErr = err
			return
		}
		t.Frames = append(t.Frames, f)
	}
	if err := protocol.Serve(context.Background(), coord, mem, slog.New(slog.DiscardHandler)); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	if encErr != nil {
		return nil, fmt.Errorf("record: %w", encErr)
	}
	var buf bytes.Buffer
	if err := partition.WriteLIBSVM(&buf, &blocks[k]); err != nil {
		return nil, err
	}
	t.Block = buf.Bytes()
	return t, nil
}
