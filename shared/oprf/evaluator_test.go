package oprf

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

func TestMargin(t *testing.T) {
	for _, c := range []struct{ rows, margin int }{
		{0, 16}, {1, 16}, {100, 16}, {1600, 16}, {1601, 17}, {10_000, 100}, {123_456, 1235},
	} {
		if got := Margin(c.rows); got != c.margin {
			t.Errorf("Margin(%d) = %d, want %d", c.rows, got, c.margin)
		}
		if got := Budget(c.rows); got != c.rows+c.margin {
			t.Errorf("Budget(%d) = %d, want %d", c.rows, got, c.rows+c.margin)
		}
	}
}

func TestBudget(t *testing.T) {
	tc := newTestCommittee(t, 1, 1)
	ev := tc.evals[0]
	if err := ev.Declare(ctxA, 100); err != nil {
		t.Fatal(err)
	}
	batch := func(n int) *EvaluationRequest {
		st, err := Blind(testInputs(n), nil)
		if err != nil {
			t.Fatal(err)
		}
		return st.Request(ctxA)
	}
	if _, err := ev.Evaluate(batch(100)); err != nil {
		t.Fatalf("declared rows: %v", err)
	}
	if _, err := ev.Evaluate(batch(16)); err != nil {
		t.Fatalf("margin: %v", err)
	}
	_, err := ev.Evaluate(batch(1))
	var be *BudgetError
	if !errors.As(err, &be) || be.Rows != 100 || be.Budget != 116 || be.Used != 116 || be.Asked != 1 || be.Context != ctxA {
		t.Fatalf("over budget: err = %#v, want a *BudgetError for 100 rows, 116 used, 1 asked", err)
	}
	for _, want := range []string{`"hospital-a"`, `"fed-1"`, "declared 100 rows", "refusing 1 more"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if used, budget, ok := ev.Usage(ctxA); !ok || used != 116 || budget != 116 {
		t.Errorf("Usage = %d, %d, %v; a refused batch must not be charged", used, budget, ok)
	}

	// Accounts are per (federation, participant).
	for _, other := range []Context{
		{FederationID: "fed-1", ParticipantID: "hospital-b"},
		{FederationID: "fed-2", ParticipantID: "hospital-a"},
	} {
		if err := ev.Declare(other, 0); err != nil {
			t.Fatal(err)
		}
		req := batch(16)
		req.Context = other
		if _, err := ev.Evaluate(req); err != nil {
			t.Errorf("%v with its own budget: %v", other, err)
		}
	}

	// A batch over the budget is refused whole, and leaves it intact.
	fresh := Context{FederationID: "fed-1", ParticipantID: "hospital-c"}
	if err := ev.Declare(fresh, 10); err != nil {
		t.Fatal(err)
	}
	req := batch(27)
	req.Context = fresh
	if _, err := ev.Evaluate(req); !errors.As(err, &be) || be.Asked != 27 || be.Used != 0 {
		t.Errorf("27 of 26: err = %v", err)
	}
	req.Elements = req.Elements[:26]
	if _, err := ev.Evaluate(req); err != nil {
		t.Errorf("26 of 26 after a refusal: %v", err)
	}

	undeclared := batch(1)
	undeclared.Context = Context{FederationID: "fed-1", ParticipantID: "nobody"}
	if _, err := ev.Evaluate(undeclared); !errors.Is(err, ErrNotDeclared) || !strings.Contains(err.Error(), `"nobody"`) {
		t.Errorf("undeclared participant: err = %v", err)
	}
}

func TestDeclare(t *testing.T) {
	ev := newTestCommittee(t, 1, 1).evals[0]
	if err := ev.Declare(ctxA, 100); err != nil {
		t.Fatal(err)
	}
	if err := ev.Declare(ctxA, 100); err != nil {
		t.Errorf("repeating the same declaration: %v", err)
	}
	for _, c := range []struct {
		ctx  Context
		rows int
		want string
	}{
		{ctxA, 1000, "already declared 100 rows"},
		{ctxA, 99, "already declared 100 rows"},
		{Context{FederationID: "f", ParticipantID: "p"}, -1, "declares -1 rows"},
		{Context{FederationID: "f", ParticipantID: "p"}, MaxDeclaredRows + 1, "rows, want"},
		{Context{FederationID: "", ParticipantID: "p"}, 1, "non-empty"},
		{Context{FederationID: "f", ParticipantID: strings.Repeat("p", MaxIDLength+1)}, 1, "limited to"},
	} {
		if err := ev.Declare(c.ctx, c.rows); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Declare(%q, %d): err = %v, want %q", c.ctx.ParticipantID, c.rows, err, c.want)
		}
	}
	if _, budget, _ := ev.Usage(ctxA); budget != Budget(100) {
		t.Errorf("budget %d after refused changes, want %d", budget, Budget(100))
	}
}

// TestBudgetUnderConcurrency sends batches from many goroutines at once and
// expects exactly as many accepted as fit the budget.
func TestBudgetUnderConcurrency(t *testing.T) {
	ev := newTestCommittee(t, 1, 1).evals[0]
	if err := ev.Declare(ctxA, 100); err != nil { // budget 116: five batches of 20
		t.Fatal(err)
	}
	st, err := Blind(testInputs(20), nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted, refused := 0, 0
	for range 12 {
		wg.Go(func() {
			_, err := ev.Evaluate(st.Request(ctxA))
			mu.Lock()
			defer mu.Unlock()
			var be *BudgetError
			switch {
			case err == nil:
				accepted++
			case errors.As(err, &be):
				refused++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if accepted != 5 || refused != 7 {
		t.Errorf("accepted %d, refused %d; want 5 and 7", accepted, refused)
	}
	if used, _, _ := ev.Usage(ctxA); used != 100 {
		t.Errorf("used %d, want 100", used)
	}
}

func TestEvaluatorRefusesMalformed(t *testing.T) {
	ev := newTestCommittee(t, 1, 1).evals[0]
	if err := ev.Declare(ctxA, 1000); err != nil {
		t.Fatal(err)
	}
	st, err := Blind(testInputs(3), nil)
	if err != nil {
		t.Fatal(err)
	}
	with := func(i int, e Element) *EvaluationRequest {
		r := st.Request(ctxA)
		r.Elements[i] = e
		return r
	}
	cases := []struct {
		name string
		req  *EvaluationRequest
		want string
	}{
		{"nil request", nil, "nil request"},
		{"identity point", with(1, g.Identity()), "point 1: element is the identity"},
		{"missing point", with(2, nil), "point 2: missing element"},
		{"empty batch", &EvaluationRequest{Context: ctxA}, "batch of 0"},
		{"oversized batch", &EvaluationRequest{Context: ctxA, Elements: make([]Element, MaxBatch+1)}, "batch of 65536"},
		{"no participant", &EvaluationRequest{Context: Context{FederationID: "fed-1"}, Elements: st.Request(ctxA).Elements}, "non-empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ev.Evaluate(c.req); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
	if used, _, _ := ev.Usage(ctxA); used != 0 {
		t.Errorf("malformed requests charged %d evaluations", used)
	}
	for _, ks := range []*KeyShare{nil, {Index: 1}, {Index: 0, Secret: scalarOf(5)}, {Index: 1, Secret: g.NewScalar()}} {
		if _, err := NewEvaluator(ks); err == nil {
			t.Errorf("NewEvaluator(%v) accepted", ks)
		}
	}
}

func TestBlindRefusals(t *testing.T) {
	for _, c := range []struct {
		name   string
		inputs [][]byte
		want   string
	}{
		{"empty batch", nil, "batch of 0"},
		{"oversized input", [][]byte{{1}, make([]byte, MaxInputLength+1)}, "input 1 is 65536 bytes"},
	} {
		if _, err := Blind(c.inputs, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	// Two blinds of the same input must differ, or batches would be linkable.
	a, _ := Blind([][]byte{[]byte("x")}, nil)
	b, _ := Blind([][]byte{[]byte("x")}, nil)
	if a.elements[0].IsEqual(b.elements[0]) {
		t.Error("two blindings of one input are equal")
	}
}
