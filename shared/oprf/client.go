package oprf

import (
	"errors"
	"fmt"
	"io"

	"github.com/cloudflare/circl/zk/dleq"
)

// BlindState is a participant's private state between Blind and Finalize.
// The blinds never leave it: with a blind, the relay could unblind.
type BlindState struct {
	inputs   [][]byte
	blinds   []Scalar
	elements []Element
}

// MemberError names a member whose response failed verification, so the
// caller can drop it and ask another member.
type MemberError struct {
	Member int
	Err    error
}

func (e *MemberError) Error() string { return fmt.Sprintf("oprf: member %d: %v", e.Member, e.Err) }
func (e *MemberError) Unwrap() error { return e.Err }

// Blind hashes each input to the group and multiplies it by a fresh random
// blind (RFC 9497 section 3.3.1), so the blinded points are uniformly random
// and say nothing about the inputs. rnd nil means crypto/rand; anything else
// is for tests only, as repeated blinds link batches.
func Blind(inputs [][]byte, rnd io.Reader) (*BlindState, error) {
	if len(inputs) == 0 || len(inputs) > MaxBatch {
		return nil, fmt.Errorf("oprf: blind: batch of %d inputs, want 1..%d", len(inputs), MaxBatch)
	}
	s := &BlindState{
		inputs:   make([][]byte, len(inputs)),
		blinds:   make([]Scalar, len(inputs)),
		elements: make([]Element, len(inputs)),
	}
	for i, in := range inputs {
		if len(in) > MaxInputLength {
			return nil, fmt.Errorf("oprf: blind: input %d is %d bytes, limit %d", i, len(in), MaxInputLength)
		}
		r, err := randomScalar(rnd)
		if err != nil {
			return nil, fmt.Errorf("oprf: blind: %w", err)
		}
		p := hashToGroup(in)
		if p.IsIdentity() {
			return nil, fmt.Errorf("oprf: blind: input %d hashes to the identity", i)
		}
		s.inputs[i] = append([]byte(nil), in...)
		s.blinds[i] = r
		s.elements[i] = p.Mul(p, r)
	}
	return s, nil
}

// Len is the number of inputs in the batch.
func (s *BlindState) Len() int { return len(s.inputs) }

// Request returns the evaluation request to send, via the relay, to the
// members.
func (s *BlindState) Request(ctx Context) *EvaluationRequest {
	return &EvaluationRequest{Context: ctx, Elements: append([]Element(nil), s.elements...)}
}

// Finalize verifies every response's proof against its member's public key
// share under ctx, combines the first T of them with Lagrange coefficients at
// zero, unblinds, and returns RFC 9497's Finalize output per input. Any T
// members give the same outputs; a response that fails yields a *MemberError.
// Responses beyond T are checked too (naming liars) at a verification each.
func (s *BlindState) Finalize(pub *PublicKeys, ctx Context, responses []*EvaluationResponse) ([][]byte, error) {
	if pub == nil {
		return nil, errors.New("oprf: finalize: no public keys")
	}
	if err := pub.Committee.check(); err != nil {
		return nil, err
	}
	if len(pub.Shares) != pub.Committee.N {
		return nil, fmt.Errorf("oprf: finalize: %d public key shares for %d members", len(pub.Shares), pub.Committee.N)
	}
	if err := ctx.check(); err != nil {
		return nil, fmt.Errorf("oprf: finalize: %w", err)
	}
	t := pub.Committee.T
	if len(responses) < t {
		return nil, fmt.Errorf("oprf: finalize: %d responses, threshold needs %d", len(responses), t)
	}
	verifier := dleq.Verifier{Params: ctx.proofParams()}
	seen := make(map[int]bool, len(responses))
	for _, r := range responses {
		if r == nil {
			return nil, errors.New("oprf: finalize: nil response")
		}
		if err := s.verify(pub, verifier, r, seen); err != nil {
			return nil, &MemberError{r.Member, err}
		}
		seen[r.Member] = true
	}
	return s.combine(responses[:t])
}

// combine makes the outputs from T verified responses.
func (s *BlindState) combine(use []*EvaluationResponse) ([][]byte, error) {
	t := len(use)
	indices := make([]int, t)
	for k, r := range use {
		indices[k] = r.Member
	}
	lambda := lagrangeAtZero(indices)

	out := make([][]byte, len(s.inputs))
	inv := invertAll(s.blinds)
	coef := g.NewScalar()
	term := g.NewElement()
	for i, in := range s.inputs {
		// N = r^-1 · Σ_j λ_j Z_j = k·H(input); folding r^-1 into λ_j saves
		// a point multiplication per input.
		n := g.Identity()
		for k, r := range use {
			coef.Mul(lambda[k], inv[i])
			n.Add(n, term.Mul(r.Elements[i], coef))
		}
		enc, err := n.MarshalBinaryCompress()
		if err != nil {
			return nil, fmt.Errorf("oprf: finalize: encode element: %w", err)
		}
		out[i] = finalizeHash(in, enc)
	}
	return out, nil
}

// FinalizeValid is Finalize that sets aside the responses that fail (each a
// *MemberError in bad) and combines the first T that verify; it fails only
// with fewer than T that do. Responses after those T are not checked (a
// verification is two thirds of the cost): a participant goes on without
// a lying member, and names one only if it stood among the first it used.
func (s *BlindState) FinalizeValid(pub *PublicKeys, ctx Context, responses []*EvaluationResponse) (out [][]byte, bad []*MemberError, err error) {
	if pub == nil || pub.Committee.check() != nil || len(pub.Shares) != pub.Committee.N || ctx.check() != nil {
		return nil, nil, errors.New("oprf: finalize: no public keys of the committee, or a bad context")
	}
	verifier := dleq.Verifier{Params: ctx.proofParams()}
	seen := make(map[int]bool, len(responses))
	var good []*EvaluationResponse
	for _, r := range responses {
		if len(good) == pub.Committee.T {
			break
		}
		if r == nil {
			return nil, nil, errors.New("oprf: finalize: nil response")
		}
		if err := s.verify(pub, verifier, r, seen); err != nil {
			bad = append(bad, &MemberError{r.Member, err})
			continue
		}
		seen[r.Member] = true
		good = append(good, r)
	}
	if len(good) < pub.Committee.T {
		return nil, bad, fmt.Errorf("oprf: finalize: %d of %d responses verify, threshold needs %d", len(good), len(responses), pub.Committee.T)
	}
	out, err = s.combine(good[:pub.Committee.T])
	return out, bad, err
}

// VerifyEvaluation checks a member's response to req against the member's
// public key share: what a relay that kept both can check of a complaint.
func VerifyEvaluation(pub *PublicKeys, req *EvaluationRequest, r *EvaluationResponse) error {
	if pub == nil || req == nil || r == nil || pub.Committee.check() != nil || len(pub.Shares) != pub.Committee.N {
		return errors.New("oprf: verify: missing public keys of the committee, request or response")
	}
	if err := req.Context.check(); err != nil {
		return fmt.Errorf("oprf: verify: %w", err)
	}
	s := &BlindState{elements: req.Elements}
	if err := s.verify(pub, dleq.Verifier{Params: req.Context.proofParams()}, r, map[int]bool{}); err != nil {
		return &MemberError{r.Member, err}
	}
	return nil
}

func (s *BlindState) verify(pub *PublicKeys, v dleq.Verifier, r *EvaluationResponse, seen map[int]bool) error {
	if r.Member < 1 || r.Member > pub.Committee.N {
		return fmt.Errorf("index outside 1..%d", pub.Committee.N)
	}
	if seen[r.Member] {
		return errors.New("answered twice")
	}
	if len(r.Elements) != len(s.elements) {
		return fmt.Errorf("returned %d evaluations for %d points", len(r.Elements), len(s.elements))
	}
	for i, z := range r.Elements {
		if err := checkElement(z); err != nil {
			return fmt.Errorf("evaluation %d: %w", i, err)
		}
	}
	// The proof is checked against our own blinded points, so a response for
	// other points, another context or another member's key cannot pass.
	if r.proof == nil || !v.VerifyBatchRFC9497(pub.Shares[r.Member-1], s.elements, r.Elements, r.proof) {
		return errors.New("evaluation proof does not verify against the member's public key share")
	}
	return nil
}

// invertAll inverts non-zero scalars with one inversion and three
// multiplications each (Montgomery's trick); an inversion costs about as much
// as half a point multiplication.
func invertAll(xs []Scalar) []Scalar {
	out := make([]Scalar, len(xs))
	acc := scalarOf(1)
	for i, x := range xs {
		out[i] = acc.Copy() // x_0···x_{i-1}
		acc.Mul(acc, x)
	}
	acc.Inv(acc)
	for i := len(xs) - 1; i >= 0; i-- {
		out[i].Mul(out[i], acc)
		acc.Mul(acc, xs[i])
	}
	return out
}
