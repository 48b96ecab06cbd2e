package protocol

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/averaging"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/seal"
)

// update rewrites the golden transcripts under testdata/:
//
//	go test ./shared/protocol -run TestTranscripts -update
var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/")

// A transcript is a scripted federation printed message by message, in the
// order the coordinator sends and receives them (docs/design.md section 2
// names the phases). Each line is one envelope:
//
//	r<round> <phase>  <from> -> <to>  <kind>  <fields>
//
// S is the coordinator, c<k> participant k. The round and phase are the
// coordinator's: for a message it receives, before it takes the message in;
// for one it sends, after the call that produced it (so a phase's requests
// carry that phase's name). A message whose own Round field differs from the
// coordinator's round says so with @r<n>. Fields are the ones set, in short
// form: slices of numbers in brackets (a run of three or more equal values
// as value*count), sealed vectors as
// sealed{<chunks>ch <values>v: slot=value ...} (the plaintext scheme, so the
// values are readable; zero slots are left out). "-- ..." lines are the
// script (drops, joins, restarts) and the transport (a phase deadline);
// "== round" lines are the metrics the coordinator recorded. Numbers are
// printed with 6 significant digits.
type transcript struct {
	b   strings.Builder
	c   *Coordinator
	mem *Memory
	// seenRounds is the number of history entries already printed.
	seenRounds int
}

func (tr *transcript) printf(format string, args ...any) { fmt.Fprintf(&tr.b, format, args...) }

// rounds prints the round metrics recorded since the last call.
func (tr *transcript) rounds() {
	h := tr.c.History()
	for ; tr.seenRounds < len(h); tr.seenRounds++ {
		r := h[tr.seenRounds]
		tr.printf("== round %d: P=%s D=%s gap=%s train=%s held=%s gamma=%s active=%d updated=%d", r.Round,
			num(r.Primal), num(r.Dual), num(r.Gap), num(r.TrainAcc), num(r.HeldAcc), num(r.Gamma), r.Active, r.Updated)
		if r.Partial {
			tr.printf(" partial")
		}
		tr.printf("\n")
	}
}

// where is the coordinator's round and phase ("-" between phases).
func (tr *transcript) where() string {
	ph := tr.c.Phase()
	if ph == "" {
		ph = "-"
	}
	return fmt.Sprintf("r%d %-9s", tr.c.Round(), ph)
}

func (tr *transcript) line(from, to string, m *Message, note string) {
	tr.rounds()
	at := ""
	if m.Round != tr.c.Round() && m.Kind != KindHello {
		at = fmt.Sprintf(" @r%d", m.Round)
	}
	tr.printf("%s %-3s -> %-3s %s%s%s%s\n", tr.where(), from, to, m.Kind, at, fields(m), note)
}

// Next implements Transport: it prints what the coordinator takes in.
func (tr *transcript) Next(ctx context.Context) (Event, error) {
	ev, err := tr.mem.Next(ctx)
	if errors.Is(err, ErrIdle) && tr.c.Phase() != "" {
		tr.rounds()
		tr.printf("%s -- nothing more arrives: the phase's deadline\n", tr.where())
	}
	if err != nil {
		return ev, err
	}
	from := fmt.Sprintf("c%d", ev.From)
	switch ev.Kind {
	case EventLeave:
		tr.rounds()
		tr.printf("%s %-3s -x %-3s (connection ended)\n", tr.where(), from, "S")
	default:
		tr.line(from, "S", &ev.Msg, "")
	}
	return ev, nil
}

// Deliver implements Transport: it prints what the coordinator sends.
func (tr *transcript) Deliver(ctx context.Context, r Ready) error {
	envs := r.Envelopes
	for i := range envs {
		note := ""
		if e := envs[i]; e.To < 0 || e.To >= len(tr.mem.parts) || !tr.mem.Connected(e.To) {
			note = "  (lost: not connected)"
		}
		tr.line("S", fmt.Sprintf("c%d", envs[i].To), &envs[i].Msg, note)
	}
	return tr.mem.Deliver(ctx, r)
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

func nums(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = num(x)
	}
	return runs(s)
}

func ints(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return runs(s)
}

// runs joins printed numbers in brackets, a run of three or more equal
// ones as value*count: [0 4*16] is a 0 and sixteen 4s.
func runs(s []string) string {
	var out []string
	for i := 0; i < len(s); {
		j := i + 1
		for j < len(s) && s[j] == s[i] {
			j++
		}
		if j-i >= 3 {
			out = append(out, fmt.Sprintf("%s*%d", s[i], j-i))
		} else {
			out = append(out, s[i:j]...)
		}
		i = j
	}
	return "[" + strings.Join(out, " ") + "]"
}

// transcriptChunk is the chunk length of the transcripts' plaintext scheme.
const transcriptChunk = 8

// sealed prints a plaintext-sealed vector: its chunk count, its nonzero
// values and each of them at its layout slot.
func sealed(v seal.Vec) string {
	var vals []string
	for _, i := range v.Indexes() {
		pc, ok := v[i].(*seal.PlainChunk)
		if !ok {
			return fmt.Sprintf("{%dch %T}", len(v), v[i])
		}
		for j, x := range pc.V {
			if x != 0 {
				vals = append(vals, fmt.Sprintf("%d=%s", i*transcriptChunk+j, num(x)))
			}
		}
	}
	if len(vals) == 0 {
		return fmt.Sprintf("{%dch 0v}", len(v))
	}
	return fmt.Sprintf("{%dch %dv: %s}", len(v), len(vals), strings.Join(vals, " "))
}

// fields prints the fields of m that are set, in a fixed order.
func fields(m *Message) string {
	var f []string
	add := func(name, v string) { f = append(f, name+"="+v) }
	if len(m.Pseudonyms) > 0 {
		add("ids", strconv.Itoa(len(m.Pseudonyms)))
	}
	if len(m.Heldout) > 0 {
		n := 0
		for _, h := range m.Heldout {
			if h {
				n++
			}
		}
		add("heldout", strconv.Itoa(n))
	}
	if len(m.Features) > 0 {
		add("features", ints(m.Features))
	}
	if m.NumFeatures != 0 {
		add("of", strconv.Itoa(m.NumFeatures))
	}
	if m.Fingerprint != "" {
		f = append(f, "fingerprint")
	}
	if s := m.Setup; s != nil {
		add("slots", ints(s.Slots))
		add("group", ints(s.Group))
		add("holders", ints(s.Holders))
		add("groups", strconv.Itoa(len(s.GroupKeys)))
		add("train", strconv.Itoa(s.NumTrain))
		if s.SendNorms {
			f = append(f, "send-norms")
		}
		if m.Setup.Resume {
			add("resume", strconv.Itoa(m.Setup.Round))
		}
	}
	if m.Client != 0 {
		add("client", strconv.Itoa(m.Client))
	}
	if m.Steps != 0 {
		add("steps", strconv.Itoa(m.Steps))
	}
	if m.Participants != 0 {
		add("participants", strconv.Itoa(m.Participants))
	}
	if m.Active {
		f = append(f, "active")
	}
	if len(m.Groups) > 0 {
		add("groups", ints(m.Groups))
	}
	if len(m.ActiveHolders) > 0 {
		add("active-holders", ints(m.ActiveHolders))
	}
	if len(m.GramAt) > 0 {
		add("gram-at", ints(m.GramAt))
	}
	if m.Sigma != 0 {
		add("sigma", num(m.Sigma))
	}
	if m.SigmaShared != 0 {
		add("sigma-shared", num(m.SigmaShared))
	}
	if len(m.Kappa) > 0 {
		add("kappa", nums(m.Kappa))
	}
	if len(m.Report) > 0 {
		add("report", ints(m.Report))
	}
	if m.Gamma != 0 {
		add("gamma", num(m.Gamma))
	}
	if m.Applied {
		f = append(f, "applied")
	}
	if m.Follow {
		f = append(f, "follow")
	}
	if m.Full {
		f = append(f, "full")
	}
	for _, v := range []struct {
		name string
		v    []float64
	}{{"w", m.W}, {"grid", m.Grid}, {"hat-w", m.HatW}, {"dw", m.DW}, {"grid-loss", m.GridLoss}, {"grid-conj", m.GridConj}, {"grid-wdot", m.GridWDot}} {
		if len(v.v) > 0 {
			add(v.name, nums(v.v))
		}
	}
	if m.DConj != 0 {
		add("dconj", num(m.DConj))
	}
	if m.GammaMax != 0 {
		add("gamma-max", num(m.GammaMax))
	}
	if len(m.GridTrainOK) > 0 {
		add("grid-train-ok", ints(m.GridTrainOK))
	}
	if len(m.GridHeldOK) > 0 {
		add("grid-held-ok", ints(m.GridHeldOK))
	}
	if m.TrainN != 0 {
		add("train-n", strconv.Itoa(m.TrainN))
	}
	if m.HeldN != 0 {
		add("held-n", strconv.Itoa(m.HeldN))
	}
	if len(m.Sealed) > 0 {
		add("sealed", sealed(m.Sealed))
	}
	if len(m.Alpha) > 0 {
		add("alpha", sealed(m.Alpha))
	}
	if m.Session != "" {
		f = append(f, "session")
	}
	if m.Name != "" {
		add("name", m.Name)
	}
	if m.Code != "" {
		add("code", m.Code)
	}
	if m.Err != "" {
		add("err", strconv.Quote(m.Err))
	}
	if m.Close {
		f = append(f, "close")
	}
	if len(f) == 0 {
		return ""
	}
	return "  " + strings.Join(f, " ")
}

// scriptStep is one scripted event: at the first transport step at which
// the coordinator is in round (and phase, if set), drop or join client k,
// or crash the server (k unused).
type scriptStep struct {
	round int
	phase string
	do    string // "drop", "join" or "crash"
	k     int
}

// TestTranscripts runs small scripted federations (12 samples, 5 features:
// 2 sample groups x 2 feature holders, 4 participants) and checks each
// message against testdata/<name>.txt.
func TestTranscripts(t *testing.T) {
	d := testData(12, 5, 3)
	blocks := gridBlocks(d, 2, 2)
	base := Config{Lambda: 1e-1, Inner: 2, Rounds: 2, Seed: 1} // the zero value's defaults otherwise
	for _, tc := range []struct {
		name   string
		about  string
		cfg    Config
		script []scriptStep
	}{
		{"plain", "two rounds of the default round (one solver a group, group steps, shared directions), every participant active", base, nil},
		{"every-holder-solves", "the same with every holder sent its group's Gram to solve (--solve-once=false): no solved message, no direction trip",
			withEveryHolder(base), nil},
		{"one-line-search", "the same without group steps (--group-steps=false): one weight for every group's direction, no second direction",
			withOneLineSearch(base), nil},
		{"threshold", "the default round under 2-of-3 threshold keys: the key setup, then every sum switched to its receiver by the committee (BGV: sealed values not printed)",
			withThreshold(base), nil},
		{"absent-holder", "client 1 (a feature holder of group 0) leaves during round 0's metrics and stays away: group 0 does not update, group 1 does",
			base, []scriptStep{{0, PhaseScore, "drop", 1}}},
		{"refresh", "client 1 leaves in round 1's step phase (nothing is applied) and returns in round 2: it is set up at once and refreshed at the start of round 3, before it takes part",
			withRounds(base, 3), []scriptStep{{1, PhaseGram, "drop", 1}, {2, "", "join", 1}}},
		{"sealprimal", "the default step with the primal side sealed: participants seal hat_w and dw, one opens the sums",
			withSealPrimal(base), nil},
		{"fedavg", "FedAvg: local steps from w, sealed weights, one participant opens the sum",
			Config{Algo: averaging.FedAvg, Lambda: 1e-1, Rounds: 2, Inner: 2, StepA: 0.3, StepB: 1, Seed: 1}, nil},
		{"restore", "the server dies in round 2's direction phase and restarts from the checkpoint of round 1; fresh participants join again",
			withRounds(base, 3), []scriptStep{{2, PhaseDirection, "crash", 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runTranscript(t, blocks, tc.cfg, tc.about, tc.script)
			path := filepath.Join("testdata", tc.name+".txt")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if diff := firstDiff(string(want), got); diff != "" {
				t.Errorf("%s differs from this run (go test ./shared/protocol -run TestTranscripts -update rewrites it):\n%s", path, diff)
			}
		})
	}
}

func withRounds(c Config, r int) Config { c.Rounds = r; return c }

func withEveryHolder(c Config) Config { c.EveryHolderSolves = true; return c }

func withOneLineSearch(c Config) Config { c.NoGroupSteps = true; return c }

func withThreshold(c Config) Config { c.Keys = KeysThreshold; return c }

// TestZeroConfigIsDefaults: the zero value of Config runs the federation
// Defaults describes, message for message.
func TestZeroConfigIsDefaults(t *testing.T) {
	blocks := gridBlocks(testData(12, 5, 3), 2, 2)
	zero := Config{Lambda: 1e-1, Inner: 2, Rounds: 2, Seed: 1}
	def := Defaults()
	def.Lambda, def.Inner, def.Rounds, def.Seed = zero.Lambda, zero.Inner, zero.Rounds, zero.Seed
	a := runTranscript(t, blocks, zero, "", nil)
	b := runTranscript(t, blocks, def, "", nil)
	if diff := firstDiff(a, b); diff != "" {
		t.Fatalf("Config{} and Defaults() run differently:\n%s", diff)
	}
	z, d := zero, def
	z.Clients, d.Clients = 4, 4
	if err := z.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if z != d {
		t.Fatalf("validated, Config{} is %+v and Defaults() %+v", z, d)
	}
}

func withSealPrimal(c Config) Config { c.SealPrimal = true; return c }

// runTranscript runs the federation with the script and returns its
// transcript.
func runTranscript(t *testing.T, blocks []partition.Block, cfg Config, about string, script []scriptStep) string {
	t.Helper()
	var scheme seal.Scheme = seal.Plaintext{Len: transcriptChunk}
	if cfg.Keys == KeysThreshold {
		ts, err := seal.ThresholdScheme()
		if err != nil {
			t.Fatal(err)
		}
		scheme = ts
	}
	f := newFedScheme(t, blocks, cfg, scheme)
	tr := &transcript{c: f.coord, mem: f.mem}
	tr.printf("# %s\n# %s\n", about, configLine(cfg, len(blocks)))
	tr.printf("# round phase  from -> to  kind  fields (the format: transcript_test.go)\n")
	crashes := false
	for _, s := range script {
		crashes = crashes || s.do == "crash"
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last *Checkpoint
	if crashes {
		f.coord.EnableCheckpoints()
	}
	done := make([]bool, len(script))
	f.mem.OnReady = func(r Ready) {
		if r.Checkpoint != nil {
			last = withSetup(r.Checkpoint, last)
		}
	}
	f.mem.Hook = func() {
		for i, s := range script {
			if done[i] || tr.c.Round() < s.round || (s.phase != "" && tr.c.Phase() != s.phase) {
				continue
			}
			done[i] = true
			tr.rounds()
			switch s.do {
			case "drop":
				tr.printf("%s -- drop c%d\n", tr.where(), s.k)
				f.mem.Drop(s.k)
			case "join":
				tr.printf("%s -- c%d joins again (a fresh participant)\n", tr.where(), s.k)
				if err := f.mem.Join(s.k); err != nil {
					t.Fatal(err)
				}
			case "crash":
				tr.printf("%s -- the server dies\n", tr.where())
				cancel()
			}
		}
	}
	err := Serve(ctx, f.coord, tr, nil)
	if crashes {
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted run: %v", err)
		}
		if last == nil {
			t.Fatal("no checkpoint was taken")
		}
		c, rerr := Restore(scheme, last.Setup, last.RoundData)
		if rerr != nil {
			t.Fatal(rerr)
		}
		tr.printf("-- restored from the checkpoint of round %d: round %d, %d rounds of history, waiting %v\n",
			last.Round, c.Round(), len(c.History()), c.Waiting())
		g := newFedScheme(t, blocks, cfg, scheme) // fresh participants, joining again
		tr.c, tr.mem, tr.seenRounds = c, g.mem, len(c.History())
		err = Serve(context.Background(), c, tr, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	tr.rounds()
	tr.printf("-- finished\n")
	return tr.b.String()
}

func configLine(c Config, clients int) string {
	algo := c.Algo
	if algo == "" {
		algo = AlgoHyFDCA
	}
	s := fmt.Sprintf("algo=%s clients=%d lambda=%s inner=%d rounds=%d seed=%d", algo, clients, num(c.Lambda), c.Inner, c.Rounds, c.Seed)
	if c.SealPrimal {
		s += " seal-primal"
	}
	if c.EveryHolderSolves {
		s += " every-holder-solves"
	}
	if c.NoGroupSteps {
		s += " one-line-search"
	}
	if c.Keys == KeysThreshold {
		return s + " keys=threshold scheme=bgv-threshold"
	}
	return s + " scheme=plaintext/8"
}

// firstDiff returns the first differing lines of want and got, with a
// little context, or "" if they are equal.
func firstDiff(want, got string) string {
	if want == got {
		return ""
	}
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	var b strings.Builder
	from := max(0, i-2)
	for j := from; j < i; j++ {
		fmt.Fprintf(&b, "  %4d   %s\n", j+1, w[j])
	}
	for j := i; j < min(len(w), i+3); j++ {
		fmt.Fprintf(&b, "- %4d   %s\n", j+1, w[j])
	}
	for j := i; j < min(len(g), i+3); j++ {
		fmt.Fprintf(&b, "+ %4d   %s\n", j+1, g[j])
	}
	if i < len(w) && i < len(g) {
		c := 0
		for c < len(w[i]) && c < len(g[i]) && w[i][c] == g[i][c] {
			c++
		}
		lo := max(0, c-40)
		fmt.Fprintf(&b, "line %d first differs at column %d:\n- ...%s\n+ ...%s\n", i+1, c+1, clip(w[i][lo:], 100), clip(g[i][lo:], 100))
	}
	fmt.Fprintf(&b, "(file %d lines, this run %d)", len(w), len(g))
	return b.String()
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
