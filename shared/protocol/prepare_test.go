package protocol

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/seal"
)

// ownData is a small consortium's raw data: 120 customers with age,
// income (raw, in the tens of thousands, one outlier), a category and a
// label, dealt as four parties hold them: A and B the same columns of
// different customers (with the labels), C and D other columns of most
// customers, without labels.
type ownData struct {
	sch    *schema.Schema
	raw    [][]float64 // per customer: the schema's columns, intercept excluded
	y      []float64
	ids    []string
	blocks []partition.Block
}

func makeOwnData(t *testing.T, policy string) *ownData {
	t.Helper()
	sch := &schema.Schema{ID: "id", Label: schema.Label{Column: "churn", Positive: []string{"yes"}},
		Features: []schema.Feature{{Name: "age"}, {Name: "plan", Categories: []string{"basic", "plus", "pro"}}, {Name: "income"}, {Name: "calls"}},
		Labels:   policy}
	if err := sch.Validate(); err != nil {
		t.Fatal(err)
	}
	const n = 120
	rng := rand.New(rand.NewPCG(3, 5))
	d := &ownData{sch: sch}
	for i := range n {
		age := 20 + 50*rng.Float64()
		plan := rng.IntN(3)
		income := 30000 + 20000*rng.NormFloat64()
		if i == 17 {
			income = 2e6 // an outlier the clip keeps sealable
		}
		calls := float64(rng.IntN(30))
		z := 0.05*(age-45) + 0.8*float64(plan-1) - 0.00003*(income-30000) + 0.1*(calls-15) + 0.7*rng.NormFloat64()
		y := 1.0
		if z < 0 {
			y = -1
		}
		row := []float64{age, 0, 0, 0, income, calls}
		row[1+plan] = 1
		d.raw = append(d.raw, row)
		d.y = append(d.y, y)
		d.ids = append(d.ids, fmt.Sprintf("cust-%03d", i))
	}
	ic := sch.InterceptColumn()
	mk := func(rows []int, cols []int, labels bool) partition.Block {
		b := partition.Block{NumFeatures: sch.NumColumns(), Features: append(append([]int{}, cols...), ic),
			X: dataset.NewDense(len(rows), len(cols)+1), Raw: &partition.Raw{HasLabels: labels}}
		for r, i := range rows {
			b.IDs = append(b.IDs, d.ids[i])
			b.Heldout = append(b.Heldout, i%10 == 3)
			y := 0.0
			if labels {
				y = d.y[i]
			}
			b.Y = append(b.Y, y)
			for j, c := range cols {
				b.X.Data[r*b.X.Cols+j] = d.raw[i][c]
			}
		}
		return b
	}
	var a, bb, cd []int
	for i := range n {
		if i < 60 {
			a = append(a, i)
		} else {
			bb = append(bb, i)
		}
		if i%5 != 0 { // 80 % of the customers
			cd = append(cd, i)
		}
	}
	// Rows in another order than the customers', as files have them.
	rng.Shuffle(len(cd), func(i, j int) { cd[i], cd[j] = cd[j], cd[i] })
	d.blocks = []partition.Block{mk(a, []int{0, 1, 2, 3}, true), mk(bb, []int{0, 1, 2, 3}, true),
		mk(cd, []int{4}, policy == schema.LabelsEveryHolder), mk(cd, []int{5}, policy == schema.LabelsEveryHolder)}
	return d
}

// pooled is the pooled table scaled by the federation's maps: what the
// federated model is measured on. A value no party holds is 0 once scaled
// (the mean), as in the federation.
func (d *ownData) pooled(maps []schema.Map) *dataset.Dataset {
	m := d.sch.NumColumns()
	p := &dataset.Dataset{Name: "pooled", X: dataset.NewDense(len(d.raw), m)}
	for i, row := range d.raw {
		for j, v := range row {
			if j < 4 || i%5 != 0 {
				p.X.Data[i*m+j] = maps[j].Apply(v)
			}
		}
		p.X.Data[i*m+m-1] = schema.InterceptValue
		p.Y = append(p.Y, d.y[i])
		p.IDs = append(p.IDs, d.ids[i])
		p.Heldout = append(p.Heldout, i%10 == 3)
	}
	return p
}

func TestOwnFilesTrainToThePooledOptimum(t *testing.T) {
	d := makeOwnData(t, schema.LabelsShared)
	cfg := Defaults()
	cfg.Schema, cfg.Rounds, cfg.Lambda = d.sch, 150, 1e-2
	f := newFed(t, d.blocks, cfg)
	hist := f.run(t)
	maps := f.coord.Scaling()
	if len(maps) != d.sch.NumColumns() {
		t.Fatalf("%d scaling maps for %d columns", len(maps), d.sch.NumColumns())
	}
	if f.coord.LeftOut() != 0 {
		t.Errorf("%d samples left out; every customer has a label at A or B", f.coord.LeftOut())
	}
	// The federation's maps are the pooled training rows' mean and
	// standard deviation.
	var mean, sq float64
	ntr := 0
	for i, row := range d.raw {
		if i%10 != 3 {
			mean += row[0]
			sq += row[0] * row[0]
			ntr++
		}
	}
	mean /= float64(ntr)
	sd := math.Sqrt(sq/float64(ntr) - mean*mean)
	if math.Abs(maps[0].Offset-mean) > 1e-6*mean || math.Abs(maps[0].Scale-sd) > 1e-5*sd {
		t.Errorf("age's map %+v, want offset %v scale %v", maps[0], mean, sd)
	}
	if maps[1].Offset != 0 || maps[1].Scale != 1 || maps[1].Clipped() {
		t.Errorf("a category's map %+v, want 0/1 unscaled", maps[1])
	}
	pooled := d.pooled(maps)
	r, err := central.Solve(context.Background(), pooled, central.Config{Lambda: cfg.Lambda, Loss: loss.Hinge{}, Tol: 1e-10, MaxEpochs: 20000})
	if err != nil {
		t.Fatal(err)
	}
	model := f.coord.Model()
	p, _, _, _ := central.Objectives(pooled, loss.Hinge{}, cfg.Lambda, model.W, nil)
	if rel := (p - r.Primal) / r.Primal; rel > 1e-2 || rel < -1e-9 {
		t.Errorf("the federation's model scores %v on the pooled scaled table, its optimum %v: relative %v", p, r.Primal, rel)
	}
	if last := hist[len(hist)-1]; last.Partial {
		t.Errorf("last round partial: %+v", last)
	}
}

func TestOwnFilesEncryptedMatchPlaintext(t *testing.T) {
	d := makeOwnData(t, schema.LabelsShared)
	cfg := Defaults()
	cfg.Schema, cfg.Rounds = d.sch, 8
	plain := newFedScheme(t, d.blocks, cfg, seal.Plaintext{Len: 4096}).run(t)
	bgv, err := seal.ByName("bgv")
	if err != nil {
		t.Fatal(err)
	}
	enc := newFedScheme(t, d.blocks, cfg, bgv).run(t)
	for r := range plain {
		if plain[r].Primal != enc[r].Primal || plain[r].Dual != enc[r].Dual {
			t.Fatalf("round %d: plaintext P %v D %v, BGV P %v D %v", r, plain[r].Primal, plain[r].Dual, enc[r].Primal, enc[r].Dual)
		}
	}
}

func TestOwnFilesLeaveOutUnlabelledSamples(t *testing.T) {
	d := makeOwnData(t, schema.LabelsShared)
	// B's customers 60..69 have a blank label: nobody else has one.
	b := &d.blocks[1]
	blank := 0
	for r, id := range b.IDs {
		var i int
		fmt.Sscanf(id, "cust-%d", &i)
		if i < 70 {
			b.Y[r] = 0
			blank++
		}
	}
	cfg := Defaults()
	cfg.Schema, cfg.Rounds = d.sch, 3
	f := newFed(t, d.blocks, cfg)
	f.run(t)
	if got := f.coord.LeftOut(); got != blank {
		t.Errorf("%d samples left out, want the %d without a label", got, blank)
	}
	heldBlank := 1 // customer 63
	if got, want := f.coord.NumTrain(), 120-12-(blank-heldBlank); got != want {
		t.Errorf("%d training samples, want %d", got, want)
	}
}

func TestOwnFilesLabelConflictIsRefused(t *testing.T) {
	d := makeOwnData(t, schema.LabelsEveryHolder)
	// C's label of one customer it shares with A disagrees.
	c := &d.blocks[2]
	for r, id := range c.IDs {
		if id == "cust-007" {
			c.Y[r] = -c.Y[r]
		}
	}
	cfg := Defaults()
	cfg.Schema, cfg.Rounds = d.sch, 3
	f := newFed(t, d.blocks, cfg)
	err := Serve(context.Background(), f.coord, f.mem, nil)
	if err == nil {
		t.Fatal("a federation with conflicting labels ran")
	}
	notes := strings.Join(f.coord.Notices(), "\n")
	for _, want := range []string{"participant 0, participant 2 and participant 3", "disagree on 1 shared sample"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notice %q does not say %q", notes, want)
		}
	}
	if f.coord.Started() || f.coord.Finished() {
		t.Errorf("started %v finished %v: the federation should wait for registrations again", f.coord.Started(), f.coord.Finished())
	}
	infos := f.coord.Clients()
	// Three holders hold labels of the sample: the sums cannot tell whose
	// is wrong, so all three are refused.
	for k, want := range []bool{true, false, true, true} {
		if got := infos[k].Refused != ""; got != want {
			t.Errorf("participant %d refused %v (%q), want %v", k, got, infos[k].Refused, want)
		}
	}
}

// TestBiasFoundInBlocks: a federation that declares no bias takes it from
// its blocks as hyfed experiment finds it in pooled data, and runs as if it
// had been declared; a last feature that varies is no bias.
func TestBiasFoundInBlocks(t *testing.T) {
	d := testData(120, 6, 4) // its last feature is 1 in every row
	blocks := gridBlocks(d, 2, 3)
	cfg := Defaults()
	cfg.Rounds = 6
	found := newFed(t, blocks, cfg)
	hf := found.run(t)
	if c := found.coord.Config(); c.BiasFeature != 5 || c.BiasValue != 1 {
		t.Fatalf("bias %d = %v, want feature 5 = 1", c.BiasFeature, c.BiasValue)
	}
	cfg.BiasFeature, cfg.BiasValue, cfg.NoFindBias = 5, 1, true
	hd := newFed(t, blocks, cfg).run(t)
	for r := range hd {
		if hf[r].Primal != hd[r].Primal || hf[r].Dual != hd[r].Dual {
			t.Fatalf("round %d: found P %v D %v, declared P %v D %v", r, hf[r].Primal, hf[r].Dual, hd[r].Primal, hd[r].Dual)
		}
	}
	blocks[2].X.Data[1] = 2 // block 2 holds features 4 and 5: row 0 differs in 5
	cfg = Defaults()
	cfg.Rounds = 1
	f := newFed(t, blocks, cfg)
	f.run(t)
	if c := f.coord.Config(); c.BiasValue != 0 {
		t.Errorf("a varying last feature taken as the bias: %d = %v", c.BiasFeature, c.BiasValue)
	}
}
