package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/model"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/session"
)

// modelUsage is the --model flag's help, the same on every command.
const modelUsage = "write the model to FILE as LIBLINEAR's model file (liblinear-predict reads it; hyfed predict too) and its settings and metrics to FILE.json; a federation's model is the round with the lowest primal"

// biasOf returns the 1-based feature that holds hyfed's constant bias and
// its value, or 0: the built-in images end with it (dataset.Bias).
func biasOf(d *dataset.Dataset) (int, float64) {
	if d.Image != nil && d.Image.Extra == 1 {
		return d.M(), dataset.Bias
	}
	return 0, 0
}

// writeModel writes a model file and its sidecar and says so on stderr.
func writeModel(path, lossName string, w []float64, info *model.Info, stderr io.Writer) error {
	m, err := model.New(lossName, w)
	if err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	info.NumFeatures = m.NumFeatures
	if err := model.WriteFiles(path, m, info); err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	what := "the last iterate"
	if info.Best {
		what = "the iterate with the lowest primal"
	}
	fmt.Fprintf(stderr, "model: %s (round %d, %s) and %s\n", path, info.ModelRound, what, model.SidecarPath(path))
	return nil
}

// experimentInfo is the sidecar of hyfed experiment's model (hist: the
// run's rounds, for the dual of the model's round).
func experimentInfo(s *experiment.Summary, o experiment.Options, d *dataset.Dataset, hist []protocol.RoundMetrics) *model.Info {
	it := s.Model
	algo := o.Algo
	if algo == "" {
		algo = protocol.AlgoHyFDCA
	}
	info := &model.Info{Source: "experiment", Algorithm: algo, Data: s.Data, Positive: o.Positive, Partition: s.Partition,
		Clients: s.Clients, Scheme: s.Scheme, Step: s.Step, Loss: s.Loss, Lambda: s.Lambda, Fraction: s.Fraction,
		Inner: s.Inner, Seed: o.Seed, Rounds: s.Rounds, ModelRound: it.Round, Best: it.Best,
		Metrics: model.Metrics{Primal: model.Num(it.Primal), HeldoutAccuracy: model.Num(it.HeldAcc),
			TrainAccuracy: model.Num(it.TrainAcc), PStar: model.Num(s.PStar), Bound: model.Num(float64(s.Bound))}}
	info.BiasFeature, info.BiasValue = biasOf(d)
	if it.Best {
		info.Metrics.RelativeLoss = model.Num(float64(s.BestRelativeLoss))
	}
	for _, r := range hist {
		if r.Round == it.Round && it.Best {
			info.Metrics.Dual = model.Num(r.Dual) // the dual values of the model's round
		}
	}
	return info
}

// centralInfo is the sidecar of hyfed central's model.
func centralInfo(r *central.Result, d *dataset.Dataset, data, positive string, seed uint64) *model.Info {
	info := &model.Info{Source: "central", Algorithm: "sdca", Data: data, Positive: positive, Loss: r.LossFunction,
		Lambda: r.Lambda, Seed: int64(seed), Rounds: r.Epochs, ModelRound: r.Epochs,
		Metrics: model.Metrics{Primal: model.Num(r.Primal), Dual: model.Num(r.Dual), TrainAccuracy: model.Num(r.TrainAcc)}}
	if r.NumHeldout > 0 {
		info.Metrics.HeldoutAccuracy = model.Num(r.Accuracy)
	}
	info.BiasFeature, info.BiasValue = biasOf(d)
	return info
}

// fetchModel downloads a federation's model file and sidecar
// (GET .../model?format=liblinear and ?format=json) with a token of it.
func fetchModel(ctx context.Context, l session.Link, token string) (*model.Model, *model.Info, error) {
	get := func(format string) ([]byte, error) {
		u := l.Base + "/api/federations/" + url.PathEscape(l.ID) + "/model?format=" + format
		req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s %s", req.URL.Path, resp.Status, b)
		}
		return b, nil
	}
	text, err := get("liblinear")
	if err != nil {
		return nil, nil, err
	}
	m, err := model.ReadLIBLINEAR(bytes.NewReader(text), "the server's model")
	if err != nil {
		return nil, nil, err
	}
	js, err := get("json")
	if err != nil {
		return nil, nil, err
	}
	info, err := model.ParseInfo(js)
	if err != nil {
		return nil, nil, fmt.Errorf("the server's model sidecar: %w", err)
	}
	return m, info, nil
}
