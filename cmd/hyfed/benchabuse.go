package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// runBenchAbuse replays the floods of docs/security.md against a hyfed
// serve child process and prints its resident memory: creations
// (anonymous, then with the create token), 60 MB hellos on participant
// sockets (without a token, then with the invite), and the floods of
// registered participants: 63 MB frames in place of their replies, and
// reconnections with their session tokens, while others train.
func runBenchAbuse(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench-abuse", stderr)
	secs := fs.Duration("duration", 10*time.Second, "how long each flood lasts")
	workers := fs.Int("workers", 4, "concurrent clients per unauthenticated flood")
	seats := fs.Int("seats", 16, "registered participants that send 63 MB frames in place of their replies")
	storm := fs.Int("storm", 8, "registered participants whose session tokens reconnect in a storm")
	if err := parse(fs, args); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "hyfed-bench-abuse")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cmd, base, token, err := startServeProcess(ctx, dir, "127.0.0.1:0", stderr, nil)
	if err != nil {
		return err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	sec, err := secret.New()
	if err != nil {
		return err
	}
	var target server.CreateResponse
	targetReq := server.CreateRequest{Name: "target",
		Fingerprint: sec.Fingerprint(), Config: protocol.Config{Lambda: protocol.DefaultLambda, IIC: protocol.DefaultIIC, Clients: 2, Rounds: 3, Tol: protocol.NoTol}}
	if err := postJSON(ctx, base+"/api/federations", token, targetReq, &target); err != nil {
		return err
	}
	link, err := session.ParseLink(joinLink(base, &target, sec, targetReq))
	if err != nil {
		return err
	}
	body := []byte(`{"min_participants":2,"rounds":3}`)
	create := func(tok string) func() string {
		return func() string {
			req, _ := http.NewRequestWithContext(ctx, "POST", base+"/api/federations", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return "error"
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return strconv.Itoa(resp.StatusCode)
		}
	}
	hello := bytes.Repeat([]byte{0x7f}, 60<<20)
	socket := func(protos []string) func() string {
		return func() string { return sendFrame(ctx, link.SocketURL(), protos, hello) }
	}
	fmt.Fprintf(stdout, "server pid %d, %d workers, %v per flood; RSS in MB (resident set of the server process)\n", pid, *workers, *secs)
	fmt.Fprintf(stdout, "%-34s %9s %9s %9s %9s  %s\n", "flood", "requests", "rss before", "rss peak", "rss +10s", "answers")
	row := func(name string, n int, answers map[string]int, before, peak, after float64) {
		fmt.Fprintf(stdout, "%-34s %9d %9.1f %9.1f %9.1f  %s\n", name, n, before, peak, after, joinAnswers(answers))
	}
	for _, fl := range []struct {
		name string
		do   func() string
	}{
		{"create, no token", create("")},
		{"create, create token", create(token)},
		{"60 MB hello, no token", socket([]string{protocol.SocketProtocol})},
		{"60 MB hello, wrong invite", socket([]string{protocol.SocketProtocol, protocol.SocketInvitePrefix + "guess"})},
		{"60 MB hello, the invite", socket(link.SocketProtocols(""))},
	} {
		time.Sleep(2 * time.Second)
		answers, n := map[string]int{}, 0
		before, peak, after := measureFlood(pid, 10*time.Second, func() {
			var mu sync.Mutex
			stop := time.Now().Add(*secs)
			var wg sync.WaitGroup
			for range *workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for time.Now().Before(stop) && ctx.Err() == nil {
						a := fl.do()
						mu.Lock()
						answers[a]++
						n++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
		})
		row(fl.name, n, answers, before, peak, after)
	}

	// The registered participants' floods, in a federation that trains
	// meanwhile: two honest participants go on alone.
	m, err := startMembers(ctx, base, token, membersOptions{Honest: 2, Flood: *seats, Storm: *storm, Rounds: 1 << 20})
	if err != nil {
		return err
	}
	defer m.close(ctx)
	if err := m.waitRound(ctx, 3, 5*time.Minute); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	r0 := m.round(ctx)
	before, peak, after := measureFlood(pid, 10*time.Second, func() { m.floodBigFrames(*secs) })
	r1 := m.round(ctx)
	row(fmt.Sprintf("63 MB frames, %d seats", *seats), int(m.bigSent.Load()), m.floodAnswers(), before, peak, after)
	var n int
	var answers map[string]int
	before, peak, after = measureFlood(pid, 10*time.Second, func() { n, answers = m.reconnectStorm(ctx, *secs) })
	r2 := m.round(ctx)
	row(fmt.Sprintf("reconnects, %d sessions", *storm), n, answers, before, peak, after)
	fmt.Fprintf(stdout, "the registered participants' federation (2 honest participants train on): round %d to %d during the frames, to %d during the reconnects\n", r0, r1, r2)
	return nil
}

// measureFlood runs flood and returns a process's RSS in MB before it, at
// the peak while it runs (sampled every 50 ms), and settle after it.
func measureFlood(pid int, settle time.Duration, flood func()) (before, peak, after float64) {
	before = rssMB(pid)
	peak = before
	done := make(chan struct{})
	go func() { flood(); close(done) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			peak = max(peak, rssMB(pid))
			time.Sleep(settle)
			return before, peak, rssMB(pid)
		case <-tick.C:
			peak = max(peak, rssMB(pid))
		}
	}
}

// joinAnswers prints answer counts sorted by answer.
func joinAnswers(answers map[string]int) string {
	keys := make([]string, 0, len(answers))
	for k, n := range answers {
		keys = append(keys, fmt.Sprintf("%s: %d", k, n))
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// sendFrame opens a participant socket with the subprotocols, sends frame
// first, and says how the server answered: an error's code, or how it
// closed.
func sendFrame(ctx context.Context, url string, protos []string, frame []byte) string {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, Subprotocols: protos}
	ws, _, err := d.DialContext(ctx, url, nil)
	if err != nil {
		return "refused before the upgrade"
	}
	defer ws.Close()
	ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	werr := ws.WriteMessage(websocket.BinaryMessage, frame)
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, b, err := ws.ReadMessage()
		if err != nil {
			if ce, ok := err.(*websocket.CloseError); ok {
				return fmt.Sprintf("closed %d", ce.Code)
			}
			if werr != nil {
				return "closed while sending"
			}
			return "closed"
		}
		if m, err := protocol.DecodeMessage(nil, b, protocol.DefaultLimits); err == nil {
			switch m.Kind {
			case protocol.KindError:
				return "error " + m.Code
			case protocol.KindWelcome:
				return "welcome"
			}
		}
	}
}

// membersOptions shape a federation of participants run in this process.
type membersOptions struct {
	Honest, Flood, Storm int // participants of each kind, in that order of blocks
	Rounds               int
}

// members is a federation run by participants in this process, for the
// floods of registered participants: honest ones, seats that send a 63 MB
// frame in place of each reply once told to, and seats whose session
// tokens then reconnect in a storm. One horizontal block each of a
// synthetic data set; a tenth of them connected keep it going.
type members struct {
	o                 membersOptions
	base, admin, id   string
	link              session.Link
	scheme            seal.Scheme
	blocks            []*partition.Block
	hellos            [][]byte
	sessions          []string
	errs              []error
	cancel            []context.CancelFunc
	done              []chan struct{}
	flooding          atomic.Bool
	bigSent           atomic.Int64
	mu                sync.Mutex
	answers           map[string]int // what the big frames' seats got back
	frame             []byte
	honestWG, floodWG sync.WaitGroup
}

func startMembers(ctx context.Context, base, token string, o membersOptions) (*members, error) {
	n := o.Honest + o.Flood + o.Storm
	p, err := experiment.Prepare(experiment.Options{Data: fmt.Sprintf("synthetic:%d,12,1,0.05,3", 40*n), Holdout: 0.2, Partition: fmt.Sprintf("horizontal:%d", n)})
	if err != nil {
		return nil, err
	}
	sec, err := secret.New()
	if err != nil {
		return nil, err
	}
	req := server.CreateRequest{Name: "members", Fingerprint: sec.Fingerprint(), RoundTimeout: server.Duration(10 * time.Second),
		Config: protocol.Config{Lambda: 1e-2, IIC: 0.2, Clients: n, Rounds: o.Rounds, Tol: protocol.NoTol, Quorum: 0.1, NumFeatures: p.Data.M()}}
	var resp server.CreateResponse
	if err := postJSON(ctx, base+"/api/federations", token, req, &resp); err != nil {
		return nil, fmt.Errorf("members: create: %w", err)
	}
	link, err := session.ParseLink(joinLink(base, &resp, sec, req))
	if err != nil {
		return nil, err
	}
	scheme, err := seal.ByName(link.Scheme)
	if err != nil {
		return nil, err
	}
	m := &members{o: o, base: base, admin: resp.AdminToken, id: resp.ID, link: link, scheme: scheme, answers: map[string]int{},
		frame: bytes.Repeat([]byte{0x7f}, 63<<20), sessions: make([]string, n), errs: make([]error, n),
		cancel: make([]context.CancelFunc, n), done: make([]chan struct{}, n)}
	for i := range p.Blocks {
		b := &p.Blocks[i]
		m.blocks = append(m.blocks, b)
		pt, err := protocol.NewParticipant(b, link.Secret, nil)
		if err != nil {
			return nil, err
		}
		h, err := protocol.EncodeMessage(scheme, pt.Hello())
		if err != nil {
			return nil, err
		}
		m.hellos = append(m.hellos, h)
	}
	dial := session.WebSocket(64 << 20)
	for i, b := range m.blocks {
		pctx, cancel := context.WithCancel(ctx)
		m.cancel[i], m.done[i] = cancel, make(chan struct{})
		d := dial
		wg := &m.honestWG
		if i >= o.Honest && i < o.Honest+o.Flood {
			wg = &m.floodWG
			d = func(ctx context.Context, url string, protos []string) (session.Conn, error) {
				c, err := dial(ctx, url, protos)
				if err != nil {
					return nil, err
				}
				return &bigFrames{Conn: c, m: m}, nil
			}
		}
		if i < o.Honest+o.Flood {
			wg.Add(1)
		}
		welcomed := make(chan struct{})
		var once sync.Once
		go func() {
			defer close(m.done[i])
			if i < o.Honest+o.Flood {
				defer wg.Done()
			}
			_, err := session.Run(pctx, link, b, session.Options{Dial: d, RetryFor: time.Minute, OnWelcome: func(s, _ string) {
				m.mu.Lock()
				m.sessions[i] = s
				m.mu.Unlock()
				once.Do(func() { close(welcomed) })
			}})
			m.mu.Lock()
			m.errs[i] = err
			m.mu.Unlock()
		}()
		// In block order: the server numbers them as they register.
		select {
		case <-welcomed:
		case <-m.done[i]:
			return nil, fmt.Errorf("members: participant %d did not register: %w", i, m.errs[i])
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return m, nil
}

// bigFrames is a participant's connection that, once its federation
// floods, sends a 63 MB frame in place of each reply (its hello goes as
// it is: it registers again with its session token after each close), and
// counts how the server answered.
type bigFrames struct {
	session.Conn
	m     *members
	wrote bool
}

func (b *bigFrames) Write(ctx context.Context, f []byte) error {
	big := b.wrote && b.m.flooding.Load()
	if big {
		b.m.bigSent.Add(1)
		f = b.m.frame
	}
	b.wrote = true
	err := b.Conn.Write(ctx, f)
	if big && err != nil {
		b.m.mu.Lock()
		b.m.answers["closed while sending"]++
		b.m.mu.Unlock()
	}
	return err
}

func (b *bigFrames) Read(ctx context.Context) ([]byte, error) {
	f, err := b.Conn.Read(ctx)
	answer := ""
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ce):
		answer = fmt.Sprintf("closed %d", ce.Code)
	case err != nil:
		answer = "connection lost"
	default:
		if m, derr := protocol.DecodeMessage(b.m.scheme, f, protocol.DefaultLimits); derr == nil && m.Kind == protocol.KindError && m.Close {
			answer = "error " + m.Code
		}
	}
	if answer != "" && b.m.flooding.Load() {
		b.m.mu.Lock()
		b.m.answers[answer]++
		b.m.mu.Unlock()
	}
	return f, err
}

// round is the federation's round (-1 if the status does not answer).
func (m *members) round(ctx context.Context) int {
	var st server.Status
	if err := getJSON(ctx, m.base+"/api/federations/"+m.id, m.admin, &st); err != nil {
		return -1
	}
	return st.Round
}

// waitRound waits until the federation reaches round r.
func (m *members) waitRound(ctx context.Context, r int, within time.Duration) error {
	end := time.Now().Add(within)
	for m.round(ctx) < r {
		if time.Now().After(end) {
			return fmt.Errorf("members: round %d not reached within %v", r, within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// floodBigFrames has the flood seats send 63 MB frames until the server
// refuses them all (each is closed, then barred) or within passes.
func (m *members) floodBigFrames(within time.Duration) {
	m.flooding.Store(true)
	done := make(chan struct{})
	go func() { m.floodWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(within):
	}
}

// floodAnswers is what the flood seats got back: closes and errors while
// flooding, and how each seat's session ended.
func (m *members) floodAnswers() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	for k, n := range m.answers {
		out[k] = n
	}
	for i := m.o.Honest; i < m.o.Honest+m.o.Flood; i++ {
		select {
		case <-m.done[i]:
			if code := protocol.ErrorCode(m.errs[i]); code != "" {
				out["session ended: "+code]++
			} else if m.errs[i] != nil {
				out["session ended: "+m.errs[i].Error()]++
			}
		default:
			out["session still on"]++
		}
	}
	return out
}

// barred reports whether every flood seat's session ended dropped by the
// federation, and says how each ended otherwise.
func (m *members) barred() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := m.o.Honest; i < m.o.Honest+m.o.Flood; i++ {
		if code := protocol.ErrorCode(m.errs[i]); code != protocol.CodeDropped {
			return fmt.Errorf("flood seat %d: its session ended with %v, want %q", i, m.errs[i], protocol.CodeDropped)
		}
	}
	return nil
}

// reconnectStorm stops the storm seats' sessions and has each reconnect
// with its session token (its hello, until the welcome) over and over for
// d; it returns the reconnections and their answers.
func (m *members) reconnectStorm(ctx context.Context, d time.Duration) (int, map[string]int) {
	first := m.o.Honest + m.o.Flood
	for i := first; i < len(m.blocks); i++ {
		m.cancel[i]()
		<-m.done[i]
	}
	var mu sync.Mutex
	answers, n := map[string]int{}, 0
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := first; i < len(m.blocks); i++ {
		protos := m.link.SocketProtocols(m.sessions[i])
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) && ctx.Err() == nil {
				a := sendFrame(ctx, m.link.SocketURL(), protos, m.hellos[i])
				mu.Lock()
				answers[a]++
				n++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return n, answers
}

// honestDone waits for the honest participants' sessions and returns
// their first error.
func (m *members) honestDone(ctx context.Context) error {
	done := make(chan struct{})
	go func() { m.honestWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.o.Honest {
		if m.errs[i] != nil {
			return fmt.Errorf("honest participant %d: %w", i, m.errs[i])
		}
	}
	return nil
}

// close stops the federation and every participant still running.
func (m *members) close(ctx context.Context) {
	postJSON(ctx, m.base+"/api/federations/"+m.id+"/stop", m.admin, struct{}{}, nil)
	for i, c := range m.cancel {
		c()
		<-m.done[i]
	}
}

// rssMB is a process's resident set (VmRSS) in MB.
func rssMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
