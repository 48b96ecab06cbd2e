package oprf

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"
)

// Encodings no honest party produces: p = 2^255-19 (a non-canonical encoding
// of the identity), 2^255-1 (out of range), 1 (a "negative" s), the identity,
// and a scalar ≥ ℓ.
var (
	elemP        = mustHex("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")
	elemTooLarge = mustHex("ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")
	elemNegative = mustHex("0100000000000000000000000000000000000000000000000000000000000000")
	elemIdentity = make([]byte, ElementLength)
	scalarAbove  = mustHex("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010") // ℓ itself
)

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// sampleMessages returns valid encodings of each message kind for a 3-of-2
// committee and a 4-point batch.
func sampleMessages(tb testing.TB) (com, share, req, resp []byte) {
	tb.Helper()
	tc := newTestCommittee(tb, 3, 2)
	tc.declare(tb, ctxA, 4)
	st, err := Blind(testInputs(4), nil)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := tc.evals[1].Evaluate(st.Request(ctxA))
	if err != nil {
		tb.Fatal(err)
	}
	must := func(b []byte, err error) []byte {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	return must(tc.dealings[0].Commitment.MarshalBinary()),
		must(tc.dealings[0].Shares[2].MarshalBinary()),
		must(st.Request(ctxA).MarshalBinary()),
		must(r.MarshalBinary())
}

var wireCommittee = Committee{N: 3, T: 2}

// decoders decode each kind with the sample's parameters and re-encode, so
// tests and fuzzers treat the four alike.
var decoders = map[string]func([]byte) ([]byte, error){
	"commitment": func(b []byte) ([]byte, error) {
		c, err := DecodeCommitment(b, wireCommittee)
		if err != nil {
			return nil, err
		}
		return c.MarshalBinary()
	},
	"share": func(b []byte) ([]byte, error) {
		s, err := DecodeSecretShare(b, wireCommittee)
		if err != nil {
			return nil, err
		}
		return s.MarshalBinary()
	},
	"request": func(b []byte) ([]byte, error) {
		r, err := DecodeEvaluationRequest(b, 4)
		if err != nil {
			return nil, err
		}
		return r.MarshalBinary()
	},
	"response": func(b []byte) ([]byte, error) {
		r, err := DecodeEvaluationResponse(b, 4)
		if err != nil {
			return nil, err
		}
		return r.MarshalBinary()
	},
}

func TestWireRoundTrip(t *testing.T) {
	com, share, req, resp := sampleMessages(t)
	for kind, b := range map[string][]byte{"commitment": com, "share": share, "request": req, "response": resp} {
		again, err := decoders[kind](b)
		if err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		if !bytes.Equal(again, b) {
			t.Errorf("%s: re-encoding differs:\n%x\n%x", kind, again, b)
		}
	}
	// Sizes are what the format promises.
	if len(com) != 6+2*ElementLength || len(share) != 6+ScalarLength ||
		len(req) != 10+len(ctxA.FederationID)+len(ctxA.ParticipantID)+4*ElementLength ||
		len(resp) != 8+4*ElementLength+ProofLength {
		t.Errorf("sizes %d %d %d %d", len(com), len(share), len(req), len(resp))
	}
	// A decoded response still verifies: the proof survives the wire.
	tc := newTestCommittee(t, 2, 2)
	tc.declare(t, ctxA, 2)
	st, _ := Blind(testInputs(2), nil)
	if _, err := st.Finalize(tc.pub, ctxA, tc.respond(t, ctxA, st, 1, 2)); err != nil {
		t.Errorf("finalize after the wire: %v", err)
	}
}

// patch returns a copy of b with data written at off.
func patch(b []byte, off int, data []byte) []byte {
	out := append([]byte(nil), b...)
	copy(out[off:], data)
	return out
}

func u16(v int) []byte { return binary.BigEndian.AppendUint16(nil, uint16(v)) }
func u32(v int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

func TestWireRefusesMalformed(t *testing.T) {
	com, share, req, resp := sampleMessages(t)
	reqElems := 10 + len(ctxA.FederationID) + len(ctxA.ParticipantID)
	cases := []struct {
		name, kind string
		data       []byte
		want       string
	}{
		{"empty", "commitment", nil, "truncated"},
		{"trailing byte", "commitment", append(com[:len(com):len(com)], 0), "1 trailing bytes"},
		{"wrong version", "commitment", patch(com, 0, []byte{2}), "wire version 2"},
		{"wrong kind", "commitment", patch(com, 1, []byte{kindShare}), "message kind 2"},
		{"dealer 0", "commitment", patch(com, 2, u16(0)), "dealer index 0"},
		{"dealer outside", "commitment", patch(com, 2, u16(4)), "dealer index 4"},
		{"other threshold", "commitment", patch(com, 4, u16(1)), "1 coefficients, threshold is 2"},
		{"identity coefficient", "commitment", patch(com, 6, elemIdentity), "element 0 is the identity"},
		{"non-canonical identity", "commitment", patch(com, 6+ElementLength, elemP), "element 1: not a canonical"},
		{"element out of range", "commitment", patch(com, 6, elemTooLarge), "element 0: not a canonical"},
		{"negative element", "commitment", patch(com, 6, elemNegative), "element 0: not a canonical"},

		{"trailing byte", "share", append(share[:len(share):len(share)], 0), "trailing"},
		{"request sent as share", "share", req, "message kind 3"},
		{"recipient outside", "share", patch(share, 4, u16(9)), "recipient index 9"},
		{"scalar not reduced", "share", patch(share, 6, scalarAbove), "not a canonical ristretto255 scalar"},

		{"empty federation id", "request", append([]byte{wireVersion, kindRequest, 0, 0}, req[4+len(ctxA.FederationID):]...), "non-empty"},
		{"id longer than its message", "request", patch(req, 2, u16(200)), "truncated"},
		{"id over the limit", "request", patch(req, 2, u16(MaxIDLength+1)), "exceeds 255"},
		{"batch over the cap", "request", patch(req, reqElems-4, u32(5)), "batch of 5 points exceeds the cap of 4"},
		{"huge batch", "request", patch(req, reqElems-4, u32(1<<31)), "exceeds the cap"},
		{"empty batch", "request", patch(req, reqElems-4, u32(0))[:reqElems], "empty batch"},
		{"batch longer than its message", "request", req[:len(req)-ElementLength], "truncated: 4 elements"},
		{"identity point", "request", patch(req, reqElems+2*ElementLength, elemIdentity), "element 2 is the identity"},
		{"non-canonical point", "request", patch(req, reqElems+3*ElementLength, elemP), "element 3: not a canonical"},

		{"member 0", "response", patch(resp, 2, u16(0)), "member 0 outside"},
		{"batch over the cap", "response", patch(resp, 4, u32(5)), "exceeds the cap of 4"},
		{"identity evaluation", "response", patch(resp, 8, elemIdentity), "element 0 is the identity"},
		{"proof scalar not reduced", "response", patch(resp, len(resp)-ScalarLength, scalarAbove), "proof"},
		{"missing proof", "response", resp[:len(resp)-ProofLength], "truncated"},
	}
	for _, c := range cases {
		t.Run(c.kind+"/"+c.name, func(t *testing.T) {
			if _, err := decoders[c.kind](c.data); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
	// Every strict prefix of every message is refused.
	for kind, b := range map[string][]byte{"commitment": com, "share": share, "request": req, "response": resp} {
		for n := range len(b) {
			if _, err := decoders[kind](b[:n]); err == nil {
				t.Errorf("%s: prefix of %d of %d bytes accepted", kind, n, len(b))
			}
		}
	}
	// Caps outside 1..MaxBatch are a caller error.
	if _, err := DecodeEvaluationRequest(req, 0); err == nil {
		t.Error("cap 0 accepted")
	}
	if _, err := DecodeEvaluationResponse(resp, MaxBatch+1); err == nil {
		t.Error("cap above MaxBatch accepted")
	}
}

// fuzzDecoder checks that the decoder never panics and that whatever it
// accepts is the canonical encoding of what it returns.
func fuzzDecoder(f *testing.F, kind string, seed []byte) {
	f.Add(seed)
	f.Add([]byte{})
	f.Add(seed[:len(seed)/2])
	f.Add(append(append([]byte(nil), seed...), 0))
	f.Add(patch(seed, len(seed)-ElementLength, elemP))
	f.Add(patch(seed, len(seed)-ElementLength, elemIdentity))
	f.Fuzz(func(t *testing.T, data []byte) {
		again, err := decoders[kind](data)
		if err != nil {
			return
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("accepted a non-canonical %s:\n in %x\nout %x", kind, data, again)
		}
	})
}

func FuzzDecodeCommitment(f *testing.F) {
	com, _, _, _ := sampleMessages(f)
	fuzzDecoder(f, "commitment", com)
}

func FuzzDecodeSecretShare(f *testing.F) {
	_, share, _, _ := sampleMessages(f)
	f.Add(patch(share, 6, scalarAbove))
	fuzzDecoder(f, "share", share)
}

func FuzzDecodeEvaluationRequest(f *testing.F) {
	_, _, req, _ := sampleMessages(f)
	fuzzDecoder(f, "request", req)
}

func FuzzDecodeEvaluationResponse(f *testing.F) {
	_, _, _, resp := sampleMessages(f)
	fuzzDecoder(f, "response", resp)
}
