package e2e

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/model"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/table"
)

// ownFixture is four parties' own spreadsheet exports of a real data set,
// written as no hyfed partition would: scikit-learn's diabetes patients
// (442: age, sex, body mass index, blood pressure and six blood serum
// measurements, raw), held by two clinics with the same columns for
// different patients (with the outcome) and two labs with other columns of
// 70-80 % of the patients (without it); own id strings, rows shuffled, one
// file semicolon-separated with decimal commas.
type ownFixture struct {
	dir     string
	files   []string // clinic_north.csv, clinic_south.csv, lab_lipids.csv, lab_sugar.csv
	sch     *schema.Schema
	ids     []string
	raw     [][]float64 // per patient: the schema's columns, intercept excluded
	held    [][]bool    // per patient and column: some party holds it
	y       []float64
	heldout []bool
}

// ownSchema is the consortium's schema: the organizer's JSON.
const ownSchema = `{"id": "patient",
 "label": {"column": "outcome", "positive": ["progressed"], "negative": ["stable"]},
 "features": [{"name": "age"}, {"name": "sex", "categories": ["1", "2"]}, {"name": "bmi"}, {"name": "bp"},
              {"name": "tc"}, {"name": "ldl"}, {"name": "hdl"}, {"name": "tch"}, {"name": "ltg"}, {"name": "glucose"}],
 "labels": "shared-with-co-holders",
 "heldout": 0.1}
`

func readGzLines(t testing.TB, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		requireOr(t, "the diabetes data (make data): %v", err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(z)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func newOwnFixture(t testing.TB) *ownFixture {
	t.Helper()
	dir, err := dataset.SklearnDir()
	if err != nil {
		requireOr(t, "scikit-learn's data (make data): %v", err)
	}
	rows := readGzLines(t, filepath.Join(dir, "diabetes_data_raw.csv.gz"))
	targets := readGzLines(t, filepath.Join(dir, "diabetes_target.csv.gz"))
	if len(rows) != 442 || len(targets) != 442 {
		t.Fatalf("diabetes: %d rows, %d targets", len(rows), len(targets))
	}
	sch, err := schema.Parse(strings.NewReader(ownSchema))
	if err != nil {
		t.Fatal(err)
	}
	fx := &ownFixture{dir: t.TempDir(), sch: sch}
	rng := rand.New(rand.NewPCG(11, 35))
	// cell[i][k] is patient i's value of raw column k: age sex bmi bp s1..s6.
	cell := make([][]string, len(rows))
	for i, l := range rows {
		cell[i] = strings.Fields(l)
		if len(cell[i]) != 10 {
			t.Fatalf("diabetes row %d: %q", i, l)
		}
		v, err := strconv.ParseFloat(targets[i], 64)
		if err != nil {
			t.Fatal(err)
		}
		y := -1.0
		if v > 140 {
			y = 1
		}
		fx.y = append(fx.y, y)
		fx.ids = append(fx.ids, fmt.Sprintf("DM-%04d-%c", 7*i+1000, 'A'+rune(i%26)))
		fx.heldout = append(fx.heldout, dataset.HoldoutByID(fx.ids[i], sch.Heldout))
		num := func(k int) float64 {
			x, err := strconv.ParseFloat(cell[i][k], 64)
			if err != nil {
				t.Fatal(err)
			}
			return x
		}
		// The schema's columns: age, sex=1, sex=2, bmi, bp, tc..glucose.
		r := []float64{num(0), 0, 0, num(2), num(3), num(4), num(5), num(6), num(7), num(8), num(9)}
		r[map[string]int{"1": 1, "2": 2}[cell[i][1]]] = 1
		fx.raw = append(fx.raw, r)
		fx.held = append(fx.held, make([]bool, 11))
	}
	type party struct {
		file    string
		delim   string
		cols    []int // raw columns 0..9
		names   []string
		label   bool
		members []int
	}
	n := len(rows)
	var north, south, lipids, sugar []int
	for i := range n {
		if i < n/2 {
			north = append(north, i)
		} else {
			south = append(south, i)
		}
		if rng.Float64() < 0.75 {
			lipids = append(lipids, i)
		}
		if rng.Float64() < 0.78 {
			sugar = append(sugar, i)
		}
	}
	parties := []party{
		{"clinic_north.csv", ",", []int{0, 1, 2, 3}, []string{"Age", "Sex", "BMI", "BP"}, true, north},
		{"clinic_south.csv", ";", []int{0, 1, 2, 3}, []string{"age", "sex", "bmi", "bp"}, true, south},
		{"lab_lipids.csv", ",", []int{4, 5, 6}, []string{"tc", "LDL", "HDL"}, false, lipids},
		{"lab_sugar.csv", ",", []int{7, 8, 9}, []string{"tch", "ltg", "Glucose"}, false, sugar},
	}
	schemaCol := []int{0, -1, 3, 4, 5, 6, 7, 8, 9, 10} // raw column -> schema column (sex: its categories)
	for _, p := range parties {
		rng.Shuffle(len(p.members), func(a, b int) { p.members[a], p.members[b] = p.members[b], p.members[a] })
		var sb strings.Builder
		if p.delim == ";" {
			sb.WriteString("\ufeff") // a spreadsheet's export
		}
		head := append([]string{"patient"}, p.names...)
		if p.label {
			head = append(head, "outcome")
		}
		head = append(head, "notes")
		sb.WriteString(strings.Join(head, p.delim) + "\r\n")
		for _, i := range p.members {
			rec := []string{fx.ids[i]}
			for _, k := range p.cols {
				v := cell[i][k]
				if p.delim == ";" {
					v = strings.Replace(v, ".", ",", 1)
				}
				rec = append(rec, v)
				if c := schemaCol[k]; c >= 0 {
					fx.held[i][c] = true
				} else {
					fx.held[i][1], fx.held[i][2] = true, true
				}
			}
			if p.label {
				rec = append(rec, map[bool]string{true: "progressed", false: "stable"}[fx.y[i] > 0])
			}
			rec = append(rec, `"seen; twice, ok"`)
			sb.WriteString(strings.Join(rec, p.delim) + "\r\n")
		}
		path := filepath.Join(fx.dir, p.file)
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		fx.files = append(fx.files, path)
	}
	return fx
}

// blocks reads the files as each party's participant does.
func (fx *ownFixture) blocks(t testing.TB) []*partition.Block {
	t.Helper()
	var out []*partition.Block
	for _, f := range fx.files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b, m, err := table.Load(filepath.Base(f), data, fx.sch, table.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s", m)
		out = append(out, b)
	}
	return out
}

// pooled is the pooled table scaled by the model's maps, a value nobody
// holds standing at the mean (0), as the federation trained.
func (fx *ownFixture) pooled(t testing.TB, ws []model.Weight) *dataset.Dataset {
	t.Helper()
	m := fx.sch.NumColumns()
	if len(ws) != m {
		t.Fatalf("%d weights for %d columns", len(ws), m)
	}
	d := &dataset.Dataset{Name: "pooled", X: dataset.NewDense(len(fx.raw), m)}
	for i, r := range fx.raw {
		for j, v := range r {
			if fx.held[i][j] {
				d.X.Data[i*m+j] = ws[j].Apply(v)
			}
		}
		d.X.Data[i*m+m-1] = ws[m-1].Apply(1)
		d.Y = append(d.Y, fx.y[i])
		d.IDs = append(d.IDs, fx.ids[i])
		d.Heldout = append(d.Heldout, fx.heldout[i])
	}
	return d
}

// checkOwnModel fetches the federation's model and checks it against the
// optimum of the pooled table scaled by its own sidecar's maps, found by
// central SDCA and by the plain dual coordinate descent below.
func (fx *ownFixture) checkOwnModel(t testing.TB, base, id string) {
	t.Helper()
	var info model.Info
	if code := callAPI(t, "GET", base+"/api/federations/"+id+"/model?format=json", adminToken(id), nil, &info); code != http.StatusOK {
		t.Fatalf("model sidecar: HTTP %d", code)
	}
	if info.Schema == nil || len(info.Weights) != fx.sch.NumColumns() {
		t.Fatalf("sidecar: schema %v, %d weights", info.Schema != nil, len(info.Weights))
	}
	for j, c := range fx.sch.Columns() {
		if info.Weights[j].Name != c.Name {
			t.Errorf("weight %d is named %q, want %q", j, info.Weights[j].Name, c.Name)
		}
	}
	w := make([]float64, len(info.Weights))
	for j, x := range info.Weights {
		w[j] = x.Weight
	}
	d := fx.pooled(t, info.Weights)
	const lambda = 1e-3 // the default
	p, _, _, _ := central.Objectives(d, loss.Hinge{}, lambda, w, nil)
	opt, err := central.Solve(context.Background(), d, central.Config{Lambda: lambda, Loss: loss.Hinge{}, Tol: 1e-10, MaxEpochs: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if own := dualCD(d, lambda); math.Abs(own-opt.Primal) > 1e-6*opt.Primal {
		t.Fatalf("two solvers disagree on the pooled optimum: SDCA %v, dual coordinate descent %v", opt.Primal, own)
	}
	rel := (p - opt.Primal) / opt.Primal
	bound := math.NaN()
	if info.Metrics.Bound != nil {
		bound = *info.Metrics.Bound
	}
	t.Logf("the federation's model: P %.6g on the pooled scaled table, optimum %.6g: relative %.3g (round %d of %d; certified %.3g)", p, opt.Primal, rel, info.ModelRound, info.Rounds, bound)
	if rel > 1e-2 {
		t.Errorf("the model is %.3g above the pooled optimum, want within 1e-2", rel)
	}
	// The federation's certificate holds on the pooled table (up to the
	// rounding of the sidecar's maps).
	if !(rel <= bound+1e-6) {
		t.Errorf("the sidecar certifies the model within %.3g; on the pooled table it is %.3g above the optimum", bound, rel)
	}
}

// dualCD is the hinge SVM's optimum by plain cyclic dual coordinate
// descent (LIBLINEAR's, without shrinking): a solver apart from the
// federation's and from central's, run to a tiny gap.
func dualCD(d *dataset.Dataset, lambda float64) float64 {
	var rows []int
	for i := range d.N() {
		if !d.Heldout[i] {
			rows = append(rows, i)
		}
	}
	n := float64(len(rows))
	c := 1 / (lambda * n) // LIBLINEAR's C for (lambda/2)|w|^2 + (1/n) sum hinge
	m := d.M()
	w := make([]float64, m)
	a := make([]float64, len(rows))
	for range 20000 {
		maxPG := 0.0
		for r, i := range rows {
			x := d.X.Data[i*m : (i+1)*m]
			y, q := d.Y[i], 0.0
			g := -1.0
			for j, v := range x {
				g += y * w[j] * v
				q += v * v
			}
			pg := g
			if a[r] == 0 {
				pg = math.Min(g, 0)
			} else if a[r] == c {
				pg = math.Max(g, 0)
			}
			maxPG = math.Max(maxPG, math.Abs(pg))
			if pg == 0 || q == 0 {
				continue
			}
			na := math.Min(math.Max(a[r]-g/q, 0), c)
			for j, v := range x {
				w[j] += (na - a[r]) * y * v
			}
			a[r] = na
		}
		if maxPG < 1e-10 {
			break
		}
	}
	// w is LIBLINEAR's; hyfed's primal is its objective times lambda.
	p, _, _, _ := central.Objectives(d, loss.Hinge{}, lambda, w, nil)
	return p
}

// TestOwnFilesNative: four parties' own CSV files train natively over
// websockets, with the schema and every other setting at its default, to
// within 1e-2 of the pooled table's optimum.
func TestOwnFilesNative(t *testing.T) {
	fx := newOwnFixture(t)
	ts := startServer(t)
	req := server.NewCreateRequest()
	req.Clients, req.Schema = 4, fx.sch
	link, resp := createFederation(t, ts.URL, req)
	runNative(t, link, fx.blocks(t))
	st := waitStatus(t, ts.URL, resp.ID, "the end", nativeLife, func(s server.Status) bool { return s.State == "finished" })
	if len(st.Warnings) > 0 || len(st.Notices) > 0 {
		t.Errorf("warnings %q, notices %q", st.Warnings, st.Notices)
	}
	if want := countUnlabelled(fx); st.LeftOut != want {
		t.Errorf("%d samples left out, want the %d no clinic holds", st.LeftOut, want)
	}
	if st.Heldout == 0 {
		t.Errorf("no held-out sample: the schema holds out 10 %%")
	}
	fx.checkOwnModel(t, ts.URL, resp.ID)
}

// countUnlabelled is the patients no clinic holds: none, since the clinics
// hold every patient between them.
func countUnlabelled(*ownFixture) int { return 0 }

// TestOwnFilesRawSuiteSet: a convergence-suite data set left unscaled
// (breast-cancer's raw measurements, 1e-3 to 4e3) as four parties' files
// (grid:2,2, labels in two of them) trains to within 1e-2 of its pooled
// optimum: the federation's own scaling makes raw values train.
func TestOwnFilesRawSuiteSet(t *testing.T) {
	d, err := dataset.Load("breast-cancer", dataset.Options{Raw: true, Dense: true})
	if err != nil {
		requireOr(t, "breast-cancer (make data): %v", err)
	}
	spec, err := partition.Parse("grid:2,2")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := spec.Split(d)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, schemaPath, err := partition.WriteNamed(dir, d, blocks, partition.NamedOptions{Labels: []bool{true, false, true, false}})
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := schema.Parse(strings.NewReader(string(text)))
	if err != nil {
		t.Fatal(err)
	}
	var own []*partition.Block
	for _, f := range files {
		data, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := table.Load(filepath.Base(f.Path), data, sch, table.Options{})
		if err != nil {
			t.Fatal(err)
		}
		own = append(own, b)
	}
	cfg := protocol.Defaults()
	cfg.Schema, cfg.Clients = sch, len(own)
	scheme := seal.Plaintext{Len: 4096}
	c, err := protocol.NewCoordinator(cfg, scheme)
	if err != nil {
		t.Fatal(err)
	}
	sec := secret.FromSeed(5)
	key, err := seal.NewKeyFor(scheme, sec.Derive(seal.KeyPurpose))
	if err != nil {
		t.Fatal(err)
	}
	mem, err := protocol.NewMemory(len(own), func(k int) (*protocol.Participant, error) { return protocol.NewParticipant(own[k], sec, key) })
	if err != nil {
		t.Fatal(err)
	}
	if err := protocol.Serve(context.Background(), c, mem, nil); err != nil {
		t.Fatal(err)
	}
	_, ws, err := model.FromSchema(cfg.Loss, c.Model().W, sch, c.Scaling())
	if err != nil {
		t.Fatal(err)
	}
	// The pooled table: every raw value mapped as the federation did.
	m := sch.NumColumns()
	pooled := &dataset.Dataset{Name: "pooled", X: dataset.NewDense(d.N(), m), Y: d.Y, IDs: d.IDs, Heldout: make([]bool, d.N())}
	for i := range d.N() {
		for j := 0; j < m-1; j++ {
			pooled.X.Data[i*m+j] = ws[j].Apply(d.X.At(i, j))
		}
		pooled.X.Data[i*m+m-1] = ws[m-1].Apply(1)
	}
	w := make([]float64, m)
	for j := range ws {
		w[j] = ws[j].Weight
	}
	p, _, _, _ := central.Objectives(pooled, loss.Hinge{}, cfg.Lambda, w, nil)
	opt := dualCD(pooled, cfg.Lambda)
	rel := (p - opt) / opt
	t.Logf("breast-cancer raw, grid:2,2: P %.6g, pooled optimum %.6g: relative %.3g after %d rounds", p, opt, rel, cfg.Rounds)
	if rel > 1e-2 {
		t.Errorf("%.3g above the pooled optimum, want within 1e-2", rel)
	}
}
