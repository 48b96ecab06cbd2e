package threshold_test

import (
	"fmt"

	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/seal/threshold"
)

// A 2-of-3 federation: setup through the server, two parties seal, the
// server adds the chunks, parties 2 and 3 switch the sum to party 1's key
// (party 1 may be offline meanwhile), and party 1 opens it.
func Example() {
	scheme, _ := seal.ThresholdScheme()
	f, _ := threshold.New(scheme, threshold.Config{Federation: "fed-42", Parties: []threshold.PartyID{1, 2, 3}, Threshold: 2})
	link := []byte("the federation link secret, 32 B") // from the join link; the server never sees it

	// Setup: every member sends its setup share; the server forwards all of
	// them to everyone, and routes the encrypted Shamir shares by recipient.
	parties := map[threshold.PartyID]*threshold.Party{}
	var setups []*threshold.SetupShare
	for _, id := range f.Members() {
		p, _ := threshold.NewParty(f, id, link)
		su, _ := p.Setup()
		parties[id], setups = p, append(setups, su)
	}
	inbox := map[threshold.PartyID][]*threshold.EncryptedShare{}
	for _, p := range parties {
		dealt, _ := p.Deal(setups)
		for _, es := range dealt {
			inbox[es.To] = append(inbox[es.To], es)
		}
	}
	for id, p := range parties {
		if err := p.Receive(setups, inbox[id]); err != nil {
			fmt.Println(err)
		}
	}

	// Sealing: ordinary BGV chunks under the collective key.
	a, _ := parties[1].Sealer()
	b, _ := parties[3].Sealer()
	va, _ := seal.SealSlots(a, []int{0, 1}, []float64{0.25, 1.5}, nil)
	vb, _ := seal.SealSlots(b, []int{0, 1}, []float64{0.5, -1}, nil)
	sum, _ := seal.Sum(scheme, va, vb) // on the server, no key

	// Opening for party 1 with the shares of parties 2 and 3.
	active := []threshold.PartyID{2, 3}
	var shares []*threshold.SwitchShare
	for _, id := range active {
		sh, _ := parties[id].SwitchShare(sum[0], active, parties[1].PublicKey())
		shares = append(shares, sh)
	}
	switched, _ := f.AggregateSwitch(sum[0], shares) // on the server, no key
	vals, _ := parties[1].Open(switched)
	fmt.Println(vals[:2])
	// Output: [0.75 0.5]
}
