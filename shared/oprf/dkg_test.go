package oprf

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestBadDealerIsNamed corrupts dealer 2's part of an n=4, t=2 key
// generation and expects member 3 (or anyone deriving public keys) to name
// dealer 2; a member dealer 2 treated correctly must not complain.
func TestBadDealerIsNamed(t *testing.T) {
	const bad, victim = 2, 3
	cases := []struct {
		name      string
		corrupt   func(tc *testCommittee) ([]*Commitment, []*SecretShare)
		inPublic  bool // NewPublicKeys must refuse too
		unharmed  bool // member 1 combines fine
		wantInErr string
	}{
		{name: "inconsistent share", unharmed: true, wantInErr: "does not match", corrupt: func(tc *testCommittee) ([]*Commitment, []*SecretShare) {
			coms, shares := tc.received(victim)
			s := *shares[bad-1]
			s.Value = g.NewScalar().Add(s.Value, scalarOf(1))
			shares[bad-1] = &s
			return coms, shares
		}},
		{name: "share meant for another member", unharmed: true, wantInErr: "addressed to member 1", corrupt: func(tc *testCommittee) ([]*Commitment, []*SecretShare) {
			coms, shares := tc.received(victim)
			shares[bad-1] = tc.dealings[bad-1].Shares[0]
			return coms, shares
		}},
		{name: "no share dealt", unharmed: true, wantInErr: "dealt no share", corrupt: func(tc *testCommittee) ([]*Commitment, []*SecretShare) {
			coms, shares := tc.received(victim)
			return coms, append(shares[:bad-1:bad-1], shares[bad:]...)
		}},
		{name: "two shares", unharmed: true, wantInErr: "two shares", corrupt: func(tc *testCommittee) ([]*Commitment, []*SecretShare) {
			coms, shares := tc.received(victim)
			return coms, append(shares, shares[bad-1])
		}},
		{name: "commitment of the wrong degree", inPublic: true, wantInErr: "coefficients", corrupt: func(tc *testCommittee) ([]*Commitment, []*SecretShare) {
			coms, shares := tc.received(victim)
			coms[bad-1] = &Commitment{Dealer: bad, Coefficients: coms[bad-1].Coefficients[:1]}
			return coms, shares
		}},
		{name: "identity coefficient", inPublic: true, wantInErr: "identity", corrupt: func(tc *testCommittee) ([]*Commitment, []*SecretShare) {
			coms, shares := tc.received(victim)
			coms[bad-1] = &Commitment{Dealer: bad, Coefficients: []Element{coms[bad-1].Coefficients[0], g.Identity()}}
			return coms, shares
		}},
		{name: "two commitments", inPublic: true, wantInErr: "two commitments", corrupt: func(tc *testCommittee) ([]*Commitment, []*SecretShare) {
			coms, shares := tc.received(victim)
			return append(coms, coms[bad-1]), shares
		}},
		{name: "share without a qualified commitment", unharmed: true, wantInErr: "without a qualified commitment", corrupt: func(tc *testCommittee) ([]*Commitment, []*SecretShare) {
			coms, shares := tc.received(victim)
			return append(coms[:bad-1:bad-1], coms[bad:]...), shares
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tc := newTestCommittee(t, 4, 2)
			coms, shares := c.corrupt(tc)
			_, err := CombineShares(tc.c, victim, coms, shares)
			var de *DealerError
			if !errors.As(err, &de) || de.Dealer != bad {
				t.Fatalf("CombineShares: err = %v, want a *DealerError naming dealer %d", err, bad)
			}
			if !strings.Contains(err.Error(), "dealer 2") || !strings.Contains(err.Error(), c.wantInErr) {
				t.Errorf("error %q should name dealer 2 and say %q", err, c.wantInErr)
			}
			_, err = NewPublicKeys(tc.c, coms)
			if c.inPublic {
				if !errors.As(err, &de) || de.Dealer != bad {
					t.Errorf("NewPublicKeys: err = %v, want a *DealerError naming dealer %d", err, bad)
				}
			}
			if c.unharmed {
				coms1, shares1 := tc.received(1)
				if _, err := CombineShares(tc.c, 1, coms1, shares1); err != nil {
					t.Errorf("member 1, dealt correctly: %v", err)
				}
			}
		})
	}
}

// received is what member j got from every dealer in an honest run.
func (tc *testCommittee) received(j int) ([]*Commitment, []*SecretShare) {
	var coms []*Commitment
	var shares []*SecretShare
	for _, d := range tc.dealings {
		coms = append(coms, d.Commitment)
		shares = append(shares, d.Shares[j-1])
	}
	return coms, shares
}

// TestExcludingADealer drops a dealer from the qualified set, as a caller
// would after a *DealerError, and checks the remaining key still works and is
// the sum of the remaining dealers' secrets.
func TestExcludingADealer(t *testing.T) {
	tc := newTestCommittee(t, 4, 2)
	before := reconstruct(t, tc.shares)
	tc.finish(t, []int{1, 3, 4})
	after := reconstruct(t, tc.shares)
	if before.Cmp(after) == 0 {
		t.Fatal("excluding a dealer left the key unchanged")
	}
	tc.declare(t, ctxA, 3)
	inputs := testInputs(3)
	st, err := Blind(inputs, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := st.Finalize(tc.pub, ctxA, tc.respond(t, ctxA, st, 2, 4))
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range inputs {
		if want := pseudonymUnder(t, after, in); !bytes.Equal(out[i], want) {
			t.Errorf("input %d: %x, PRF under the remaining key %x", i, out[i], want)
		}
	}
}

func TestKeyGenerationRefusals(t *testing.T) {
	tc := newTestCommittee(t, 3, 2)
	coms, shares := tc.received(1)
	cases := []struct {
		name string
		run  func() error
		want string
	}{
		{"threshold above members", func() error { _, err := Deal(Committee{N: 2, T: 3}, 1, nil); return err }, "threshold 3"},
		{"zero threshold", func() error { _, err := Deal(Committee{N: 2, T: 0}, 1, nil); return err }, "threshold 0"},
		{"too many members", func() error { _, err := Deal(Committee{N: MaxMembers + 1, T: 1}, 1, nil); return err }, "committee of"},
		{"dealer outside", func() error { _, err := Deal(tc.c, 4, nil); return err }, "dealer index 4"},
		{"recipient outside", func() error { _, err := CombineShares(tc.c, 0, coms, shares); return err }, "recipient index 0"},
		{"fewer dealers than T", func() error { _, err := CombineShares(tc.c, 1, coms[:1], shares[:1]); return err }, "1 qualified dealers"},
		{"public keys from fewer dealers than T", func() error { _, err := NewPublicKeys(tc.c, coms[:1]); return err }, "1 qualified dealers"},
		{"broken randomness", func() error { _, err := Deal(tc.c, 1, bytes.NewReader(make([]byte, 10))); return err }, "read randomness"},
		{"all-zero randomness", func() error { _, err := Deal(tc.c, 1, bytes.NewReader(make([]byte, 1<<14))); return err }, "out-of-range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.run(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestPublicKeySharesMatchSecrets checks K_j = s_j·G and K = k·G.
func TestPublicKeySharesMatchSecrets(t *testing.T) {
	tc := newTestCommittee(t, 5, 3)
	for j, ks := range tc.shares {
		if !g.NewElement().MulGen(ks.Secret).IsEqual(tc.pub.Shares[j]) {
			t.Errorf("member %d: K_j does not match s_j·G", j+1)
		}
	}
	k := g.NewScalar()
	if err := k.UnmarshalBinary(bigToScalarBytes(reconstruct(t, tc.shares[1:4]))); err != nil {
		t.Fatal(err)
	}
	if !g.NewElement().MulGen(k).IsEqual(tc.pub.Key) {
		t.Error("K does not match k·G")
	}
}
