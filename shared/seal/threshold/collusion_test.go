package threshold

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hyfed/hyfed/shared/seal"
	"github.com/tuneinsight/lattigo/v5/core/rlwe"
	"github.com/tuneinsight/lattigo/v5/mhe"
	"github.com/tuneinsight/lattigo/v5/schemes/bgv"
)

// decodeWith decrypts c with any candidate key the way a participant
// opens its own chunks (seal.ThresholdBGV.Open: phase times t, centered mod
// Q, then mod t, then fixed point): what a coalition gets from its best
// guess of a key.
func decodeWith(t testing.TB, f *Federation, c seal.Chunk, sk *rlwe.SecretKey) []float64 {
	t.Helper()
	vals, err := f.s.Open(sk, c)
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// matches counts the slots where got equals want exactly.
func matches(got, want []float64) int {
	n := 0
	for i := range want {
		if got[i] == want[i] {
			n++
		}
	}
	return n
}

// switchManually adds whatever shares the coalition has and applies them
// to c, without AggregateSwitch's checks.
func switchManually(f *Federation, c seal.Chunk, shares []*SwitchShare) seal.Chunk {
	ct, _ := f.s.Ciphertext(c)
	rq := f.params.RingQ()
	out := bgv.NewCiphertext(f.params, 1, ct.Level())
	*out.MetaData = *ct.MetaData
	out.Value[0].Copy(ct.Value[0])
	for _, sh := range shares {
		rq.Add(out.Value[0], sh.Value[0], out.Value[0])
		rq.Add(out.Value[1], sh.Value[1], out.Value[1])
	}
	w, _ := f.s.WrapCiphertext(out)
	return w
}

// TestCollusion: the server's whole view together with the full secret
// state of any coalition of 1 to t-1 participants (the victim not among
// them) does not open the victim's chunk: the coalition combines its Shamir
// shares at 0, adds its collective-key shares, adds its genuine switching
// shares (and an honest party's share replayed from an earlier legitimate
// open) and decrypts with each of its keys; every attempt gives values
// unrelated to the sealed ones. t parties, honest ones among them, open the
// same chunk for the victim exactly.
func TestCollusion(t *testing.T) {
	for _, tc := range []struct{ n, t int }{{3, 2}, {5, 3}} {
		t.Run(fmt.Sprintf("%d-of-%d", tc.t, tc.n), func(t *testing.T) {
			f, parties := federation(t, tc.n, tc.t)
			m := byID(parties)
			s := f.Scheme()
			victim := parties[0]
			sl, _ := victim.Sealer()
			secret := values(s.ChunkLen(), 7)
			c, err := sl.Seal(secret)
			if err != nil {
				t.Fatal(err)
			}
			others := f.Members()[1:]
			attempts := 0
			for k := 1; k < tc.t; k++ {
				for _, coalition := range subsets(others, k) {
					var tries []struct {
						what string
						vals []float64
					}
					try := func(what string, vals []float64) {
						tries = append(tries, struct {
							what string
							vals []float64
						}{what, vals})
					}
					colluders := make([]*Party, len(coalition))
					for i, id := range coalition {
						colluders[i] = m[id]
					}
					// (a) Lagrange-combine the coalition's Shamir shares at
					// 0 as if they were a full active set.
					pts := shamirPoints(coalition)
					comb := rlwe.NewSecretKey(f.params)
					for _, p := range colluders {
						cmb := mhe.NewCombiner(*f.params.GetRLWEParameters(), mhe.ShamirPublicPoint(p.id), pts, len(pts))
						add := rlwe.NewSecretKey(f.params)
						if err := cmb.GenAdditiveShare(pts, mhe.ShamirPublicPoint(p.id), *p.tsk, add); err != nil {
							t.Fatal(err)
						}
						f.params.RingQ().Add(comb.Value.Q, add.Value.Q, comb.Value.Q)
					}
					try("combined Shamir shares", decodeWith(t, f, c, comb))
					// (b) the sum of their collective-key secret shares.
					sum := rlwe.NewSecretKey(f.params)
					for _, p := range colluders {
						f.params.RingQ().Add(sum.Value.Q, p.sk.Value.Q, sum.Value.Q)
					}
					try("summed secret shares", decodeWith(t, f, c, sum))
					// (c) every colluder's own key and secret share alone.
					for _, p := range colluders {
						try(fmt.Sprintf("own key of %d", p.id), decodeWith(t, f, c, p.own))
						try(fmt.Sprintf("secret share of %d", p.id), decodeWith(t, f, c, p.sk))
					}
					// (d) switch c to the first colluder's key with all the
					// shares the coalition can make for an active set that
					// completes it with honest members, plus those honest
					// members' shares replayed from a legitimate open of
					// another chunk (the colluder's own) in the server's view.
					target := colluders[0]
					active := slices.Clone(coalition)
					for _, id := range f.Members() {
						if len(active) < tc.t && !slices.Contains(active, id) && id != victim.id {
							active = append(active, id)
						}
					}
					for len(active) < tc.t { // only the victim is left to complete it
						active = append(active, victim.id)
					}
					slices.Sort(active)
					var mine, replayed []*SwitchShare
					own, _ := colluders[0].Sealer()
					other, _ := own.Seal(values(s.ChunkLen(), 9))
					for _, id := range active {
						sh, err := m[id].SwitchShare(c, active, target.PublicKey())
						if err != nil {
							t.Fatal(err)
						}
						if slices.Contains(coalition, id) {
							mine = append(mine, sh)
							continue
						}
						if old, err := m[id].SwitchShare(other, active, target.PublicKey()); err == nil {
							replayed = append(replayed, old)
						}
					}
					if _, err := f.AggregateSwitch(c, mine); err == nil {
						t.Fatal("the server aggregated fewer than t switching shares")
					}
					try("fewer than t switching shares", decodeWith(t, f, switchManually(f, c, mine), target.own))
					try("with replayed honest shares", decodeWith(t, f, switchManually(f, c, append(mine, replayed...)), target.own))
					for _, tr := range tries {
						attempts++
						if n := matches(tr.vals, secret); n > s.ChunkLen()/100 {
							t.Errorf("coalition %v (%s) opened %d of %d values", coalition, tr.what, n, s.ChunkLen())
						}
					}
				}
			}
			// t members, the victim's consent implied by the protocol, open
			// it for the victim.
			got := openFor(t, f, m, c, others[:tc.t], victim)
			if i := equalBits(got, secret); i >= 0 {
				t.Fatalf("t parties did not open the chunk: slot %d", i)
			}
			if i := equalBits(decodeWith(t, f, mustSwitch(t, f, m, c, others[:tc.t], victim).Chunk, victim.own), secret); i >= 0 {
				t.Fatalf("the attack decoder does not open a genuine switch (slot %d)", i)
			}
			t.Logf("%d coalition attempts, none opened more than 1%% of the values", attempts)
		})
	}
}

func mustSwitch(t *testing.T, f *Federation, m map[PartyID]*Party, c seal.Chunk, active []PartyID, target *Party) *Switched {
	sw, err := switchFor(t, f, m, c, active, target)
	if err != nil {
		t.Fatal(err)
	}
	return sw
}
