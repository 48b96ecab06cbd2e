package server

import (
	"encoding/json"
	"math"
	"sync"

	"github.com/hyfed/hyfed/shared/protocol"
)

// event is one entry of a federation's live stream.
type event struct {
	Type    string       `json:"type"` // round, phase, participant, state
	Round   int          `json:"round,omitempty"`
	Phase   string       `json:"phase,omitempty"`
	Name    string       `json:"name,omitempty"`
	State   string       `json:"state,omitempty"`
	Metrics *MetricsView `json:"metrics,omitempty"`
}

// hub fans events out to subscribers. A subscriber that falls behind is
// dropped (its stream ends; a dashboard reconnects and reloads the status).
type hub struct {
	mu   sync.Mutex
	subs map[chan []byte]struct{}
	done bool
}

func newHub() *hub { return &hub{subs: map[chan []byte]struct{}{}} }

func (h *hub) subscribe() chan []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := make(chan []byte, 256)
	if h.done {
		close(ch)
		return ch
	}
	h.subs[ch] = struct{}{}
	return ch
}

func (h *hub) unsubscribe(ch chan []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[ch]; ok {
		delete(h.subs, ch)
		close(ch)
	}
}

func (h *hub) publish(e event) {
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- b:
		default:
			delete(h.subs, ch)
			close(ch)
		}
	}
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done = true
	for ch := range h.subs {
		delete(h.subs, ch)
		close(ch)
	}
}

// Float is a float64 that is null in JSON when not finite (a partial
// round's primal, say), since JSON has no NaN.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

// UnmarshalJSON implements json.Unmarshaler: null reads as NaN.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Float(v)
	return nil
}

// MetricsView is one round's metrics as the API shows them.
type MetricsView struct {
	Round    int   `json:"round"`
	Primal   Float `json:"primal"`
	Dual     Float `json:"dual"`
	Gap      Float `json:"gap"`
	TrainAcc Float `json:"train_accuracy"`
	HeldAcc  Float `json:"heldout_accuracy"`
	Gamma    Float `json:"gamma"`
	Active   int   `json:"active"`
	Updated  int   `json:"groups_updated"`
	Partial  bool  `json:"partial"`
	// Reformed: the federation re-formed before this round without the
	// sample groups of a dropped participant (another objective from here).
	Reformed bool               `json:"reformed,omitempty"`
	Seconds  map[string]float64 `json:"seconds"`
	BytesIn  int                `json:"bytes_to_server"`
	BytesOut int                `json:"bytes_from_server"`
}

func metricsView(r protocol.RoundMetrics) *MetricsView {
	return &MetricsView{Round: r.Round, Primal: Float(r.Primal), Dual: Float(r.Dual), Gap: Float(r.Gap),
		TrainAcc: Float(r.TrainAcc), HeldAcc: Float(r.HeldAcc), Gamma: Float(r.Gamma), Active: r.Active,
		Updated: r.Updated, Partial: r.Partial, Reformed: r.Reformed, Seconds: r.Seconds, BytesIn: r.BytesIn, BytesOut: r.BytesOut}
}

// RoundMetrics converts back (for clients of the API, such as hyfed sim).
func (v *MetricsView) RoundMetrics() protocol.RoundMetrics {
	return protocol.RoundMetrics{Round: v.Round, Primal: float64(v.Primal), Dual: float64(v.Dual), Gap: float64(v.Gap),
		TrainAcc: float64(v.TrainAcc), HeldAcc: float64(v.HeldAcc), Gamma: float64(v.Gamma), Active: v.Active,
		Updated: v.Updated, Partial: v.Partial, Reformed: v.Reformed, Seconds: v.Seconds, BytesIn: v.BytesIn, BytesOut: v.BytesOut}
}
