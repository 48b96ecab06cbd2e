// Package tab is the browser participant's logic, kept free of syscall/js
// so that it builds and is tested natively: it loads the file the user
// picked (a block file, or the user's own CSV read against the
// federation's schema), summarizes it for the page, runs the participant through
// shared/session and reports what happens (and what leaves the tab) as
// events. wasmclient's main only moves bytes and events across syscall/js.
package tab

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/session"
	"github.com/hyfed/hyfed/shared/table"
)

// MaxFileBytes bounds the file a page may load (a tab has little memory to
// spare; 512 MB is far above any block a browser can train on).
const MaxFileBytes = 512 << 20

// Summary describes a loaded block for the page. It is computed in the tab
// and never sent.
type Summary struct {
	File        string `json:"file"`
	Bytes       int    `json:"bytes"`
	Samples     int    `json:"samples"`
	Train       int    `json:"train"`
	Heldout     int    `json:"heldout"`
	Positive    int    `json:"positive"`
	Negative    int    `json:"negative"`
	Unlabelled  int    `json:"unlabelled"`
	Features    int    `json:"features"`
	NumFeatures int    `json:"num_features"`
	Columns     string `json:"columns"` // the block's features as 1-based ranges
	NonZeros    int    `json:"non_zeros"`
	// Image is set for 28x28 images (784 pixels, and a bias feature or an
	// intercept; an own file's only if every feature column is a pixel on
	// a declared scale): the page then draws rows and weights as pictures.
	Image bool `json:"image"`
	// Preview is the block's first rows. An own file's values are those
	// the federation trains on where the schema alone fixes the map (a
	// declared scale, a category), others raw until the preparation (the
	// prepared event's rows).
	Preview []Row `json:"preview"`
	// Mapping is set for the user's own CSV file: which of its columns
	// feed which of the schema's features, for the page to show before
	// anything is sent.
	Mapping *table.Mapping `json:"mapping,omitempty"`
}

// Row is one sample of the block, on its non-zero features (0-based
// global indexes).
type Row struct {
	// Index is the row's place in the block: the order of the hello, in
	// which the server (and a curious server's reconstruction) knows it.
	Index    int       `json:"index"`
	ID       string    `json:"id"`
	Label    float64   `json:"label"`
	Heldout  bool      `json:"heldout"`
	Features []int     `json:"features"`
	Values   []float64 `json:"values"`
}

// PreviewRows is how many rows the summary carries, the block's first: the
// join page shows a few, the privacy view puts them beside the curious
// server's reconstruction of the same rows (server.Options.Curious).
const PreviewRows = 64

// Load reads the file the user picked: a block file (LIBSVM or CSV, as
// hyfed partition writes them) or, in a federation with a schema (s not
// nil), the user's own CSV file read against it (table.Load). The errors
// are table.Load's, which say what the federation takes, once.
func Load(name string, data []byte, s *schema.Schema, o table.Options) (*partition.Block, *Summary, error) {
	if len(data) > MaxFileBytes {
		return nil, nil, fmt.Errorf("%s: %d bytes, more than the %d MB a tab can load", name, len(data), MaxFileBytes>>20)
	}
	b, m, err := table.Load(name, data, s, o)
	if err != nil {
		return nil, nil, err
	}
	if b.N() == 0 {
		return nil, nil, fmt.Errorf("%s: the file has no samples", name)
	}
	sum := summarize(name, len(data), b)
	sum.Mapping = m
	if m != nil {
		sum.Image = imageSchema(s)
		knownScale(sum.Preview, s)
	}
	return b, sum, nil
}

// imageSchema reports whether a schema's features are a 28x28 image's
// pixels on a declared scale (the demo's: pixels declared at 255).
func imageSchema(s *schema.Schema) bool {
	if len(s.Features) != 784 {
		return false
	}
	for _, f := range s.Features {
		if f.Scale <= 0 || f.Categories != nil {
			return false
		}
	}
	return true
}

// knownScale maps the preview's values of the columns whose map the schema
// alone fixes (a declared scale, a category) as the preparation will: the
// rows then show on the scale the model and the server see them on.
func knownScale(rows []Row, s *schema.Schema) {
	cols := s.Columns()
	g := s.Divisor(seal.MaxAbs)
	for _, r := range rows {
		for i, f := range r.Features {
			switch c := cols[f]; {
			case c.Feature < 0:
			case c.Categorical():
				r.Values[i] = schema.CategoryMap(g).Apply(r.Values[i])
			case c.Scale > 0:
				r.Values[i] = s.Clip(f, schema.Declared(c.Scale, g), g).Apply(r.Values[i])
			}
		}
	}
}

// PreparedRows returns the first PreviewRows rows of b, a block read from
// the participant's own file, as the federation trains them: each column
// mapped as the participant reported it after the preparation (scales:
// offset and scale a column, Message.Scales) and clipped as the schema
// says, a missing cell 0, the intercept where setup gives it to this
// participant. The privacy view compares them with the curious server's
// reconstruction, which is of these values.
func PreparedRows(b *partition.Block, s *schema.Schema, setup *protocol.Setup, scales []float64) ([]Row, error) {
	if len(scales) != 2*len(b.Features) || len(setup.Group) != b.N() {
		return nil, fmt.Errorf("prepared rows: %d scales for %d columns, %d groups for %d samples", len(scales), len(b.Features), len(setup.Group), b.N())
	}
	g := s.Divisor(seal.MaxAbs)
	ic := s.InterceptColumn()
	maps := make([]schema.Map, len(b.Features))
	for j, f := range b.Features {
		maps[j] = s.Clip(f, schema.Map{Offset: scales[2*j], Scale: scales[2*j+1]}, g)
	}
	intercept := map[int]bool{}
	for _, lg := range setup.Intercept {
		intercept[lg] = true
	}
	missing := map[[2]int]bool{}
	if b.Raw != nil {
		for _, c := range b.Raw.Missing {
			missing[c] = true
		}
	}
	n := min(b.N(), PreviewRows)
	rows := make([]Row, 0, n)
	for i := range n {
		r := Row{Index: i, ID: b.IDs[i], Label: b.Y[i], Heldout: b.Heldout[i], Features: []int{}, Values: []float64{}}
		for j, f := range b.Features {
			var v float64
			switch {
			case f == ic:
				if intercept[setup.Group[i]] {
					v = schema.InterceptValue
				}
			case missing[[2]int{i, j}]:
			default:
				v = maps[j].Apply(b.X.At(i, j))
			}
			if v != 0 {
				r.Features = append(r.Features, f)
				r.Values = append(r.Values, v)
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func summarize(name string, size int, b *partition.Block) *Summary {
	s := &Summary{File: name, Bytes: size, Samples: b.N(), Features: len(b.Features), NumFeatures: b.NumFeatures,
		Columns: partition.FormatRanges(b.Features), NonZeros: b.X.NNZ()}
	s.Image = b.NumFeatures == 784 || b.NumFeatures == 785
	for i := range b.IDs {
		switch {
		case b.Heldout[i]:
			s.Heldout++
		case b.Y[i] > 0:
			s.Train++
			s.Positive++
		case b.Y[i] < 0:
			s.Train++
			s.Negative++
		default:
			s.Train++
			s.Unlabelled++
		}
	}
	for i := 0; i < b.N() && len(s.Preview) < PreviewRows; i++ {
		idx, val := b.X.Row(i)
		r := Row{Index: i, ID: b.IDs[i], Label: b.Y[i], Heldout: b.Heldout[i], Features: []int{}, Values: []float64{}}
		if idx == nil { // dense: every column
			for j, v := range val {
				if v != 0 {
					r.Features = append(r.Features, b.Features[j])
					r.Values = append(r.Values, v)
				}
			}
		} else {
			for j, c := range idx {
				r.Features = append(r.Features, b.Features[c])
				r.Values = append(r.Values, val[j])
			}
		}
		s.Preview = append(s.Preview, r)
	}
	return s
}

// Event is what the tab reports to its page. Type says which fields are
// set: summary (Summary), state (State, Name, Message, WaitMS), progress
// (Round, Rounds, Phase, Active), sent (Sent), error (Code, Message), done
// (Result), bench (Replay), keys (KeyState), prepared (Preview: an own
// file's first rows as the federation trains them, PreparedRows).
type Event struct {
	Type    string        `json:"type"`
	State   string        `json:"state,omitempty"` // connecting, registered, reconnecting
	Name    string        `json:"name,omitempty"`
	Session string        `json:"session,omitempty"` // the token to return with after a reload (kept in the tab)
	Message string        `json:"message,omitempty"`
	Code    string        `json:"code,omitempty"`
	WaitMS  int64         `json:"wait_ms,omitempty"`
	Round   int           `json:"round,omitempty"`
	Rounds  int           `json:"rounds,omitempty"`
	Phase   string        `json:"phase,omitempty"`
	Active  *bool         `json:"active,omitempty"`
	Sent    *Sent         `json:"sent,omitempty"`
	Result  *Result       `json:"result,omitempty"`
	Summary *Summary      `json:"summary,omitempty"`
	Replay  *ReplayResult `json:"replay,omitempty"`
	Preview []Row         `json:"preview,omitempty"`
	// KeyState is the participant's party of a threshold key, for the page
	// to keep beside the session token and hand back after a reload
	// (Resume). It is sealed under a key derived from the link secret
	// (protocol.Participant.KeyState): storage without the link cannot
	// open it. JSON carries it in base64.
	KeyState []byte `json:"key_state,omitempty"`
}

// Sent is what has left the tab so far, by message kind.
type Sent struct {
	Frames int `json:"frames"`
	Bytes  int `json:"bytes"`
	// SealedBytes are ciphertexts (BGV: unreadable without the secret);
	// PlainBytes the rest of the frames: kind, round, and the plaintext
	// numbers the protocol sends (the primal contribution hat_w_k, the
	// direction on the tab's features, loss and accuracy sums).
	SealedBytes  int                  `json:"sealed_bytes"`
	PlainBytes   int                  `json:"plain_bytes"`
	PlainNumbers int                  `json:"plain_numbers"`
	ByKind       map[string]*KindSent `json:"by_kind"`
}

// KindSent counts one kind of message.
type KindSent struct {
	Frames       int `json:"frames"`
	SealedBytes  int `json:"sealed_bytes"`
	PlainBytes   int `json:"plain_bytes"`
	PlainNumbers int `json:"plain_numbers"`
}

func (s *Sent) add(m *protocol.Message, frame []byte) {
	hdr, sealed, ok := protocol.FrameParts(frame)
	if !ok {
		hdr, sealed = len(frame), 0
	}
	nums := PlainNumbers(m)
	s.Frames++
	s.Bytes += len(frame)
	s.SealedBytes += sealed
	s.PlainBytes += hdr
	s.PlainNumbers += nums
	k := s.ByKind[string(m.Kind)]
	if k == nil {
		k = &KindSent{}
		s.ByKind[string(m.Kind)] = k
	}
	k.Frames++
	k.SealedBytes += sealed
	k.PlainBytes += hdr
	k.PlainNumbers += nums
}

func (s *Sent) clone() *Sent {
	c := *s
	c.ByKind = make(map[string]*KindSent, len(s.ByKind))
	for k, v := range s.ByKind {
		kv := *v
		c.ByKind[k] = &kv
	}
	return &c
}

// PlainNumbers counts the numbers a message carries in plaintext (outside
// its sealed vectors).
func PlainNumbers(m *protocol.Message) int {
	n := len(m.HatW) + len(m.DW) + len(m.W) + len(m.Grid) +
		len(m.GridLoss) + len(m.GridConj) + len(m.GridWDot) + len(m.GridTrainOK) + len(m.GridHeldOK)
	if m.DConj != 0 {
		n++
	}
	return n
}

// Result closes a run.
type Result struct {
	Name       string `json:"name"`
	Rounds     int    `json:"rounds"`
	Reconnects int    `json:"reconnects"`
	BytesSent  int    `json:"bytes_sent"`
	BytesRecv  int    `json:"bytes_received"`
	Seconds    int    `json:"seconds"`
}

// CodeKeyMode is the error code of a join link whose key mode is not the
// federation's: a threshold federation's link without "threshold:" (or a
// "threshold:" link to a federation with the shared key). Either way the
// organizer's link is the one to open.
const CodeKeyMode = "key-mode"

// phases name the coordinator's messages for people (the page shows them
// as the round's phase), in words, not the protocol's names.
var phases = map[protocol.Kind]string{
	protocol.KindSetup: "setting up", protocol.KindNorms: "setting up", protocol.KindRefresh: "refreshing your samples' numbers",
	protocol.KindStep: "a local step on your samples", protocol.KindDirection: "taking the group's step", protocol.KindWeights: "scoring your samples",
	protocol.KindGram: "sharing products of the rows picked", protocol.KindGramSum: "solving the group's step",
	protocol.KindTrial: "step size search", protocol.KindApply: "applying the step",
	protocol.KindPrep: "preparing: labels and column scales",
	// Threshold keys: every participant makes its party of the key; the
	// committee members deal and take Shamir shares, and later switch the
	// sums the coordinator hands the others to their own keys.
	protocol.KindKeySetup: "setting up the threshold key", protocol.KindKeySetups: "setting up the threshold key",
	protocol.KindOPRFSetup: "making the pseudonyms of your record ids", protocol.KindOPRFShares: "making the pseudonyms of your record ids",
	protocol.KindOPRFEvals: "making the pseudonyms of your record ids",
	protocol.KindKeyShares: "setting up the threshold key", protocol.KindSwitch: "switching a sum to its receiver's key (key committee)",
}

// CodeData is the error code of data that cannot take part (a file that
// does not fit the federation, a value too large to seal): the page says
// so, since joining again with the same file fails alike.
const CodeData = "data"

// Resume is what a reloaded page kept of its earlier run: the seat's
// session token (state event) and the threshold key state (keys event).
type Resume struct {
	Session  string
	KeyState []byte
}

// Run takes part in the federation of the join link href with block b
// until training ends, reporting to emit (called from Run's goroutine and
// from session callbacks, never concurrently). A non-empty r.Session
// returns to a seat taken before (a reloaded page), with r.KeyState its
// party of a threshold key. The returned error is also emitted as an error
// event.
func Run(ctx context.Context, href string, r Resume, b *partition.Block, dial session.Dialer, emit func(Event)) error {
	start := time.Now()
	link, err := session.ParseLink(href)
	if err != nil {
		emit(Event{Type: "error", Code: "bad-link", Message: err.Error() + " (open the whole join link, including the part after #)"})
		return err
	}
	sent := &Sent{ByKind: map[string]*KindSent{}}
	rounds := 0
	lastSent := time.Time{}
	// The preparation's setup, until the maps this participant reports
	// after it give the rows as the federation trains them.
	var prep *protocol.Setup
	emit(Event{Type: "state", State: "connecting"})
	res, err := session.Run(ctx, link, b, session.Options{
		Browser:  true,
		Dial:     dial,
		Session:  r.Session,
		KeyState: r.KeyState,
		OnKeyState: func(state []byte) {
			emit(Event{Type: "keys", KeyState: state})
		},
		OnWelcome: func(token, name string) {
			emit(Event{Type: "state", State: "registered", Name: name, Session: token})
		},
		OnMessage: func(m *protocol.Message) {
			if m.Setup != nil {
				rounds = m.Setup.Config.Rounds
				if m.Setup.Prepare && m.Setup.Config.Schema != nil && b.Raw != nil {
					prep = m.Setup
				}
			}
			ph, ok := phases[m.Kind]
			if !ok {
				return
			}
			e := Event{Type: "progress", Round: m.Round, Rounds: rounds, Phase: ph}
			if m.Kind == protocol.KindStep || m.Kind == protocol.KindGram {
				a := m.Active
				e.Active = &a
			}
			emit(e)
		},
		OnSend: func(m *protocol.Message, frame []byte) {
			sent.add(m, frame)
			if prep != nil && len(m.Scales) > 0 {
				if rows, err := PreparedRows(b, prep.Config.Schema, prep, m.Scales); err == nil {
					emit(Event{Type: "prepared", Preview: rows})
				}
				prep = nil
			}
			// Bulk, not per frame: crossing into the page costs.
			if time.Since(lastSent) > 200*time.Millisecond || m.Kind == protocol.KindHello {
				lastSent = time.Now()
				emit(Event{Type: "sent", Sent: sent.clone()})
			}
		},
		OnRetry: func(err error, wait time.Duration) {
			emit(Event{Type: "state", State: "reconnecting", Message: err.Error(), WaitMS: wait.Milliseconds()})
		},
	})
	emit(Event{Type: "sent", Sent: sent.clone()})
	if err != nil {
		code := ""
		var ce *protocol.CodedError
		if errors.As(err, &ce) {
			code = ce.Code
		}
		if errors.Is(err, session.ErrKeyMode) {
			code = CodeKeyMode
		}
		if errors.Is(err, protocol.ErrData) || errors.Is(err, seal.ErrRange) {
			code = CodeData
		}
		emit(Event{Type: "error", Code: code, Message: err.Error()})
		return err
	}
	emit(Event{Type: "done", Result: &Result{Name: res.Name, Rounds: res.Rounds, Reconnects: res.Reconnects,
		BytesSent: res.BytesSent, BytesRecv: res.BytesRecv, Seconds: int(time.Since(start).Seconds())}})
	return nil
}
