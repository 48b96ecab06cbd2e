package tab

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"hash"
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
	// KeyState is the participant's threshold key state at the end of the
	// recorded run (threshold keys only). A replay cannot make the
	// recorded party again (its secrets are random), so it restores this
	// one as a member back with its share: it is asked into the key as
	// returning (rejoin) and skips the Shamir shares dealt to it. The
	// rounds, which a replay times, are the recorded ones: it seals under
	// the collective key, switches the sums it is asked to and opens what
	// was switched to its own key.
	KeyState []byte
	// PlainHash is ReplayResult.PlainHash of what the participant sent in
	// the recorded run: a faithful replay computes it again.
	PlainHash string
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
	// SwitchShares counts the switch requests it answered in the rounds
	// (a threshold key's committee member switches sums for the others).
	SwitchShares int `json:"switch_shares"`
	// PlainHash is a SHA-256 over the plaintext parts (protocol.FramePlain)
	// of every reply of the rounds (ciphertexts are randomized, their
	// contents are not; the setup's replies are left out: a threshold key's
	// setup is replayed as a return): equal hashes mean the participant
	// computed the same numbers.
	PlainHash string `json:"plain_hash"`
}

// hashReply adds a reply's plaintext parts to the hash of the rounds.
func hashReply(h hash.Hash, s seal.Scheme, r protocol.Message) error {
	if r.Round == 0 {
		return nil
	}
	enc, err := protocol.EncodeMessage(s, r)
	if err != nil {
		return err
	}
	plain, _ := protocol.FramePlain(enc)
	h.Write(plain)
	return nil
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
	var key seal.Key // with threshold keys the key setup gives it
	if t.KeyState == nil {
		if key, err = seal.NewKeyFor(scheme, t.Secret.Derive(seal.KeyPurpose)); err != nil {
			return nil, err
		}
	}
	p, err := protocol.NewParticipant(b, t.Secret, key)
	if err != nil {
		return nil, err
	}
	if t.KeyState != nil {
		p.RestoreKeyState(t.KeyState)
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
		if t.KeyState != nil {
			switch m.Kind {
			case protocol.KindKeySetup:
				ks := *m.KeySetup
				ks.Rejoin = true
				m.KeySetup = &ks
			case protocol.KindKeyShares:
				continue // a restored member has its share
			}
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
			if err := hashReply(h, scheme, r); err != nil {
				return nil, err
			}
			res.Replies++
			if r.Kind == protocol.KindSwitchShares && r.Round > 0 {
				res.SwitchShares++
			}
		}
	}
	res.Seconds = time.Since(start).Seconds()
	res.PlainHash = hex.EncodeToString(h.Sum(nil))
	return res, nil
}

// Record runs an in-process federation over blocks and returns the trace
// of client k. With cfg.Keys threshold the scheme must be bgv-threshold.
func Record(blocks []partition.Block, k int, sec secret.Secret, cfg protocol.Config, schemeName string) (*Trace, error) {
	scheme, err := seal.ByName(schemeName)
	if err != nil {
		return nil, err
	}
	coord, err := protocol.NewCoordinator(cfg, scheme)
	if err != nil {
		return nil, err
	}
	threshold := cfg.Keys == protocol.KeysThreshold
	mem, err := protocol.NewMemory(len(blocks), func(i int) (*protocol.Participant, error) {
		// A key per participant: keys are not safe for concurrent use.
		// With threshold keys the key setup gives each its key.
		var key seal.Key
		if !threshold {
			if key, err = seal.NewKeyFor(scheme, sec.Derive(seal.KeyPurpose)); err != nil {
				return nil, err
			}
		}
		return protocol.NewParticipant(&blocks[i], sec, key)
	})
	if err != nil {
		return nil, err
	}
	t := &Trace{Secret: sec, Scheme: schemeName}
	var encErr error
	sent := sha256.New()
	mem.Observe = func(toServer bool, client int, m *protocol.Message) {
		if client != k || encErr != nil {
			return
		}
		if toServer {
			encErr = hashReply(sent, scheme, *m)
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
	t.PlainHash = hex.EncodeToString(sent.Sum(nil))
	if threshold {
		if t.KeyState, err = mem.Participant(k).KeyState(); err != nil {
			return nil, fmt.Errorf("record: %w", err)
		}
	}
	var buf bytes.Buffer
	if err := partition.WriteLIBSVM(&buf, &blocks[k]); err != nil {
		return nil, err
	}
	t.Block = buf.Bytes()
	return t, nil
}
