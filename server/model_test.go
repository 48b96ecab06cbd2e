package server

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/hyfed/hyfed/shared/protocol"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hyfed/hyfed/shared/model"
	"github.com/hyfed/hyfed/shared/secret"
)

// get sends GET with a token and returns the status, headers and body.
func (ts *testServer) download(t *testing.T, path, token string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", ts.http.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// TestModelDownload: GET .../model?format=liblinear is the model the
// federation hands out (the ModelView's w, bit for bit) as LIBLINEAR's
// model file and ?format=json its sidecar, both downloads, for any token
// of the federation and no one else; before training there is none.
func TestModelDownload(t *testing.T) {
	p := smallData(t)
	ts := startServer(t, t.TempDir())
	const rounds = 8
	l, fed := ts.create(t, CreateRequest{Name: "model", PStar: 0.25, Config: protocol.Config{Lambda: 1e-2, Rounds: rounds, IIC: 0.2, Seed: 3, Clients: len(p.Blocks), NumFeatures: p.Data.M()}}, secret.FromSeed(3), "plaintext")
	base := "/api/federations/" + fed.ID + "/model"

	if code, _, b := ts.download(t, base+"?format=liblinear", fed.AdminToken); code != http.StatusConflict || !strings.Contains(string(b), "training has not started") {
		t.Fatalf("before training: HTTP %d %s", code, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := runAll(ctx, l, blockPtrs(p.Blocks)); err != nil {
		t.Fatal(err)
	}
	var view ModelView
	if code := ts.call(t, "GET", base, l.Invite, nil, &view); code != http.StatusOK || view.Round != rounds || !view.Best {
		t.Fatalf("model view: HTTP %d %+v", code, view)
	}

	for _, tc := range []struct{ who, token string }{{"invite", l.Invite}, {"admin", fed.AdminToken}, {"viewer", fed.ViewerToken}} {
		t.Run(tc.who, func(t *testing.T) {
			code, h, b := ts.download(t, base+"?format=liblinear", tc.token)
			if code != http.StatusOK {
				t.Fatalf("HTTP %d %s", code, b)
			}
			wantName := "hyfed-" + fed.ID + "-round"
			if cd := h.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment; filename=\""+wantName) || !strings.HasSuffix(cd, ".model\"") {
				t.Fatalf("Content-Disposition %q", cd)
			}
			m, err := model.ReadLIBLINEAR(bytes.NewReader(b), "download")
			if err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			if m.Solver != model.SolverHinge || m.NumFeatures != p.Data.M() || len(m.W) != len(view.W) {
				t.Fatalf("model %+v", m)
			}
			for j, v := range view.W {
				if math.Float64bits(m.W[j]) != math.Float64bits(float64(v)) {
					t.Fatalf("w[%d]: file %v, model view %v", j, m.W[j], v)
				}
			}

			code, h, b = ts.download(t, base+"?format=json", tc.token)
			if code != http.StatusOK || !strings.HasSuffix(h.Get("Content-Disposition"), ".model.json\"") || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
				t.Fatalf("sidecar: HTTP %d %v", code, h)
			}
			var info model.Info
			if err := json.Unmarshal(b, &info); err != nil {
				t.Fatal(err)
			}
			if info.Format != model.Format || info.Source != "federation" || info.Algorithm != "hyfdca" || info.Loss != "hinge" ||
				info.Lambda != 1e-2 || info.Rounds != rounds || info.ModelRound != view.ModelRound || !info.Best ||
				info.NumFeatures != p.Data.M() || info.Metrics.Primal == nil || *info.Metrics.Primal != float64(view.Primal) ||
				*info.Metrics.HeldoutAccuracy != float64(view.HeldoutAccuracy) || info.Metrics.Dual == nil ||
				*info.Metrics.PStar != 0.25 || *info.Metrics.RelativeLoss != (*info.Metrics.Primal-0.25)/0.25 {
				t.Fatalf("sidecar %s\nmodel view %+v", b, view)
			}
		})
	}
	for _, tc := range []struct {
		name, query, token string
		code               int
	}{
		{"no token", "?format=liblinear", "none", http.StatusUnauthorized},
		{"another federation's token", "?format=json", "not-a-token", http.StatusUnauthorized},
		{"unknown format", "?format=onnx", l.Invite, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := tc.token
			if tok == "none" {
				tok = ""
			}
			if code, _, b := ts.download(t, base+tc.query, tok); code != tc.code {
				t.Fatalf("HTTP %d %s, want %d", code, b, tc.code)
			}
		})
	}
}
