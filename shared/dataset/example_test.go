package dataset_test

import (
	"fmt"
	"strings"

	"github.com/hyfed/hyfed/shared/dataset"
)

func ExampleLoad() {
	d, err := dataset.Load("synthetic:1000,20", dataset.Options{Holdout: 0.2})
	if err != nil {
		panic(err)
	}
	fmt.Println(d.N(), d.M(), d.X.IsSparse())
	// Output: 1000 20 false
}

func ExampleReadLIBSVM() {
	text := "+1 1:0.5 7:2 # patient-17\n-1 3:1 # patient-18\n"
	d, err := dataset.ReadLIBSVM(strings.NewReader(text), "example.libsvm", dataset.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(d.IDs, d.Y, d.M(), d.X.NNZ())
	// Output: [patient-17 patient-18] [1 -1] 7 3
}
