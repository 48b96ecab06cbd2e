package partition_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/partition"
)

// tiny returns 6 samples of 4 features, x[i][j] = i+j/10.
func tiny() *dataset.Dataset {
	d := &dataset.Dataset{Name: "tiny", X: dataset.NewDense(6, 4)}
	for i := 0; i < 6; i++ {
		for j := 0; j < 4; j++ {
			d.X.Data[i*4+j] = float64(i) + float64(j)/10
		}
		d.Y = append(d.Y, float64(1-2*(i%2)))
		d.IDs = append(d.IDs, fmt.Sprintf("r%d", i))
		d.Heldout = append(d.Heldout, i == 5)
	}
	return d
}

// Two sample groups x two feature groups: four clients, each entry held once.
func ExampleSpec_Split() {
	d := tiny()
	spec, err := partition.Parse("grid:2,2")
	if err != nil {
		panic(err)
	}
	blocks, err := spec.Split(d)
	if err != nil {
		panic(err)
	}
	for k, b := range blocks {
		fmt.Printf("client %d: samples %v, features %v\n", k, b.IDs, b.Features)
	}
	fmt.Println("sample groups:", partition.Groups(blocks))
	fmt.Println("check:", partition.Check(d, blocks))
	// Output:
	// client 0: samples [r0 r3 r2], features [0 1]
	// client 1: samples [r0 r3 r2], features [2 3]
	// client 2: samples [r5 r1 r4], features [0 1]
	// client 3: samples [r5 r1 r4], features [2 3]
	// sample groups: [[0 1] [2 3]]
	// check: <nil>
}

// A block file: global 1-based feature numbers, the record id as comment.
func ExampleWriteLIBSVM() {
	blocks, _ := partition.Spec{Kind: partition.Vertical, K: 1, Q: 2, Seed: 1}.Split(tiny())
	if err := partition.WriteLIBSVM(os.Stdout, &blocks[1]); err != nil {
		panic(err)
	}
	b, err := partition.ReadBlock(strings.NewReader("# hyfed-block v1 features=4 cols=3-4\n+1 3:0.5 # a\n"), "client-1.libsvm")
	fmt.Println(b.Features, b.X.At(0, 0), err)
	// Output:
	// # hyfed-block v1 features=4 cols=3-4
	// +1 3:0.2 4:0.3 # r0
	// -1 3:3.2 4:3.3 # r3
	// +1 3:2.2 4:2.3 # r2
	// -1 3:5.2 4:5.3 # r5 heldout
	// -1 3:1.2 4:1.3 # r1
	// +1 3:4.2 4:4.3 # r4
	// [2 3] 0.5 <nil>
}
