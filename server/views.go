package server

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"sort"

	"github.com/hyfed/hyfed/shared/model"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/labstack/echo/v4"
)

// This file serves what the pages draw besides the status: the model w
// (GET /api/federations/:id/model) and everything the server process holds
// for a federation (GET /api/federations/:id/server-view), so that the
// privacy page can put it beside what a participant's tab holds.
//
// Everything is read from the coordinator under the federation lock, as
// the status is: the plaintext parts (w, every participant's primal
// contribution hat_w_k) and the sealed ones (Coordinator.Held: the dual
// values, the squared norms, and where each participant's samples sit).
// The per-round aggregates (the direction and the inner products) live
// only while a round runs; their size follows from the same layout.

// ModelView is GET /api/federations/{id}/model: the model the federation
// hands out, the iterate of the round with the lowest primal so far (the
// last iterate can be far worse while the primal swings).
type ModelView struct {
	Round       int     `json:"round"` // the federation's current round
	NumFeatures int     `json:"num_features"`
	W           []Float `json:"w"` // null before training starts
	// ModelRound is the round W is from; Best says it is the best iterate
	// (false before a round with a primal: then W is the current one).
	ModelRound int   `json:"model_round"`
	Best       bool  `json:"best"`
	Primal     Float `json:"primal"` // P(W) as certified that round (null before)
	// HeldoutAccuracy is W's accuracy on the held-out samples.
	HeldoutAccuracy Float `json:"heldout_accuracy"`
}

// SealedView describes one sealed vector the server holds.
type SealedView struct {
	What        string `json:"what"`
	Form        string `json:"form"`
	Ciphertexts int    `json:"ciphertexts"`
	Bytes       int    `json:"bytes"`
	// Values is how many samples' values the ciphertexts carry.
	Values int `json:"values"`
	// Readable is set only under the plaintext scheme: the first values of
	// the vector, which the server can read since nothing is sealed.
	Readable []Float `json:"readable_values,omitempty"`
}

// PlainView is a vector the server holds in plaintext.
type PlainView struct {
	What  string  `json:"what"`
	Count int     `json:"count"`
	Head  []Float `json:"head"` // the first few values
	// Features are the global feature indexes of Values (a participant's
	// hat_w is on its own features); absent for w, which is on all.
	Features []int `json:"features,omitempty"`
	// Values is the whole vector when it has at most maxViewValues entries.
	Values []Float `json:"values,omitempty"`
}

// ParticipantHeld is what the server holds for one participant.
type ParticipantHeld struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Samples  int    `json:"samples"`
	Features int    `json:"features"`
	// Dual is the sealed vector of the dual values a_n of the
	// participant's samples.
	Dual *SealedView `json:"dual"`
	// Norms is the sealed vector of the squared row norms of its samples,
	// summed over their holders.
	Norms *SealedView `json:"norms"`
	// RoundAggregates are the sealed direction d and inner products x.u the
	// server sums for its samples during a round and sends back.
	RoundAggregates *SealedView `json:"round_aggregates"`
	// HatW is its primal contribution hat_w_k, in plaintext (absent under
	// sealed primal).
	HatW *PlainView `json:"hat_w"`
	// Change is the last change of hat_w_k the server received in
	// plaintext, dw_k = X_k^T d over the samples a round moved: with a
	// small H it is a few of the participant's rows (absent under sealed
	// primal).
	Change *PlainView `json:"change,omitempty"`
	// PrimalSealed: hat_w_k and its changes reach the server sealed; it
	// holds only their sum over participants, w.
	PrimalSealed bool `json:"primal_sealed,omitempty"`
}

// ServerView is GET /api/federations/{id}/server-view: what the server
// process holds for the federation right now.
type ServerView struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	State  string `json:"state"`
	Round  int    `json:"round"`
	Scheme string `json:"scheme"`
	// Keys is the key mode: shared (every participant derives the one key
	// from the link secret) or threshold (t-of-n keys: Note says what a
	// colluding participant could open).
	Keys string `json:"keys"`
	// ServerCanReadDual is true under the plaintext scheme only.
	ServerCanReadDual bool   `json:"server_can_read_dual_values"`
	Note              string `json:"note"`
	NumFeatures       int    `json:"num_features"`
	SlotsPerCipher    int    `json:"slots_per_ciphertext"`
	// SealedAsOfRound is the round boundary the sealed vectors are from
	// (null before the first one).
	SealedAsOfRound *int `json:"sealed_as_of_round"`
	// Dual and Norms are the federation's whole sealed vectors.
	Dual  *SealedView `json:"dual"`
	Norms *SealedView `json:"norms"`
	// W is the global model, in plaintext (null before training starts).
	W            *PlainView        `json:"w"`
	Participants []ParticipantHeld `json:"participants"`
	// AlsoPlaintext lists what else the server sees in plaintext.
	AlsoPlaintext []string `json:"also_plaintext"`
	// KeyMode says who holds the key and what the server could open with
	// colluding participants.
	KeyMode *KeyModeView `json:"key_mode"`
}

// KeyModeView is the federation's key mode as the privacy view shows it.
type KeyModeView struct {
	// Mode is shared, threshold or none (the plaintext scheme).
	Mode string `json:"mode"`
	// Threshold is t of a t-of-n threshold key, CommitteeSize the n
	// configured; Committee lists the members once the key setup chose
	// them (empty before).
	Threshold     int           `json:"threshold,omitempty"`
	CommitteeSize int           `json:"committee_size,omitempty"`
	Committee     []KeyMember   `json:"committee,omitempty"`
	Summary       string        `json:"summary"`
	Opens         []KeyOpenLine `json:"opens"`
	// Colluder says in one sentence what a participant colluding with the
	// server could open.
	Colluder string `json:"colluder"`
}

// KeyMember is one member of a threshold key's committee.
type KeyMember struct {
	Name string `json:"name"`
	// HoldsShare is false for a member that came back without its share:
	// it no longer switches (the threshold covers it).
	HoldsShare bool `json:"holds_share"`
}

// KeyOpenLine is a row of the privacy view's table: a coalition and what
// it can open.
type KeyOpenLine struct {
	Who   string `json:"who"`
	Opens string `json:"opens"`
}

// coHolderLine is true in every key mode: what a participant opens by right.
var coHolderLine = KeyOpenLine{Who: "any participant, by right (every key mode)",
	Opens: "for the samples it holds, their full inner products with the model and with each round's direction and their squared norms, summed over the samples' holders: " +
		"its co-holders' part of each; with the directions the server knows, over enough rounds, its co-holders' features of those samples (measured in the privacy documentation)"}

// coalition names the server with up to n participants (n = t-1 >= 1).
func coalition(n int) string {
	if n == 1 {
		return "the server with any one participant, committee member or not"
	}
	return fmt.Sprintf("the server with up to %d participants, committee members or not", n)
}

// keyMode describes the key mode of a federation with configuration cfg
// and scheme name; members and holds come from Coordinator.KeyCommittee,
// t from it once the key setup ran.
func keyMode(cfg protocol.Config, scheme string, names []string, members []int, holds []bool, t int) *KeyModeView {
	switch {
	case scheme == "plaintext":
		return &KeyModeView{Mode: "none", Summary: "No key: nothing is sealed (--plaintext).",
			Opens:    []KeyOpenLine{{Who: "the server alone", Opens: "every dual value, inner product and norm it holds or relays"}, coHolderLine},
			Colluder: "Nothing to collude for: the server reads everything already."}
	case cfg.Keys != protocol.KeysThreshold:
		return &KeyModeView{Mode: "shared",
			Summary: "Shared key: every participant derives the same key from the link secret, which the server never receives.",
			Opens: []KeyOpenLine{
				{Who: "the server alone", Opens: "nothing sealed"},
				{Who: "the server with any one participant (or anyone with the join link)", Opens: "every ciphertext the server ever received or sent: every participant's dual values, inner products and norms"},
				coHolderLine},
			Colluder: "A participant colluding with the server opens every participant's sealed values: its key is everyone's (--keys threshold closes that)."}
	}
	v := &KeyModeView{Mode: "threshold", Threshold: t, CommitteeSize: cfg.KeyCommittee}
	if t == 0 { // before the key setup: what the configuration asks for
		v.Threshold = cfg.KeyThreshold
	}
	for i, k := range members {
		name := fmt.Sprintf("participant %d", k)
		if k < len(names) {
			name = names[k]
		}
		v.Committee = append(v.Committee, KeyMember{Name: name, HoldsShare: holds[i]})
	}
	n := cfg.KeyCommittee
	if len(members) > 0 {
		n = len(members)
	}
	tt := v.Threshold
	v.Summary = fmt.Sprintf("Threshold keys, %d-of-%d: values are sealed under a collective key no one holds; every sum the server sends is first switched by %d committee members to the own key of the participant it goes to, and a member refuses to switch a chunk to a participant that does not hold its sample group.", tt, n, tt)
	v.Opens = []KeyOpenLine{
		{Who: "the server alone", Opens: "nothing sealed"},
		{Who: coalition(tt - 1),
			Opens: "only what those participants open by right (the sums of their own sample groups): none of another participant's dual values, inner products or norms"},
		{Who: fmt.Sprintf("the server with %d committee members", tt),
			Opens: "everything: together they can switch any ciphertext to any key"},
		coHolderLine,
	}
	v.Colluder = fmt.Sprintf("A participant colluding with the server opens nothing beyond the sums of its own sample groups; it takes %d colluding committee members to open another participant's values.", tt)
	return v
}

const (
	// viewHead is how many values of a plaintext vector a view shows.
	viewHead = 8
	// maxViewValues bounds the whole vectors a view includes.
	maxViewValues = 4096
)

const (
	formBGV   = "BGV ciphertext, unreadable without the federation secret"
	formPlain = "plaintext: the server CAN read these values"
)

var alsoPlaintext = []string{
	"the global model w and every participant's primal contribution (its share of the model, on the features it holds)",
	"each round, every holder's share of the change of its primal contribution (dw)",
	"each round, per reporting holder, sums of loss, dual term and correct predictions over its sample groups",
	"sample pseudonyms (keyed hashes of record ids), counts, feature indexes, timings",
}

// alsoPlaintextSealedPrimal is alsoPlaintext under sealed primal.
var alsoPlaintextSealedPrimal = []string{
	"the global model w and, each round, the sum of the participants' shares of its change (opened by one participant)",
	"each round, per reporting holder, sums of loss, dual term and correct predictions over its sample groups",
	"sample pseudonyms (keyed hashes of record ids), counts, feature indexes, timings",
}

// handleModel answers GET .../model: the ModelView, or with ?format=
// liblinear the model as LIBLINEAR's model file and with ?format=json its
// sidecar (shared/model), both as downloads. Any token of the federation
// may take it: every member trained it.
func (s *Server) handleModel(c echo.Context) error {
	f, _, err := s.member(c, "the model")
	if err != nil {
		return err
	}
	format := c.QueryParam("format")
	if format == "" {
		var last bool
		switch it := c.QueryParam("iterate"); it {
		case "", "best":
		case "last":
			last = true
		default:
			return httpError(http.StatusBadRequest, "bad-field", "iterate %q: best (the default: the model handed out) or last", it)
		}
		return c.JSON(http.StatusOK, f.model(last))
	}
	if format != "liblinear" && format != "json" {
		return httpError(http.StatusBadRequest, "bad-format", "format %q: want liblinear (LIBLINEAR's model file) or json (its sidecar), or none (the model view)", format)
	}
	m, info, err := f.modelFile()
	if err != nil {
		return err
	}
	name := fmt.Sprintf("hyfed-%s-round%d.model", f.meta.ID, info.ModelRound)
	var body []byte
	if format == "liblinear" {
		var buf bytes.Buffer
		if err := model.WriteLIBLINEAR(&buf, m); err != nil {
			return fmt.Errorf("model of federation %s: %w", f.meta.ID, err)
		}
		body = buf.Bytes()
	} else {
		name = model.SidecarPath(name)
		if body, err = info.Marshal(); err != nil {
			return fmt.Errorf("model of federation %s: %w", f.meta.ID, err)
		}
	}
	h := c.Response().Header()
	h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
	h.Set("Cache-Control", "no-store") // the model moves while training runs
	ctype := "text/plain; charset=utf-8"
	if format == "json" {
		ctype = "application/json"
	}
	return c.Blob(http.StatusOK, ctype, body)
}

// modelFile returns the model the federation hands out (Coordinator.Model)
// as a model file and its sidecar: the settings the server knows (not the
// participants' data) and the metrics of the model's round.
func (f *federation) modelFile() (*model.Model, *model.Info, error) {
	// A demo federation of this process trained on the data hyfed serve
	// --demo chose (asked before the federation lock: the seats have
	// their own).
	demo := f.srv.opt.DemoModel
	if demo != nil && !(f.meta.Demo && f.srv.opt.Demo != nil && f.srv.opt.Demo.Files(f.meta.ID) != nil) {
		demo = nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.coord.Started() {
		return nil, nil, httpError(http.StatusConflict, "no-model", "federation %s has no model yet: training has not started", f.meta.ID)
	}
	it := f.coord.Model()
	cfg := f.coord.Config()
	m, err := model.New(cfg.Loss, it.W)
	if err != nil {
		return nil, nil, fmt.Errorf("model of federation %s: %w", f.meta.ID, err)
	}
	info := &model.Info{Source: "federation", Algorithm: f.meta.Algo, Scheme: f.meta.Scheme, Step: cfg.Step,
		Loss: cfg.Loss, Lambda: cfg.Lambda, Fraction: cfg.Fraction, Inner: cfg.Inner, Clients: cfg.Clients,
		Rounds: f.coord.Round(), ModelRound: it.Round, Best: it.Best, NumFeatures: len(it.W),
		Metrics: model.Metrics{Primal: model.Num(it.Primal), HeldoutAccuracy: model.Num(it.HeldAcc), TrainAccuracy: model.Num(it.TrainAcc),
			Bound: model.Num(f.coord.Bound())}}
	if cfg.Baseline() {
		info.Step = ""
	}
	if demo != nil {
		info.Data, info.Partition, info.BiasFeature, info.BiasValue = demo.Data, demo.Partition, demo.BiasFeature, demo.BiasValue
	}
	if sch := cfg.Schema; sch != nil {
		// Scores raw values: the maps the participants scaled with.
		maps := f.coord.Scaling()
		if maps == nil {
			return nil, nil, httpError(http.StatusConflict, "no-model", "federation %s has no model yet: its participants are still preparing their data", f.meta.ID)
		}
		raw, ws, err := model.FromSchema(cfg.Loss, it.W, sch, maps)
		if err != nil {
			return nil, nil, fmt.Errorf("model of federation %s: %w", f.meta.ID, err)
		}
		m, info.Schema, info.Weights, info.NumFeatures = raw, sch, ws, raw.NumFeatures
		info.BiasFeature, info.BiasValue = 0, 0
	}
	for _, r := range f.coord.History() {
		if r.Round == it.Round && it.Best {
			info.Metrics.Dual = model.Num(r.Dual)
		}
	}
	if p := f.meta.PStar; p > 0 {
		info.Metrics.PStar = model.Num(p)
		if !math.IsNaN(it.Primal) {
			info.Metrics.RelativeLoss = model.Num((it.Primal - p) / p)
		}
	}
	return m, info, nil
}

func (s *Server) handleServerView(c echo.Context) error {
	f, a, err := s.member(c, "the server view")
	if err != nil {
		return err
	}
	v, err := f.serverView(a)
	if err != nil {
		return fmt.Errorf("server view of federation %s: %w", f.meta.ID, err)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, v)
}

// model is the best iterate, or with last the current one (the tests that
// compare runs bit for bit compare the last iterates).
func (f *federation) model(last bool) ModelView {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := ModelView{Round: f.coord.Round(), NumFeatures: f.coord.Config().NumFeatures}
	if !f.coord.Started() {
		return v
	}
	m := f.coord.Model()
	if last {
		m = protocol.Iterate{Round: f.coord.Round(), W: f.coord.W(), Primal: math.NaN(), HeldAcc: math.NaN()}
	}
	if m.W == nil {
		return v
	}
	v.NumFeatures, v.W = len(m.W), floats(m.W)
	v.ModelRound, v.Best, v.Primal, v.HeldoutAccuracy = m.Round, m.Best, Float(m.Primal), Float(m.HeldAcc)
	return v
}

func floats(x []float64) []Float {
	out := make([]Float, len(x))
	for i, v := range x {
		out[i] = Float(v)
	}
	return out
}

func plainView(what string, x []float64, features []int) *PlainView {
	v := &PlainView{What: what, Count: len(x), Head: floats(x[:min(len(x), viewHead)])}
	if len(x) <= maxViewValues {
		v.Values = floats(x)
		if len(features) == len(x) {
			v.Features = features
		}
	}
	return v
}

// serverView is what the server holds, as token a may see it: the
// aggregates and sizes for any member; a participant's own values (its
// primal contribution, its last change, under the plaintext scheme its
// dual values) only for that participant's session or the admin.
func (f *federation) serverView(a access) (*ServerView, error) {
	plain := f.meta.Scheme == "plaintext"
	form, key := formBGV, seal.Key(nil)
	if plain {
		form = formPlain
		if p, ok := f.scheme.(seal.Plaintext); ok {
			key = seal.PlainKey{S: p} // nothing is sealed: the server reads it
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cfg := f.coord.Config()
	v := &ServerView{ID: f.meta.ID, Name: f.meta.Name, State: f.stateLocked(), Round: f.coord.Round(), Scheme: f.meta.Scheme,
		NumFeatures: cfg.NumFeatures, SlotsPerCipher: f.scheme.ChunkLen(),
		Participants: []ParticipantHeld{}, AlsoPlaintext: alsoPlaintext, ServerCanReadDual: plain, Keys: cfg.Keys}
	switch {
	case plain:
		v.Note = "This federation runs WITHOUT encryption (--plaintext): the server can read every dual value it holds, and the values below are read from them."
	case cfg.Keys == protocol.KeysThreshold:
		v.Note = fmt.Sprintf("Threshold keys: dual values, their updates, inner products and squared norms reach the server only as BGV ciphertexts under the collective key of a %d-of-%d threshold key (its committee: the first %d participants), which no participant holds; every sum the server sends is first switched, by %d committee members, to the own key of the participant it goes to. The server with any %d participant(s) opens none of another participant's values; %d colluding committee members could.",
			cfg.KeyThreshold, cfg.KeyCommittee, cfg.KeyCommittee, cfg.KeyThreshold, cfg.KeyThreshold-1, cfg.KeyThreshold)
	default:
		v.Note = "Dual values, their updates, inner products and squared norms reach the server only as BGV ciphertexts; the key derives from the federation secret, which the server never receives. Shared key: every participant holds it, so a participant colluding with the server would open every participant's values (keys threshold closes that)."
	}
	if cfg.Baseline() {
		v.Note += " This federation runs " + cfg.Algo + ", a baseline: no dual values move (the sealed ones below stay 0); each participant's local model reaches the server only sealed, and only their sum is opened."
	}
	if cfg.SealPrimal {
		v.Note += " Sealed primal: every participant's primal contribution (its share of the model) and its changes arrive sealed too; the server holds only their sum, w, which a participant opens for it."
		v.AlsoPlaintext = alsoPlaintextSealedPrimal
	}
	members, holds, t := f.coord.KeyCommittee()
	v.KeyMode = keyMode(cfg, f.meta.Scheme, f.names, members, holds, t)
	started := f.coord.Started()
	if w := f.coord.W(); started && w != nil {
		v.W = plainView("global model w", w, nil)
		v.NumFeatures = len(w)
	}
	held := f.coord.Held()
	if held.Alpha != nil {
		r := f.coord.Round()
		v.SealedAsOfRound = &r
		all := chunksOf(held.Alpha)
		dual, err := summarize(f.scheme, key, held.Alpha, all, nil)
		if err != nil {
			return nil, err
		}
		norms, err := summarize(f.scheme, key, held.Norms, chunksOf(held.Norms), nil)
		if err != nil {
			return nil, err
		}
		v.Dual = dual.view("dual values a_n of all samples", form, held.Samples)
		v.Norms = norms.view("squared row norms of all samples, summed over their holders", form, held.Samples)
		if a.role != roleAdmin {
			v.Dual.Readable, v.Norms.Readable = nil, nil
		}
	}
	summed := summedChunkBytes(f.scheme, held.Alpha)
	infos := f.coord.Clients()
	for k, name := range f.names {
		p := ParticipantHeld{Name: name, State: "left-before-start"}
		if k >= len(infos) || !infos[k].Registered {
			v.Participants = append(v.Participants, p)
			continue
		}
		ci := infos[k]
		p.Samples, p.Features, p.State = ci.Samples, ci.Features, participantState(ci, f.finished)
		if k < len(held.Clients) && held.Alpha != nil && len(held.Clients[k].Slots) > 0 {
			hc := held.Clients[k]
			dual, err := summarize(f.scheme, key, held.Alpha, hc.Chunks, hc.Slots)
			if err != nil {
				return nil, err
			}
			norms, err := summarize(f.scheme, key, held.Norms, hc.Chunks, hc.Slots)
			if err != nil {
				return nil, err
			}
			p.Dual = dual.view("dual values a_n of its samples", form, len(hc.Slots))
			p.Norms = norms.view("squared norms of its samples' rows, summed over their holders", form, len(hc.Slots))
			if !a.mayReadClient(k) {
				p.Dual.Readable, p.Norms.Readable = nil, nil
			}
			p.RoundAggregates = &SealedView{What: "per round: the direction d and the inner products x.u of its samples, summed, sent back, not kept",
				Form: form, Ciphertexts: 2 * len(hc.Chunks), Bytes: 2 * len(hc.Chunks) * summed, Values: 2 * len(hc.Slots)}
		}
		if started && k < len(held.Clients) && a.mayReadClient(k) {
			if hw := f.coord.HatW(k); hw != nil {
				p.HatW = plainView("primal contribution: this participant's share of the model, on the features it holds", hw, held.Clients[k].Features)
			}
			if dw, r := f.coord.LastChange(k); dw != nil {
				p.Change = plainView(fmt.Sprintf("change of the primal contribution received in round %d: a weighted sum of the rows of the %d sample(s) per group the round moved", r, cfg.Inner), dw, held.Clients[k].Features)
			}
			p.PrimalSealed = cfg.SealPrimal
		}
		v.Participants = append(v.Participants, p)
	}
	return v, nil
}

// chunksOf lists the chunks a sealed vector has, ascending.
func chunksOf(v seal.Vec) []int {
	out := make([]int, 0, len(v))
	for ci := range v {
		out = append(out, ci)
	}
	sort.Ints(out)
	return out
}

// summedChunkBytes is the wire size of one chunk of v (a sum of
// ciphertexts, as the round's aggregates are); 0 for an empty v.
func summedChunkBytes(scheme seal.Scheme, v seal.Vec) int {
	for _, c := range v {
		return scheme.WireSize(c)
	}
	return 0
}

// sealedVec sums up a sealed vector (or the part of it on some chunks).
type sealedVec struct {
	ciphertexts int
	bytes       int
	readable    []float64 // plaintext scheme only
}

func (s sealedVec) view(what, form string, values int) *SealedView {
	v := &SealedView{What: what, Form: form, Ciphertexts: s.ciphertexts, Bytes: s.bytes, Values: values}
	if s.readable != nil {
		v.Readable = floats(s.readable)
	}
	return v
}

// summarize counts the chunks of v among the given ones and their bytes;
// with a key (the plaintext scheme only) it also reads the first values,
// of the given slots or, if none are given, of the vector.
func summarize(scheme seal.Scheme, key seal.Key, v seal.Vec, chunks, slots []int) (sealedVec, error) {
	var s sealedVec
	for _, ci := range chunks {
		if c, ok := v[ci]; ok {
			s.ciphertexts++
			s.bytes += scheme.WireSize(c)
		}
	}
	if key == nil {
		return s, nil
	}
	if slots == nil {
		for _, ci := range chunks {
			for j := 0; j < scheme.ChunkLen() && len(slots) < viewHead; j++ {
				slots = append(slots, ci*scheme.ChunkLen()+j)
			}
		}
	}
	vals, err := seal.OpenSlots(key, v, slots[:min(len(slots), viewHead)])
	if err != nil {
		return s, fmt.Errorf("reading plaintext values: %w", err)
	}
	s.readable = vals
	return s, nil
}
