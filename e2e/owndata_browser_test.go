package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/table"
)

// TestOwnFilesChromium is ownFilesInTabs in Chromium; TestOwnFilesFirefox
// the same in Firefox.
func TestOwnFilesChromium(t *testing.T) {
	ownFilesInTabs(t, newChromium)
}

func TestOwnFilesFirefox(t *testing.T) {
	ownFilesInTabs(t, newFirefox)
}

// ownMapping is what the join page must say of each fixture file before
// anything is sent: the features it holds, those it does not, and the
// label values or the want of a label column.
var ownMapping = []struct {
	held, notHeld []string
	labels        string
}{
	{[]string{"feature age", "feature sex (one of 1, 2)", "feature bmi", "feature bp"}, []string{"tc, ldl, hdl, tch, ltg, glucose"}, "will learn their labels"},
	{[]string{"feature age", "feature sex (one of 1, 2)", "feature bmi", "feature bp"}, []string{"tc, ldl, hdl, tch, ltg, glucose"}, "will learn their labels"},
	{[]string{"feature tc", "feature ldl", "feature hdl"}, []string{"age, sex, bmi, bp, tch, ltg, glucose"}, "you take part without labels"},
	{[]string{"feature tch", "feature ltg", "feature glucose"}, []string{"age, sex, bmi, bp, tc, ldl, hdl"}, "you take part without labels"},
}

// ownFilesInTabs: the fixture's four own CSV files (one semicolon-separated
// with decimal commas, two without a label column) join a schema
// federation from four tabs of the engine, each picked through the join
// page's file input; each page shows the mapping first (the features the
// file holds, those it does not, the ignored "notes" column, the label
// values or that it takes part without labels), then joins; training runs
// TestOwnFilesNative's rounds and the model is within 1e-2 of the pooled
// optimum (fx.checkOwnModel). The pages then say "finished", the model's
// round and its held-out accuracy. Screenshot own-<engine>-join.png.
func ownFilesInTabs(t *testing.T, start func(testing.TB) engine) {
	fx := newOwnFixture(t)
	ts := startServer(t)
	req := server.NewCreateRequest()
	req.Name, req.Clients, req.Schema = "own files", 4, fx.sch
	link, fed := createFederation(t, ts.URL, req)
	e := start(t)
	var tabs []page
	for k, file := range fx.files {
		p := e.newPage()
		p.navigate(link)
		p.waitJS("the participant and the federation's schema", "document.body.dataset.ready === '1' && !document.getElementById('schema-box').hidden", joinTimeout)
		if k == 0 {
			if s := p.text("#schema-box"); !containsAll(s, `10 features, label column "outcome", id column "patient"`) {
				p.fatalf("the schema line says %q", s)
			}
		}
		p.upload("#file", file)
		p.waitJS("the mapping of "+filepath.Base(file), "!document.getElementById('mapping').hidden", 20*time.Second)
		m := p.text("#mapping")
		want := ownMapping[k]
		parts := append(append([]string{"notes", "ignored: the federation does not use this column", "Features you do not hold: "}, want.held...), want.notHeld...)
		parts = append(parts, want.labels)
		if k < 2 {
			parts = append(parts, `"progressed" = positive`, `"stable" = negative`)
		}
		if !containsAll(m, parts...) {
			p.fatalf("%s: the mapping %q does not say all of %q", filepath.Base(file), m, parts)
		}
		if k == 1 && !strings.Contains(p.text("#summary-kv"), "semicolon-separated") {
			p.fatalf("the semicolon file's summary: %q", p.text("#summary-kv"))
		}
		if st := fedStatus(t, ts.URL, fed.ID); len(st.Participants) != k {
			t.Fatalf("%s: %d participants after reading file %d: reading a file sent something", e.name(), len(st.Participants), k)
		}
		p.click("#join")
		p.waitJS("the server's welcome", "document.body.dataset.registered === '1'", 20*time.Second)
		tabs = append(tabs, p)
	}
	for _, p := range tabs {
		p.waitJS("training to finish in the tab", "document.body.dataset.done === '1'", 3*time.Minute)
	}
	st := waitStatus(t, ts.URL, fed.ID, "the federation to finish", 20*time.Second, func(s server.Status) bool { return s.State == "finished" })
	if len(st.Warnings) > 0 || len(st.Notices) > 0 || st.LeftOut != countUnlabelled(fx) || st.Heldout == 0 {
		t.Fatalf("%s: warnings %q, notices %q, %d left out, %d held out", e.name(), st.Warnings, st.Notices, st.LeftOut, st.Heldout)
	}
	fx.checkOwnModel(t, ts.URL, fed.ID)
	if !st.Converged || !(float64(st.Model.Bound) <= protocol.DefaultTol) {
		t.Fatalf("%s: finished at round %d, converged %v, bound %v: want stopped by the default tolerance", e.name(), st.Round, st.Converged, st.Model.Bound)
	}
	p := tabs[1]
	shown := "held-out accuracy " + pageEval[string](p, fmt.Sprintf("hyfed.num(100 * %v, 4)", float64(st.Model.HeldoutAccuracy))) + " %"
	// The model box says training stopped at its tolerance, and the bound.
	p.waitJS("the finished page to name the model's accuracy apart from the last round's", fmt.Sprintf(`document.getElementById('status').textContent.startsWith('finished') &&
  document.getElementById('model-box').dataset.state === 'finished' && document.getElementById('model-state').textContent.startsWith('Training finished after ') &&
  document.getElementById('model-state').textContent.includes('its tolerance reached') && /certified within [0-9.]+ %% of the optimum/.test(document.getElementById('model-state').textContent) &&
  document.getElementById('model-line').textContent === %s && document.getElementById('acc-label').textContent === 'held-out accuracy, last round'`,
		jsString(fmt.Sprintf("round %d (the lowest objective), %s", st.Model.Round, shown))), 15*time.Second)
	p.shot("own-" + e.name() + "-join.png")
}

// TestOwnFileErrorShownOnce: a file with a category the schema does not
// list shows the error once, naming the file, the line and the column, with
// Join closed; reading it with the wrong delimiter fails too, and the
// right one reads it. Nothing reached the server: no participant.
func TestOwnFileErrorShownOnce(t *testing.T) {
	fx := newOwnFixture(t)
	data, err := os.ReadFile(fx.files[0]) // clinic_north.csv: patient,Age,Sex,BMI,BP,outcome,notes
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\r\n")
	f := strings.Split(lines[3], ",")
	f[2] = "3" // sex: the schema lists 1 and 2
	lines[3] = strings.Join(f, ",")
	bad := filepath.Join(t.TempDir(), "clinic_bad.csv")
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "\r\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t)
	req := server.NewCreateRequest()
	req.Clients, req.Schema, req.Rounds = 4, fx.sch, 5
	link, fed := createFederation(t, ts.URL, req)
	e := newChromium(t)
	p := e.newPage()
	p.navigate(link)
	p.waitJS("the participant and the schema", "document.body.dataset.ready === '1' && !document.getElementById('schema-box').hidden", joinTimeout)
	p.upload("#file", bad)
	p.waitJS("the file's error", "document.getElementById('error').dataset.code === 'bad-file'", 20*time.Second)
	msg := p.text("#error")
	where := `clinic_bad.csv:4: column "Sex" (3): "3" is not a category the schema lists`
	if !strings.Contains(msg, where) || strings.Count(msg, "clinic_bad.csv") != 1 || strings.Count(msg, "is not a category") != 1 || strings.Contains(msg, "((") {
		p.fatalf("the error says %q, want %q once", msg, where)
	}
	if !pageEval[bool](p, "document.getElementById('join').disabled && document.getElementById('summary').hidden") {
		p.fatalf("Join is open after a file that did not load")
	}
	p.shot("own-bad-file.png")
	// The right file with the wrong delimiter, then found from the file.
	p.upload("#file", fx.files[1]) // semicolons
	p.waitJS("the semicolon file's mapping", "!document.getElementById('mapping').hidden && document.getElementById('error').dataset.code === ''", 20*time.Second)
	pageEval[bool](p, "(e => (e.value = 'comma', e.dispatchEvent(new Event('change')), true))(document.getElementById('delimiter'))")
	p.waitJS("the error of reading it with commas", "document.getElementById('error').dataset.code === 'bad-file' && document.getElementById('join').disabled", 20*time.Second)
	pageEval[bool](p, "(e => (e.value = '', e.dispatchEvent(new Event('change')), true))(document.getElementById('delimiter'))")
	p.waitJS("the mapping again", "!document.getElementById('mapping').hidden && !document.getElementById('join').disabled", 20*time.Second)
	if st := fedStatus(t, ts.URL, fed.ID); len(st.Participants) != 0 {
		t.Fatalf("the federation lists %d participants: a file read in the tab reached the server", len(st.Participants))
	}
}

// TestNoHeldoutAccuracyWithoutHeldout: a federation whose schema holds no
// sample out (heldout 0) trains (a tab with one clinic's file, three native
// participants with the others); the join page, the dashboard and the
// privacy view never say "held-out accuracy": they name the training
// accuracy, and the dashboard's accuracy chart has no held-out series.
func TestNoHeldoutAccuracyWithoutHeldout(t *testing.T) {
	const rounds = 20
	fx := newOwnFixture(t)
	var sch schema.Schema = *fx.sch
	sch.Heldout = 0
	fx.sch = &sch
	ts := startServer(t)
	req := server.NewCreateRequest()
	req.Clients, req.Schema, req.Rounds = 4, fx.sch, rounds
	link, fed := createFederation(t, ts.URL, req)
	e := newChromium(t)
	p := e.newPage()
	p.navigate(link)
	p.waitJS("the participant and the schema", "document.body.dataset.ready === '1' && !document.getElementById('schema-box').hidden", joinTimeout)
	p.upload("#file", fx.files[0])
	p.waitJS("the mapping", "!document.getElementById('mapping').hidden", 20*time.Second)
	p.click("#join")
	p.waitJS("the server's welcome", "document.body.dataset.registered === '1'", 20*time.Second)
	blocks := fx.blocks(t)
	wait := startNative(t, link, []*partition.Block{blocks[1], blocks[2], blocks[3]})
	p.waitJS("training to finish in the tab", "document.body.dataset.done === '1'", 2*time.Minute)
	wait()
	st := waitStatus(t, ts.URL, fed.ID, "the federation to finish", 20*time.Second, func(s server.Status) bool { return s.State == "finished" })
	if st.Heldout != 0 {
		t.Fatalf("%d samples held out under heldout 0", st.Heldout)
	}
	p.waitJS("the join page to name the training accuracy", "document.getElementById('acc-label').textContent === 'training accuracy, last round' && document.getElementById('model-line').textContent.includes('training accuracy') && document.getElementById('model-state').textContent.includes('training accuracy')", 15*time.Second)
	dash := e.newPage()
	dash.navigate(ts.URL + fed.AdminPath)
	dash.waitJS("the dashboard's charts and model", fmt.Sprintf("Number(document.getElementById('chart-loss').dataset.points) === %d && document.getElementById('model-box').dataset.state === 'finished'", rounds+1), 20*time.Second)
	dash.evalInto("document.querySelector('details.panel').open = true", new(bool))
	priv := e.popup(p, "#privacy-link")
	priv.waitJS("the privacy view", "document.getElementById('parts').textContent.includes('BGV ciphertext')", 15*time.Second)
	for _, x := range []page{p, dash, priv} {
		if text := pageEval[string](x, "document.body.innerText"); strings.Contains(strings.ToLower(text), "held-out acc") {
			x.fatalf("the page says held-out accuracy in a federation that holds nothing out:\n%s", text)
		}
	}
	if !strings.Contains(dash.text("#h-acc"), "training samples") || pageEval[int](dash, "document.querySelectorAll('#chart-acc .u-legend .u-series').length") != 2 {
		dash.fatalf("the accuracy chart: %q, %d series", dash.text("#h-acc"), pageEval[int](dash, "document.querySelectorAll('#chart-acc .u-legend .u-series').length"))
	}
	if !strings.Contains(dash.text("#model-state"), "training accuracy") {
		dash.fatalf("the dashboard's model box: %q", dash.text("#model-state"))
	}
}

// TestCreatePageSchema: on the create page a schema refused by the server
// shows the server's reason plainly; one built from a CSV file read in the
// page (its columns numeric features, the id and the label picked, one
// column marked as categories, one ignored) is sent as the create request's
// schema, and the status holds it. Screenshot create-schema.png.
func TestCreatePageSchema(t *testing.T) {
	fx := newOwnFixture(t)
	ts := startServer(t)
	p := newTab(t, newBrowser(t))
	p.navigate(ts.URL + "/new#create=" + createToken)
	p.waitJS("the create form", "document.getElementById('schema') !== null", 10*time.Second)
	set := func(sel, value string) {
		pageEval[bool](p, fmt.Sprintf("(e => (e.value = %s, e.dispatchEvent(new Event('input')), e.dispatchEvent(new Event('change')), true))(document.querySelector(%s))", jsString(value), jsString(sel)))
	}
	set("#min", "4")
	// Refused: a feature listed twice.
	set("#schema", `{"id": "patient", "label": {"column": "outcome", "positive": ["progressed"]}, "features": [{"name": "age"}, {"name": "Age"}]}`)
	p.allowConsole(`status of 400`)
	p.click("#create")
	p.waitJS("the refusal", "!document.getElementById('form-error').hidden", 10*time.Second)
	if msg := p.text("#form-error"); !strings.HasPrefix(msg, "The server refused the schema: ") || !strings.Contains(msg, `"Age"`) || strings.Count(msg, "schema") != 1 {
		p.fatalf("the refusal says %q", msg)
	}
	// Built from the clinic's file: patient,Age,Sex,BMI,BP,outcome,notes.
	set("#schema", "")
	p.click("#schema-build summary")
	p.upload("#schema-file", fx.files[0])
	p.waitJS("the file's columns", "document.querySelectorAll('#schema-rows select').length === 7", 10*time.Second)
	for col, use := range map[int]string{0: "id", 2: "category", 5: "label", 6: "ignore"} {
		set(fmt.Sprintf("#schema-rows select[data-col='%d']", col), use)
	}
	set("[data-values='2']", "1, 2")
	set("#schema-positive", "progressed")
	set("#schema-labels", "shared-with-co-holders")
	p.click("#schema-write")
	p.waitJS("the schema written", "document.getElementById('schema').value.includes('\"features\"')", 5*time.Second)
	p.shot("create-schema.png")
	p.click("#create")
	p.waitJS("the created federation", "!document.getElementById('result').hidden", 10*time.Second)
	id := p.text("#fed-id")
	adminTokens.Store(id, pageEval[string](p, "document.getElementById('admin').value"))
	st := fedStatus(t, ts.URL, id)
	s := st.Config.Schema
	if s == nil {
		t.Fatal("the status holds no schema")
	}
	var names []string
	for _, f := range s.Features {
		names = append(names, f.Name+strings.Join(f.Categories, "|"))
	}
	if s.ID != "patient" || s.Label.Column != "outcome" || strings.Join(s.Label.Positive, ",") != "progressed" || strings.Join(s.Label.Negative, ",") != "stable" ||
		strings.Join(names, " ") != "Age Sex1|2 BMI BP" || s.LabelPolicy() != schema.LabelsShared || s.Heldout != 0.1 {
		t.Fatalf("the schema the server holds: %+v (features %q)", s, names)
	}
}

// TestRefusedAndWarningsShown: a tab and a native participant whose files
// label a shared patient differently (labels in every holder's file) are
// both refused; the tab says why, and the join page and the dashboard show
// the federation's notice and each participant's reason. Then the join
// page's own logic: warnings in the status show at the top, and a finished
// run with warnings (or a model of round 0) is not called "finished".
func TestRefusedAndWarningsShown(t *testing.T) {
	fx := newOwnFixture(t)
	sch := *fx.sch
	sch.Labels = schema.LabelsEveryHolder
	var b strings.Builder
	b.WriteString("patient,tc,LDL,HDL,outcome\n")
	for i := range 40 { // clinic north's first patients, one labelled the other way
		y := fx.y[i]
		if i == 7 {
			y = -y
		}
		fmt.Fprintf(&b, "%s,%g,%g,%g,%s\n", fx.ids[i], fx.raw[i][5], fx.raw[i][6], fx.raw[i][7], map[bool]string{true: "progressed", false: "stable"}[y > 0])
	}
	other, _, err := table.Load("lab.csv", []byte(b.String()), &sch, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t)
	req := server.NewCreateRequest()
	req.Clients, req.Schema, req.Rounds = 2, &sch, 5
	link, fed := createFederation(t, ts.URL, req)
	br := newBrowser(t)
	tb := newTab(t, br)
	tb.navigate(link)
	tb.waitJS("the participant and the schema", "document.body.dataset.ready === '1' && !document.getElementById('schema-box').hidden", joinTimeout)
	tb.upload("#file", fx.files[0])
	tb.waitJS("the mapping", "!document.getElementById('mapping').hidden", 20*time.Second)
	tb.click("#join")
	tb.waitJS("the server's welcome", "document.body.dataset.registered === '1'", 20*time.Second)
	startNative(t, link, []*partition.Block{other}) // refused: never waited for
	tb.waitJS("the refusal in the tab", "document.getElementById('error').dataset.code === 'schema'", 30*time.Second)
	if msg := tb.text("#error"); !strings.Contains(msg, "disagree") {
		tb.fatalf("the tab's error says %q", msg)
	}
	tb.waitJS("the federation's notice on the join page", "!document.getElementById('fed-notes').hidden && document.querySelector('#fed-notes .fed-notices').textContent.includes('disagree')", 15*time.Second)
	dash := newTab(t, br)
	dash.navigate(ts.URL + fed.AdminPath)
	dash.waitJS("the notice and the reasons on the dashboard", "document.querySelector('#fed-notes .fed-notices')?.textContent.includes('disagree') && document.querySelectorAll('#parts .reason').length === 2", 15*time.Second)
	if st := fedStatus(t, ts.URL, fed.ID); st.State != "waiting" || len(st.Notices) != 1 {
		t.Fatalf("state %s, notices %q", st.State, st.Notices)
	}
	screenshot(t, dash, "dashboard-refused.png")

	// The page's logic with a status that carries warnings, as a finished
	// federation's would: shown at the top; the run is not "finished".
	evalJS[bool](tb, `(() => {
  state.result = {rounds: 5, reconnects: 0}; state.done = true;
  showFed(Object.assign({}, state.status, {state: 'finished', warnings: ['2 of 5 rounds ran without every participant'],
    model: {round: 5, best: true, heldout_accuracy: 0.5}}));
  return true; })()`)
	if !evalJS[bool](tb, "!document.getElementById('fed-notes').hidden && document.querySelector('#fed-notes .fed-warnings').textContent.includes('without every participant')") ||
		!strings.HasPrefix(tb.text("#status"), "ended with warnings") {
		tb.fatalf("with warnings: notes %q, status %q", tb.text("#fed-notes"), tb.text("#status"))
	}
	evalJS[bool](tb, `(showFed(Object.assign({}, state.status, {warnings: [], model: {round: 0, best: false, heldout_accuracy: null}, left_out: 12})), true)`)
	if !strings.HasPrefix(tb.text("#status"), "ended with warnings") {
		tb.fatalf("a round-0 model: status %q", tb.text("#status"))
	}
	if got := tb.text("#fed-notes .fed-left-out"); !strings.Contains(got, "12 samples miss their label at one of their holders and are left out.") {
		tb.fatalf("12 samples left out: %q", got)
	}
}
