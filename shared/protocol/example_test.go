package protocol_test

import (
	"context"
	"fmt"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
)

// A whole federation in one process: 2 sample groups x 2 feature groups,
// the coordinator and four participants over the in-memory transport.
func ExampleServe() {
	d, _ := dataset.Load("synthetic:400,10", dataset.Options{Holdout: 0.1})
	spec, _ := partition.Parse("grid:2,2")
	blocks, _ := spec.Split(d)

	scheme := seal.Plaintext{}
	coord, _ := protocol.NewCoordinator(protocol.Config{Lambda: 1e-2, Inner: 20, Rounds: 50, Clients: len(blocks)}, scheme)
	sec := secret.FromSeed(1) // in a real federation: secret.New(), shared in the join link
	mem, _ := protocol.NewMemory(len(blocks), func(k int) (*protocol.Participant, error) {
		return protocol.NewParticipant(&blocks[k], sec, seal.PlainKey{S: scheme})
	})
	if err := protocol.Serve(context.Background(), coord, mem, nil); err != nil {
		panic(err)
	}
	h := coord.History()
	first, last := h[0], h[len(h)-1]
	// Training stops before the 50 rounds once the duality gap certifies
	// the model within 1 % of the optimum (Config.Tol).
	fmt.Println(len(h)-1, "rounds; within 1 % of the optimum:", coord.Bound() <= 0.01, "; primal fell:", last.Primal < first.Primal, "; dual rose:", last.Dual > first.Dual)
	// Output: 29 rounds; within 1 % of the optimum: true ; primal fell: true ; dual rose: true
}
