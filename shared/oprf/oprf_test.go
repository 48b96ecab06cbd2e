package oprf

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	circloprf "github.com/cloudflare/circl/oprf"
)

var ctxA = Context{FederationID: "fed-1", ParticipantID: "hospital-a"}

func unhex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestRFC9497Vectors runs RFC 9497 appendix A.1.1 (OPRF mode,
// ristretto255-SHA512) through the package's own paths with n = t = 1: the
// dealer's random source yields the RFC key and Blind's yields the RFC blind.
func TestRFC9497Vectors(t *testing.T) {
	const (
		seed    = "a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3"
		keyInfo = "74657374206b6579"
		skSm    = "5ebcea5ee37023ccb9fc2d2019f9d7737be85591ae8652ffa9ef0f4d37063b0e"
		blind   = "64d37aed22a27f5191de1c1d69fadb899d8862b58eb4220029e036ec4c1f6706"
	)
	// The vector's key is DeriveKeyPair(seed, info); check we copied it right.
	derived, err := circloprf.DeriveKey(circloprf.SuiteRistretto255, circloprf.BaseMode, unhex(t, seed), unhex(t, keyInfo))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := derived.MarshalBinary(); hex.EncodeToString(b) != skSm {
		t.Fatalf("derived key %x, vector says %s", b, skSm)
	}

	vectors := []struct {
		input, blinded, evaluated, output string
	}{
		{
			input:     "00",
			blinded:   "609a0ae68c15a3cf6903766461307e5c8bb2f95e7e6550e1ffa2dc99e412803c",
			evaluated: "7ec6578ae5120958eb2db1745758ff379e77cb64fe77b0b2d8cc917ea0869c7e",
			output:    "527759c3d9366f277d8c6020418d96bb393ba2afb20ff90df23fb7708264e2f3ab9135e3bd69955851de4b1f9fe8a0973396719b7912ba9ee8aa7d0b5e24bcf6",
		},
		{
			input:     "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a",
			blinded:   "da27ef466870f5f15296299850aa088629945a17d1f5b7f5ff043f76b3c06418",
			evaluated: "b4cbf5a4f1eeda5a63ce7b77c7d23f461db3fcab0dd28e4e17cecb5c90d02c25",
			output:    "f4a74c9c592497375e796aa837e907b1a045d34306a749db9f34221f7e750cb4f2a6413a6bf6fa5e19ba6348eb673934a722a7ede2e7621306d18951e7cf2c73",
		},
	}
	c := Committee{N: 1, T: 1}
	d, err := Deal(c, 1, bytes.NewReader(unhex(t, skSm)))
	if err != nil {
		t.Fatal(err)
	}
	ks, err := CombineShares(c, 1, []*Commitment{d.Commitment}, d.Shares)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := ks.Secret.MarshalBinary(); hex.EncodeToString(b) != skSm {
		t.Fatalf("key share %x, want the RFC key %s", b, skSm)
	}
	pub, err := NewPublicKeys(c, []*Commitment{d.Commitment})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := NewEvaluator(ks)
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Declare(ctxA, len(vectors)); err != nil {
		t.Fatal(err)
	}
	for _, v := range vectors {
		t.Run(v.input, func(t *testing.T) {
			st, err := Blind([][]byte{unhex(t, v.input)}, bytes.NewReader(unhex(t, blind)))
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := st.elements[0].MarshalBinary(); hex.EncodeToString(b) != v.blinded {
				t.Errorf("blinded element %x, want %s", b, v.blinded)
			}
			resp, err := ev.Evaluate(st.Request(ctxA))
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := resp.Elements[0].MarshalBinary(); hex.EncodeToString(b) != v.evaluated {
				t.Errorf("evaluated element %x, want %s", b, v.evaluated)
			}
			out, err := st.Finalize(pub, ctxA, []*EvaluationResponse{resp})
			if err != nil {
				t.Fatal(err)
			}
			if hex.EncodeToString(out[0]) != v.output {
				t.Errorf("output %x, want %s", out[0], v.output)
			}
		})
	}
}

// TestMatchesCirclOPRF reconstructs k from T shares and checks that circl's
// RFC 9497 server and client, keyed with k, give the threshold path's outputs.
func TestMatchesCirclOPRF(t *testing.T) {
	inputs := [][]byte{
		{},
		[]byte("0"),
		[]byte("patient-000123"),
		bytes.Repeat([]byte{0xa5}, 1000),
		[]byte("ünïcödé id"),
	}
	for _, tt := range []struct{ n, t int }{{1, 1}, {2, 2}, {3, 2}, {5, 3}, {4, 4}} {
		t.Run(fmt.Sprintf("n=%d,t=%d", tt.n, tt.t), func(t *testing.T) {
			tc := newTestCommittee(t, tt.n, tt.t)
			tc.declare(t, ctxA, len(inputs))

			// Reconstruct from the last T members, evaluate with the first T.
			k := reconstruct(t, tc.shares[tt.n-tt.t:])
			sk := new(circloprf.PrivateKey)
			if err := sk.UnmarshalBinary(circloprf.SuiteRistretto255, bigToScalarBytes(k)); err != nil {
				t.Fatal(err)
			}
			pkBytes, _ := sk.Public().MarshalBinary()
			if want, _ := tc.pub.Key.MarshalBinary(); !bytes.Equal(pkBytes, want) {
				t.Fatalf("k·G = %x, joint public key %x", pkBytes, want)
			}
			server := circloprf.NewServer(circloprf.SuiteRistretto255, sk)
			client := circloprf.NewClient(circloprf.SuiteRistretto255)
			fin, req, err := client.Blind(inputs)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := server.Evaluate(req)
			if err != nil {
				t.Fatal(err)
			}
			want, err := client.Finalize(fin, ev)
			if err != nil {
				t.Fatal(err)
			}

			st, err := Blind(inputs, nil)
			if err != nil {
				t.Fatal(err)
			}
			var first []int
			for j := 1; j <= tt.t; j++ {
				first = append(first, j)
			}
			got, err := st.Finalize(tc.pub, ctxA, tc.respond(t, ctxA, st, first...))
			if err != nil {
				t.Fatal(err)
			}
			for i := range inputs {
				if len(got[i]) != OutputLength || !bytes.Equal(got[i], want[i]) {
					t.Errorf("input %d: threshold output %x, circl output %x", i, got[i], want[i])
				}
				if full, _ := server.FullEvaluate(inputs[i]); !bytes.Equal(got[i], full) {
					t.Errorf("input %d: threshold output %x, circl FullEvaluate %x", i, got[i], full)
				}
			}
		})
	}
}

// TestAnyTSubsetAgrees finalizes with every subset of at least T members, in
// two orders, and expects one set of outputs.
func TestAnyTSubsetAgrees(t *testing.T) {
	for _, tt := range []struct{ n, t int }{{3, 2}, {4, 2}, {5, 3}} {
		t.Run(fmt.Sprintf("n=%d,t=%d", tt.n, tt.t), func(t *testing.T) {
			tc := newTestCommittee(t, tt.n, tt.t)
			inputs := testInputs(8)
			tc.declare(t, ctxA, len(inputs))
			st, err := Blind(inputs, nil)
			if err != nil {
				t.Fatal(err)
			}
			all := tc.respond(t, ctxA, st, tc.allDealers()...)
			var ref [][]byte
			subsets := 0
			for mask := 1; mask < 1<<tt.n; mask++ {
				var sub []*EvaluationResponse
				for j := range tt.n {
					if mask&(1<<j) != 0 {
						sub = append(sub, all[j])
					}
				}
				if len(sub) < tt.t {
					continue
				}
				subsets++
				reversed := append([]*EvaluationResponse(nil), sub...)
				for a, b := 0, len(reversed)-1; a < b; a, b = a+1, b-1 {
					reversed[a], reversed[b] = reversed[b], reversed[a]
				}
				for _, order := range [][]*EvaluationResponse{sub, reversed} {
					out, err := st.Finalize(tc.pub, ctxA, order)
					if err != nil {
						t.Fatalf("subset %b: %v", mask, err)
					}
					if ref == nil {
						ref = out
						continue
					}
					for i := range out {
						if !bytes.Equal(out[i], ref[i]) {
							t.Fatalf("subset %b input %d: %x differs from %x", mask, i, out[i], ref[i])
						}
					}
				}
			}
			if subsets == 0 {
				t.Fatal("no subset tried")
			}
			// And the outputs are the PRF under the reconstructed key.
			k := reconstruct(t, tc.shares)
			for i, in := range inputs {
				if want := pseudonymUnder(t, k, in); !bytes.Equal(ref[i], want) {
					t.Errorf("input %d: %x, PRF under reconstructed k gives %x", i, ref[i], want)
				}
			}
		})
	}
}

// TestFewerThanTMembers checks that fewer than T responses are refused, and
// that the obvious computations open to a coalition of T-1 members and the
// relay miss the real pseudonym of an input it guessed right. This does not
// prove the coalition cannot do better: that rests on Shamir sharing (T-1
// shares fit every key) and on the hardness assumptions behind RFC 9497. It
// does catch a scheme where T-1 shares, or unblinded-looking relayed data,
// determine the output.
func TestFewerThanTMembers(t *testing.T) {
	for _, tt := range []struct{ n, t int }{{3, 2}, {5, 3}, {4, 4}} {
		t.Run(fmt.Sprintf("n=%d,t=%d", tt.n, tt.t), func(t *testing.T) {
			tc := newTestCommittee(t, tt.n, tt.t)
			guess := []byte("patient-42")
			tc.declare(t, ctxA, 1)
			st, err := Blind([][]byte{guess}, nil)
			if err != nil {
				t.Fatal(err)
			}
			resps := tc.respond(t, ctxA, st, tc.allDealers()...)
			want, err := st.Finalize(tc.pub, ctxA, resps[:tt.t])
			if err != nil {
				t.Fatal(err)
			}

			if _, err := st.Finalize(tc.pub, ctxA, resps[:tt.t-1]); err == nil || !strings.Contains(err.Error(), "threshold needs") {
				t.Errorf("Finalize with %d responses: err = %v, want a threshold refusal", tt.t-1, err)
			}

			// The coalition interpolates its T-1 shares as if they were
			// enough and evaluates the guess offline.
			coalition := tc.shares[:tt.t-1]
			kPrime := big.NewInt(0)
			if len(coalition) > 0 {
				kPrime = reconstruct(t, coalition)
			}
			if bytes.Equal(pseudonymUnder(t, kPrime, guess), want[0]) {
				t.Error("T-1 shares gave the real pseudonym of the guessed input")
			}

			// The relay combines all relayed evaluations without the blind:
			// it gets r·k·H(x), which hashes to something else.
			indices := make([]int, tt.t)
			for k := range indices {
				indices[k] = resps[k].Member
			}
			lambda := lagrangeAtZero(indices)
			blinded := g.Identity()
			for k := range indices {
				blinded.Add(blinded, g.NewElement().Mul(resps[k].Elements[0], lambda[k]))
			}
			enc, _ := blinded.MarshalBinary()
			if bytes.Equal(finalizeHash(guess, enc), want[0]) {
				t.Error("relayed evaluations without the blind gave the real pseudonym")
			}
		})
	}
}

// TestLyingMemberIsNamed feeds Finalize one bad response among honest ones
// and expects a *MemberError naming the liar; the control case is honest.
func TestLyingMemberIsNamed(t *testing.T) {
	ctxB := Context{FederationID: "fed-1", ParticipantID: "hospital-b"}
	otherFed := Context{FederationID: "fed-2", ParticipantID: "hospital-a"}
	inputs := testInputs(4)

	cases := []struct {
		name  string
		liar  int // 0: no liar, Finalize must succeed
		alter func(t *testing.T, tc *testCommittee, st *BlindState, resps []*EvaluationResponse)
	}{
		{name: "honest", liar: 0, alter: func(*testing.T, *testCommittee, *BlindState, []*EvaluationResponse) {}},
		{name: "tampered evaluation", liar: 2, alter: func(t *testing.T, tc *testCommittee, st *BlindState, r []*EvaluationResponse) {
			r[1].Elements[3] = g.NewElement().Add(r[1].Elements[3], g.Generator())
		}},
		{name: "swapped evaluations", liar: 2, alter: func(t *testing.T, tc *testCommittee, st *BlindState, r []*EvaluationResponse) {
			r[1].Elements[0], r[1].Elements[1] = r[1].Elements[1], r[1].Elements[0]
		}},
		{name: "wrong key with a valid proof for it", liar: 2, alter: func(t *testing.T, tc *testCommittee, st *BlindState, r []*EvaluationResponse) {
			wrong := &KeyShare{Index: 2, Secret: g.NewScalar().Add(tc.shares[1].Secret, scalarOf(1))}
			ev, err := NewEvaluator(wrong)
			if err != nil {
				t.Fatal(err)
			}
			if err := ev.Declare(ctxA, len(inputs)); err != nil {
				t.Fatal(err)
			}
			if r[1], err = ev.Evaluate(st.Request(ctxA)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "proof made for another participant", liar: 2, alter: func(t *testing.T, tc *testCommittee, st *BlindState, r []*EvaluationResponse) {
			tc.declare(t, ctxB, len(inputs))
			r[1] = tc.respond(t, ctxB, st, 2)[0]
		}},
		{name: "proof made for another federation", liar: 2, alter: func(t *testing.T, tc *testCommittee, st *BlindState, r []*EvaluationResponse) {
			tc.declare(t, otherFed, len(inputs))
			r[1] = tc.respond(t, otherFed, st, 2)[0]
		}},
		{name: "evaluations of other points", liar: 2, alter: func(t *testing.T, tc *testCommittee, st *BlindState, r []*EvaluationResponse) {
			other, err := Blind(inputs, nil)
			if err != nil {
				t.Fatal(err)
			}
			r[1] = tc.respond(t, ctxA, other, 2)[0]
		}},
		{name: "member 3's response relabelled as member 2", liar: 2, alter: func(t *testing.T, tc *testCommittee, st *BlindState, r []*EvaluationResponse) {
			r[1] = tc.respond(t, ctxA, st, 3)[0]
			r[1].Member = 2
		}},
		{name: "short response", liar: 2, alter: func(t *testing.T, tc *testCommittee, st *BlindState, r []*EvaluationResponse) {
			r[1].Elements = r[1].Elements[:3]
		}},
		{name: "identity evaluation", liar: 2, alter: func(t *testing.T, tc *testCommittee, st *BlindState, r []*EvaluationResponse) {
			r[1].Elements[0] = g.Identity()
		}},
		{name: "missing proof", liar: 2, alter: func(t *testing.T, tc *testCommittee, st *BlindState, r []*EvaluationResponse) {
			r[1].proof = nil
		}},
		{name: "member outside the committee", liar: 7, alter: func(t *testing.T, tc *testCommittee, st *BlindState, r []*EvaluationResponse) {
			r[1].Member = 7
		}},
		{name: "member answering twice", liar: 1, alter: func(t *testing.T, tc *testCommittee, st *BlindState, r []*EvaluationResponse) {
			r[1] = r[0]
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tc := newTestCommittee(t, 4, 3)
			tc.declare(t, ctxA, 2*len(inputs))
			st, err := Blind(inputs, nil)
			if err != nil {
				t.Fatal(err)
			}
			resps := tc.respond(t, ctxA, st, 1, 2, 4)
			c.alter(t, tc, st, resps)
			out, err := st.Finalize(tc.pub, ctxA, resps)
			if c.liar == 0 {
				if err != nil || len(out) != len(inputs) {
					t.Fatalf("honest responses: %d outputs, err %v", len(out), err)
				}
				return
			}
			var me *MemberError
			if !errors.As(err, &me) || me.Member != c.liar {
				t.Fatalf("err = %v, want a *MemberError naming member %d", err, c.liar)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("member %d", c.liar)) {
				t.Errorf("error %q does not name member %d", err, c.liar)
			}
			if out != nil {
				t.Error("outputs returned alongside a member error")
			}
		})
	}
}

// TestFinalizeValid: a lying member is set aside and named, the others'
// responses still give the outputs; a relay that kept the request and the
// responses can check the complaint (VerifyEvaluation); fewer than T that
// verify fail.
func TestFinalizeValid(t *testing.T) {
	tc := newTestCommittee(t, 3, 2)
	tc.finish(t, tc.allDealers())
	ctx := Context{FederationID: "fed", ParticipantID: "p"}
	tc.declare(t, ctx, 10)
	st, err := Blind(testInputs(4), nil)
	if err != nil {
		t.Fatal(err)
	}
	rs := tc.respond(t, ctx, st, 1, 2, 3)
	want, err := st.Finalize(tc.pub, ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	lie := *rs[0]
	lie.Elements = append([]Element(nil), lie.Elements...)
	lie.Elements[1] = g.NewElement().Add(lie.Elements[1], g.Generator())
	got, bad, err := st.FinalizeValid(tc.pub, ctx, []*EvaluationResponse{&lie, rs[1], rs[2]})
	if err != nil || len(bad) != 1 || bad[0].Member != 1 {
		t.Fatalf("bad %v, err %v", bad, err)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("output %d differs without the liar", i)
		}
	}
	req := st.Request(ctx)
	if err := VerifyEvaluation(tc.pub, req, &lie); err == nil {
		t.Fatal("the relay's check passed the lie")
	}
	if err := VerifyEvaluation(tc.pub, req, rs[1]); err != nil {
		t.Fatalf("the relay's check refused an honest member: %v", err)
	}
	if _, _, err := st.FinalizeValid(tc.pub, ctx, []*EvaluationResponse{&lie, rs[1]}); err == nil {
		t.Fatal("one response that verifies made outputs at t = 2")
	}
}
