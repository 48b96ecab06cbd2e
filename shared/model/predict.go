package model

import (
	"fmt"

	"github.com/hyfed/hyfed/shared/dataset"
)

// Prediction is one sample's: its decision value x.w and the label it
// gives (LIBLINEAR's rule: +1 above 0, else -1).
type Prediction struct {
	ID        string
	Label     float64 // the sample's own, +1 or -1
	Predicted float64
	Score     float64
	Heldout   bool
}

// Result counts a model's correct predictions on a data set, in all and
// split into held-out and training samples (the split the data set has:
// built-in, a CSV "heldout" column or --holdout).
type Result struct {
	Samples         int      `json:"samples"`
	Accuracy        float64  `json:"accuracy"`
	HeldoutSamples  int      `json:"heldout_samples"`
	HeldoutAccuracy *float64 `json:"heldout_accuracy"` // null without held-out samples
	TrainSamples    int      `json:"train_samples"`
	TrainAccuracy   *float64 `json:"train_accuracy"`
}

// Predict checks that d fits the model (Check) and predicts every sample.
func Predict(m *Model, info *Info, modelName string, d *dataset.Dataset) ([]Prediction, Result, error) {
	if err := Check(m, info, modelName, d); err != nil {
		return nil, Result{}, err
	}
	out := make([]Prediction, d.N())
	var ok, heldOK, held int
	for i := range out {
		idx, val := d.X.Row(i)
		z := m.Score(idx, val)
		p := Prediction{ID: d.IDs[i], Label: d.Y[i], Predicted: Label(z), Score: z, Heldout: d.Heldout[i]}
		out[i] = p
		right := p.Predicted == p.Label
		if right {
			ok++
		}
		if p.Heldout {
			held++
			if right {
				heldOK++
			}
		}
	}
	n := d.N()
	r := Result{Samples: n, Accuracy: float64(ok) / float64(n), HeldoutSamples: held, TrainSamples: n - held}
	if held > 0 {
		r.HeldoutAccuracy = Num(float64(heldOK) / float64(held))
	}
	if n > held {
		r.TrainAccuracy = Num(float64(ok-heldOK) / float64(n-held))
	}
	return out, r, nil
}

// where names sample i of d for an error: its file line, else its id.
func where(d *dataset.Dataset, i int) string {
	if d.Lines != nil {
		return fmt.Sprintf("%s:%d (record %s)", d.Name, d.Lines[i], d.IDs[i])
	}
	return fmt.Sprintf("data %s, sample %s", d.Name, d.IDs[i])
}

// Check says whether data d fits model m: no feature beyond the model's
// (the data would not be what the model was trained on), no fewer
// features in dense data (a missing column shifts nothing in LIBSVM, where
// an absent feature is 0, but is an error in a CSV table), and, when the
// sidecar names hyfed's bias feature, that feature at its constant value
// in every sample (data without it scores every sample off by the bias).
func Check(m *Model, info *Info, modelName string, d *dataset.Dataset) error {
	if err := checkBeyond(m, modelName, d); err != nil {
		return err
	}
	M := m.NumFeatures
	if d.M() < M && !d.X.IsSparse() {
		return fmt.Errorf("data %s has %d feature columns, model %s has %d features (nr_feature)", d.Name, d.M(), modelName, M)
	}
	if info != nil && info.BiasFeature > 0 {
		j := info.BiasFeature - 1
		for i := 0; i < d.N(); i++ {
			v := 0.0
			if j < d.M() {
				v = d.X.At(i, j)
			}
			if v != info.BiasValue {
				return fmt.Errorf("%s: feature %d is %v, but model %s was trained with hyfed's bias there, a constant %v (bias_feature in %s): add it to every sample (LIBSVM: %d:%v)",
					where(d, i), j+1, v, modelName, info.BiasValue, SidecarPath(modelName), j+1, info.BiasValue)
			}
		}
	}
	return nil
}

// PartialScores returns each sample's share of x.w over the features d
// holds: a participant's partial score in vertical or hybrid data, where
// a sample's full score is the sum of its holders' shares. Only features
// beyond the model's are refused (absent ones are another holder's).
func PartialScores(m *Model, modelName string, d *dataset.Dataset) ([]float64, error) {
	if err := checkBeyond(m, modelName, d); err != nil {
		return nil, err
	}
	out := make([]float64, d.N())
	for i := range out {
		idx, val := d.X.Row(i)
		out[i] = m.Score(idx, val)
	}
	return out, nil
}

// checkBeyond refuses data with a feature beyond the model's.
func checkBeyond(m *Model, modelName string, d *dataset.Dataset) error {
	M := m.NumFeatures
	if d.M() > M {
		for i := 0; i < d.N(); i++ {
			idx, val := d.X.Row(i)
			last := len(val) - 1
			if d.X.IsSparse() && len(idx) > 0 {
				last = int(idx[len(idx)-1])
			}
			if last >= M {
				return fmt.Errorf("%s: feature %d, but model %s has %d features (nr_feature): is this the data the model was trained on?", where(d, i), last+1, modelName, M)
			}
		}
		return fmt.Errorf("data %s has %d features, model %s has %d (nr_feature)", d.Name, d.M(), modelName, M)
	}
	return nil
}
