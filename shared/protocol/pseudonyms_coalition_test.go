package protocol

import (
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	cgroup "github.com/cloudflare/circl/group"
	circloprf "github.com/cloudflare/circl/oprf"

	"github.com/hyfed/hyfed/shared/oprf"
)

// recorded is everything a run of the pseudonym phase put on the wire
// (what the server relayed) and the key shares the members made.
type recorded struct {
	fed     *fed
	batches map[int]*oprf.EvaluationRequest    // blinded ids by participant
	evals   map[int][]*oprf.EvaluationResponse // their evaluations by participant, one a member
	shares  map[int]*oprf.KeyShare             // by member participant
}

func recordOPRF(t *testing.T, cfg Config) *recorded {
	t.Helper()
	d := testData(120, 6, 8)
	cfg.Pseudonyms = PseudonymsOPRF
	rec := &recorded{fed: newFed(t, gridBlocks(d, 2, 2), cfg), batches: map[int]*oprf.EvaluationRequest{},
		evals: map[int][]*oprf.EvaluationResponse{}, shares: map[int]*oprf.KeyShare{}}
	var from []int
	rec.fed.mem.Observe = func(toServer bool, k int, m *Message) {
		switch {
		case toServer && m.Kind == KindOPRFBlinded:
			r, err := oprf.DecodeEvaluationRequest(m.Keys[0], 1000)
			if err != nil {
				t.Fatal(err)
			}
			rec.batches[k] = r
		case !toServer && m.Kind == KindOPRFEval:
			from = m.OPRF.From
		case toServer && m.Kind == KindOPRFEvaluated:
			for i, b := range m.Keys {
				r, err := oprf.DecodeEvaluationResponse(b, 1000)
				if err != nil {
					t.Fatal(err)
				}
				rec.evals[from[i]] = append(rec.evals[from[i]], r)
			}
			rec.shares[k] = rec.fed.mem.parts[k].oprf.evaluator.Share()
		}
	}
	rec.fed.run(t)
	return rec
}

// keyFrom interpolates the key shares at zero (Lagrange): the key itself
// from t shares, some other scalar from fewer.
func keyFrom(shares ...*oprf.KeyShare) cgroup.Scalar {
	var idx []int
	for _, s := range shares {
		idx = append(idx, s.Index)
	}
	k := cgroup.Ristretto255.NewScalar()
	for _, s := range shares {
		k.Add(k, cgroup.Ristretto255.NewScalar().Mul(s.Secret, lagrange(s.Index, idx)))
	}
	return k
}

// lagrange is member i's Lagrange coefficient at zero among members idx.
func lagrange(i int, idx []int) cgroup.Scalar {
	g := cgroup.Ristretto255
	num, den := g.NewScalar().SetUint64(1), g.NewScalar().SetUint64(1)
	for _, j := range idx {
		if j == i {
			continue
		}
		xi, xj := g.NewScalar().SetUint64(uint64(i)), g.NewScalar().SetUint64(uint64(j))
		num.Mul(num, xj)
		den.Mul(den, g.NewScalar().Sub(xj, xi))
	}
	return num.Mul(num, den.Inv(den))
}

// pseudonymUnder is an id's pseudonym under key k, computed with circl's
// RFC 9497 implementation (anyone holding k can).
func pseudonymUnder(t *testing.T, k cgroup.Scalar, id string) string {
	t.Helper()
	b, err := k.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	sk := new(circloprf.PrivateKey)
	if err := sk.UnmarshalBinary(circloprf.SuiteRistretto255, b); err != nil {
		t.Fatal(err)
	}
	out, err := circloprf.NewServer(circloprf.SuiteRistretto255, sk).FullEvaluate([]byte(id))
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(out[:pseudonymHex/2])
}

// finalizeAs hashes an id with an element as RFC 9497's Finalize does.
func finalizeAs(id string, e oprf.Element) string {
	n, _ := e.MarshalBinary()
	h := sha512.New()
	var l [2]byte
	binary.BigEndian.PutUint16(l[:], uint16(len(id)))
	h.Write(l[:])
	h.Write([]byte(id))
	binary.BigEndian.PutUint16(l[:], uint16(len(n)))
	h.Write(l[:])
	h.Write(n)
	h.Write([]byte("Finalize"))
	return hex.EncodeToString(h.Sum(nil)[:pseudonymHex/2])
}

// TestOPRFNoCoalitionComputesAPseudonym: the server, pooling everything it
// relayed with a participant outside the committee (the link secret, its
// own ids) and any t-1 members' key shares, cannot compute the pseudonym of
// a guessed id, here one the federation holds: not as a keyed hash, not
// from the shares it has, not from the blinded points and evaluations it
// relayed. With t shares it could: the check would see it.
func TestOPRFNoCoalitionComputesAPseudonym(t *testing.T) {
	rec := recordOPRF(t, Config{Lambda: 1e-2, Inner: 4, Rounds: 2})
	c := rec.fed.coord
	members := slices.Sorted(maps.Keys(rec.shares))
	if len(members) != DefaultKeyCommittee || DefaultKeyThreshold != 2 {
		t.Fatalf("committee %v", members)
	}
	outsider := 3 // not a member: the committee is the first three
	ids := rec.fed.mem.parts[outsider].block.IDs
	for i, id := range ids[:5] {
		real := c.clients[outsider].hello.Pseudonyms[i]
		// t shares: the key, and the real pseudonym.
		if got := pseudonymUnder(t, keyFrom(rec.shares[members[0]], rec.shares[members[1]]), id); got != real {
			t.Fatalf("id %s: t shares give %s, registered %s: the check cannot see a pseudonym computed", id, got, real)
		}
		guesses := map[string]string{"a keyed hash under the link secret": testSecret.Pseudonym(id)}
		for _, m := range members {
			guesses[fmt.Sprintf("participant %d's share alone", m)] = pseudonymUnder(t, keyFrom(rec.shares[m]), id)
		}
		// The relayed evaluations, combined as the participant does but
		// without its blind: k r H(id), not k H(id).
		pub := rec.evals[outsider][:2]
		combined := cgroup.Ristretto255.NewElement()
		for _, r := range pub {
			combined.Add(combined, cgroup.Ristretto255.NewElement().Mul(r.Elements[i], lagrange(r.Member, []int{pub[0].Member, pub[1].Member})))
		}
		guesses["the relayed evaluations"] = finalizeAs(id, combined)
		guesses["the relayed blinded point"] = finalizeAs(id, rec.batches[outsider].Elements[i])
		for how, p := range guesses {
			if slices.Contains(c.clients[outsider].hello.Pseudonyms, p) {
				t.Errorf("id %s: %s gives a registered pseudonym", id, how)
			}
		}
	}
}

// TestOPRFBudget: a participant's blinded batch of more ids than its hello
// declared is refused by the coordinator, and a member evaluates no more
// for a participant than the rows it is told the participant declared
// (a server that tells it fewer than the batch holds is refused too).
func TestOPRFBudget(t *testing.T) {
	d := testData(120, 6, 8)
	blocks := gridBlocks(d, 2, 2)
	cfg := Config{Lambda: 1e-2, Inner: 4, Rounds: 2, Pseudonyms: PseudonymsOPRF}

	t.Run("a batch beyond the hello", func(t *testing.T) {
		f := newFed(t, blocks, cfg)
		const liar = 3
		f.mem.Observe = func(toServer bool, k int, m *Message) {
			if toServer && k == liar && m.Kind == KindOPRFBlinded {
				r, _ := oprf.DecodeEvaluationRequest(m.Keys[0], 1000)
				r.Elements = append(r.Elements, r.Elements[0])
				m.Keys[0], _ = r.MarshalBinary()
			}
		}
		var errs []string
		f.mem.OnError = func(k int, err error) { errs = append(errs, err.Error()) }
		if err := Serve(t.Context(), f.coord, f.mem, nil); !errors.Is(err, ErrIdle) {
			t.Fatalf("serve: %v", err)
		}
		if f.coord.Started() || len(errs) == 0 || !strings.Contains(strings.Join(errs, "\n"), "the 60 ids the participant declared") {
			t.Fatalf("started %v, errors %q", f.coord.Started(), errs)
		}
	})
	t.Run("a member told fewer rows", func(t *testing.T) {
		f := newFed(t, blocks, cfg)
		f.mem.Observe = func(toServer bool, k int, m *Message) {
			if !toServer && m.Kind == KindOPRFEval {
				r := *m.OPRF
				r.Rows = slices.Clone(r.Rows)
				r.Rows[0] = 10 // the batch holds 60: beyond 10 and the margin
				m.OPRF = &r
			}
		}
		var errs []string
		f.mem.OnError = func(k int, err error) { errs = append(errs, err.Error()) }
		if err := Serve(t.Context(), f.coord, f.mem, nil); !errors.Is(err, ErrIdle) {
			t.Fatalf("serve: %v", err)
		}
		if f.coord.Started() || len(errs) != DefaultKeyCommittee || !strings.Contains(errs[0], `participant "0"`) || !strings.Contains(errs[0], "declared 10 rows") {
			t.Fatalf("started %v, errors %q", f.coord.Started(), errs)
		}
		t.Logf("a member: %s", errs[0])
	})
}

// TestOPRFLyingMember: a committee member whose evaluations of a
// participant's ids do not verify is named by that participant, which makes
// its pseudonyms with the other members; the coordinator checks the
// complaint against what it relayed and refuses the member, and the
// others keep their pseudonyms. A false complaint refuses its maker.
func TestOPRFLyingMember(t *testing.T) {
	d := testData(120, 6, 8)
	blocks := gridBlocks(d, 2, 2)
	cfg := Config{Lambda: 1e-2, Inner: 4, Rounds: 2, Pseudonyms: PseudonymsOPRF}
	for _, tc := range []struct {
		name    string
		tamper  func(toServer bool, k int, m *Message)
		refused int
		want    string
	}{
		{"a member lies", func(toServer bool, k int, m *Message) {
			if toServer && k == 1 && m.Kind == KindOPRFEvaluated {
				last := len(m.Keys) - 1 // participant 3's batch
				r, _ := oprf.DecodeEvaluationResponse(m.Keys[last], 1000)
				r.Elements[0] = cgroup.Ristretto255.NewElement().Add(r.Elements[0], cgroup.Ristretto255.Generator())
				m.Keys[last], _ = r.MarshalBinary()
			}
		}, 1, "P1's evaluations of P3's ids do not verify"},
		{"a false complaint", func(toServer bool, k int, m *Message) {
			if toServer && k == 3 && m.Kind == KindPseudonyms {
				m.OPRF = &OPRFRound{Bad: []int{1}}
			}
		}, 3, "P3 said P0's evaluations of its ids do not verify, and they do"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFed(t, blocks, cfg)
			f.coord.SetNamer(func(k int) string { return fmt.Sprintf("P%d", k) })
			refused := map[int]string{}
			f.mem.Observe = func(toServer bool, k int, m *Message) {
				tc.tamper(toServer, k, m)
				if !toServer && m.Kind == KindError {
					refused[k] = m.Err
				}
			}
			if err := Serve(t.Context(), f.coord, f.mem, nil); !errors.Is(err, ErrIdle) {
				t.Fatalf("serve: %v", err)
			}
			if len(refused) != 1 || !strings.Contains(refused[tc.refused], tc.want) {
				t.Fatalf("refused %v, want P%d: %q", refused, tc.refused, tc.want)
			}
			for k, cs := range f.coord.clients {
				if k != tc.refused && (cs.hello == nil || len(cs.hello.Pseudonyms) != blocks[k].N()) {
					t.Fatalf("participant %d lost its pseudonyms", k)
				}
			}
		})
	}
}
