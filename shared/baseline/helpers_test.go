package baseline

import (
	"fmt"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/partition"
)

// prepared is a data set and its blocks, as experiment.Prepare makes them
// (which the tests of this package cannot import: experiment runs
// federations, whose participants use this package).
type prepared struct {
	Data   *dataset.Dataset
	Blocks []partition.Block
}

func prepare(data string, holdout float64, spec string) (*prepared, error) {
	d, err := dataset.Load(data, dataset.Options{Holdout: holdout})
	if err != nil {
		return nil, err
	}
	s, err := partition.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("partition %s: %w", spec, err)
	}
	blocks, err := s.Split(d)
	if err != nil {
		return nil, fmt.Errorf("partition %s: %w", spec, err)
	}
	return &prepared{Data: d, Blocks: blocks}, nil
}
