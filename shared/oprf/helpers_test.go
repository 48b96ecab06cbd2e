package oprf

import (
	"math/big"
	"slices"
	"testing"
)

// testCommittee is a committee that ran the key generation honestly.
type testCommittee struct {
	c        Committee
	dealings []*Dealing
	shares   []*KeyShare
	pub      *PublicKeys
	evals    []*Evaluator
}

func newTestCommittee(tb testing.TB, n, t int) *testCommittee {
	tb.Helper()
	tc := &testCommittee{c: Committee{N: n, T: t}}
	for i := 1; i <= n; i++ {
		d, err := Deal(tc.c, i, nil)
		if err != nil {
			tb.Fatalf("Deal(%d): %v", i, err)
		}
		tc.dealings = append(tc.dealings, d)
	}
	tc.finish(tb, tc.allDealers())
	return tc
}

func (tc *testCommittee) allDealers() []int {
	var ds []int
	for i := 1; i <= tc.c.N; i++ {
		ds = append(ds, i)
	}
	return ds
}

// finish combines the dealings of the qualified dealers for every member.
func (tc *testCommittee) finish(tb testing.TB, qualified []int) {
	tb.Helper()
	var coms []*Commitment
	for _, d := range qualified {
		coms = append(coms, tc.dealings[d-1].Commitment)
	}
	tc.shares, tc.evals = nil, nil
	for j := 1; j <= tc.c.N; j++ {
		var got []*SecretShare
		for _, d := range qualified {
			got = append(got, tc.dealings[d-1].Shares[j-1])
		}
		ks, err := CombineShares(tc.c, j, coms, got)
		if err != nil {
			tb.Fatalf("CombineShares(%d): %v", j, err)
		}
		ev, err := NewEvaluator(ks)
		if err != nil {
			tb.Fatalf("NewEvaluator(%d): %v", j, err)
		}
		tc.shares = append(tc.shares, ks)
		tc.evals = append(tc.evals, ev)
	}
	pub, err := NewPublicKeys(tc.c, coms)
	if err != nil {
		tb.Fatalf("NewPublicKeys: %v", err)
	}
	tc.pub = pub
}

func (tc *testCommittee) declare(tb testing.TB, ctx Context, rows int) {
	tb.Helper()
	for _, ev := range tc.evals {
		if err := ev.Declare(ctx, rows); err != nil {
			tb.Fatalf("Declare: %v", err)
		}
	}
}

// respond sends st's request to the given members through the wire
// encodings, as the relay would, and decodes their responses.
func (tc *testCommittee) respond(tb testing.TB, ctx Context, st *BlindState, members ...int) []*EvaluationResponse {
	tb.Helper()
	reqBytes, err := st.Request(ctx).MarshalBinary()
	if err != nil {
		tb.Fatalf("encode request: %v", err)
	}
	var out []*EvaluationResponse
	for _, j := range members {
		req, err := DecodeEvaluationRequest(reqBytes, st.Len())
		if err != nil {
			tb.Fatalf("decode request: %v", err)
		}
		resp, err := tc.evals[j-1].Evaluate(req)
		if err != nil {
			tb.Fatalf("member %d Evaluate: %v", j, err)
		}
		b, err := resp.MarshalBinary()
		if err != nil {
			tb.Fatalf("encode response: %v", err)
		}
		if resp, err = DecodeEvaluationResponse(b, st.Len()); err != nil {
			tb.Fatalf("decode response: %v", err)
		}
		out = append(out, resp)
	}
	return out
}

func testInputs(n int) [][]byte {
	in := make([][]byte, n)
	for i := range in {
		in[i] = []byte("patient-" + big.NewInt(int64(i)).String())
	}
	return in
}

// The helpers below redo the secret-sharing arithmetic with math/big, so the
// reconstruction in tests does not reuse the package's own Lagrange code.

// order is ℓ = 2^252 + 27742317777372353535851937790883648493.
var order = func() *big.Int {
	low, _ := new(big.Int).SetString("27742317777372353535851937790883648493", 10)
	return new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), 252), low)
}()

func scalarToBig(tb testing.TB, s Scalar) *big.Int {
	tb.Helper()
	b, err := s.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	slices.Reverse(b)
	return new(big.Int).SetBytes(b)
}

func bigToScalarBytes(x *big.Int) []byte {
	b := new(big.Int).Mod(x, order).FillBytes(make([]byte, ScalarLength))
	slices.Reverse(b)
	return b
}

// reconstruct interpolates the shares' polynomial at zero. With T or more
// shares that is k; with fewer it is just some value.
func reconstruct(tb testing.TB, shares []*KeyShare) *big.Int {
	tb.Helper()
	k := new(big.Int)
	for _, si := range shares {
		num, den := big.NewInt(1), big.NewInt(1)
		for _, sj := range shares {
			if sj.Index == si.Index {
				continue
			}
			num.Mul(num, big.NewInt(int64(sj.Index)))
			den.Mul(den, big.NewInt(int64(sj.Index-si.Index)))
		}
		lambda := num.Mul(num, new(big.Int).ModInverse(den.Mod(den, order), order))
		k.Add(k, lambda.Mul(lambda, scalarToBig(tb, si.Secret)))
	}
	return k.Mod(k, order)
}

// pseudonymUnder computes the RFC 9497 output for input under key k directly.
func pseudonymUnder(tb testing.TB, k *big.Int, input []byte) []byte {
	tb.Helper()
	s := g.NewScalar()
	if err := s.UnmarshalBinary(bigToScalarBytes(k)); err != nil {
		tb.Fatal(err)
	}
	enc, err := g.NewElement().Mul(hashToGroup(input), s).MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	return finalizeHash(input, enc)
}
