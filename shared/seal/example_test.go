package seal_test

import (
	"fmt"

	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
)

// Two participants seal their parts of the same samples' values; the
// server adds the ciphertexts without a key; a participant opens the sum.
func Example() {
	s, _ := seal.NewBGV() // the server holds only this
	sec := secret.FromSeed(1)
	alice, _ := s.NewKey(sec.Derive(seal.KeyPurpose))
	bob, _ := s.NewKey(sec.Derive(seal.KeyPurpose))

	a, _ := seal.SealSlots(alice, []int{0, 1}, []float64{0.25, 1.5}, nil)
	b, _ := seal.SealSlots(bob, []int{0, 1}, []float64{0.5, -1}, nil)
	sum, _ := seal.Sum(s, a, b) // on the server

	vals, _ := seal.OpenSlots(alice, sum, []int{0, 1})
	fmt.Println(vals)
	// Output: [0.75 0.5]
}
