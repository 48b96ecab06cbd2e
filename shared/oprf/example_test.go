package oprf_test

import (
	"bytes"
	"fmt"

	"github.com/hyfed/hyfed/shared/oprf"
)

// A committee of three, any two of whom can evaluate, generates a key; a
// participant gets pseudonyms for its ids from members 1 and 2, and again from
// members 2 and 3, and obtains the same pseudonyms.
func Example() {
	committee := oprf.Committee{N: 3, T: 2}

	// Key generation: everyone deals, then each member combines what it got.
	var dealings []*oprf.Dealing
	var commitments []*oprf.Commitment
	for i := 1; i <= committee.N; i++ {
		d, err := oprf.Deal(committee, i, nil)
		if err != nil {
			panic(err)
		}
		dealings = append(dealings, d)
		commitments = append(commitments, d.Commitment)
	}
	var members []*oprf.Evaluator
	for j := 1; j <= committee.N; j++ {
		var received []*oprf.SecretShare
		for _, d := range dealings {
			received = append(received, d.Shares[j-1])
		}
		share, err := oprf.CombineShares(committee, j, commitments, received)
		if err != nil {
			panic(err)
		}
		ev, err := oprf.NewEvaluator(share)
		if err != nil {
			panic(err)
		}
		members = append(members, ev)
	}
	pub, err := oprf.NewPublicKeys(committee, commitments)
	if err != nil {
		panic(err)
	}

	// A participant declares its rows, blinds its ids and asks two members.
	ctx := oprf.Context{FederationID: "fed-1", ParticipantID: "hospital-a"}
	ids := [][]byte{[]byte("patient-17"), []byte("patient-42")}
	pseudonyms := func(a, b int) [][]byte {
		st, err := oprf.Blind(ids, nil)
		if err != nil {
			panic(err)
		}
		var resps []*oprf.EvaluationResponse
		for _, j := range []int{a, b} {
			resp, err := members[j-1].Evaluate(st.Request(ctx))
			if err != nil {
				panic(err)
			}
			resps = append(resps, resp)
		}
		out, err := st.Finalize(pub, ctx, resps)
		if err != nil {
			panic(err)
		}
		return out
	}
	for _, m := range members {
		if err := m.Declare(ctx, len(ids)); err != nil {
			panic(err)
		}
	}
	p12, p23 := pseudonyms(1, 2), pseudonyms(2, 3)
	fmt.Println("pseudonym bytes:", len(p12[0]))
	fmt.Println("members {1,2} and {2,3} agree:", bytes.Equal(p12[0], p23[0]) && bytes.Equal(p12[1], p23[1]))
	fmt.Println("distinct ids, distinct pseudonyms:", !bytes.Equal(p12[0], p12[1]))
	// Output:
	// pseudonym bytes: 64
	// members {1,2} and {2,3} agree: true
	// distinct ids, distinct pseudonyms: true
}
