package dataset_test

import (
	"fmt"
	"strings"

	"github.com/hyfed/hyfed/shared/dataset"
)

func ExampleLoad() {
	// 1000 samples, 20 features (the last a constant bias), dense; a
	// fifth held out by record id.
	d, err := dataset.Load("synthetic:1000,20", dataset.Options{Holdout: 0.2})
	if err != nil {
		panic(err)
	}
	fmt.Println(d.N(), d.M(), d.X.IsSparse(), d.IDs[0], d.N()-d.NumTrain() > 150)
	// Output: 1000 20 false syn-0 true
}

func ExampleReadLIBSVM() {
	text := "+1 1:0.5 7:2 # patient-17\n-1 3:1 # patient-18\n"
	d, err := dataset.ReadLIBSVM(strings.NewReader(text), "example.libsvm", dataset.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(d.IDs, d.Y, d.M(), d.X.NNZ(), d.X.IsSparse())

	_, err = dataset.ReadLIBSVM(strings.NewReader("+1 2:1 1:1\n"), "bad.libsvm", dataset.Options{})
	fmt.Println(err)
	// Output:
	// [patient-17 patient-18] [1 -1] 7 3 true
	// bad.libsvm:1: field 3: feature index 1 does not ascend (previous 2)
}
