package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// runBenchAbuse replays the two floods of the hardening issue against a
// hyfed serve child process and prints its resident memory: creations
// (anonymous, then with the create token) and 60 MB hellos on participant
// sockets (without a token, then with the invite).
func runBenchAbuse(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench-abuse", stderr)
	secs := fs.Duration("duration", 10*time.Second, "how long each flood lasts")
	workers := fs.Int("workers", 4, "concurrent clients per flood")
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
		Fingerprint: sec.Fingerprint(), Config: protocol.Config{Lambda: protocol.DefaultLambda, IIC: protocol.DefaultIIC, Clients: 2, Rounds: 3}}
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
		return func() string {
			d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, Subprotocols: protos}
			ws, _, err := d.DialContext(ctx, link.SocketURL(), nil)
			if err != nil {
				return "refused before the upgrade"
			}
			defer ws.Close()
			ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
			werr := ws.WriteMessage(websocket.BinaryMessage, hello)
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
				if m, err := protocol.DecodeMessage(nil, b, protocol.DefaultLimits); err == nil && m.Kind == protocol.KindError {
					return "error " + m.Code
				}
			}
		}
	}
	floods := []struct {
		name string
		do   func() string
	}{
		{"create, no token", create("")},
		{"create, create token", create(token)},
		{"60 MB hello, no token", socket([]string{protocol.SocketProtocol})},
		{"60 MB hello, wrong invite", socket([]string{protocol.SocketProtocol, protocol.SocketInvitePrefix + "guess"})},
		{"60 MB hello, the invite", socket(link.SocketProtocols(""))},
	}
	fmt.Fprintf(stdout, "server pid %d, %d workers, %v per flood; RSS in MB (resident set of the server process)\n", pid, *workers, *secs)
	fmt.Fprintf(stdout, "%-28s %9s %9s %9s %9s  %s\n", "flood", "requests", "rss before", "rss peak", "rss +10s", "answers")
	for _, fl := range floods {
		time.Sleep(2 * time.Second)
		before := rssMB(pid)
		peak := before
		stop := time.Now().Add(*secs)
		var mu sync.Mutex
		answers := map[string]int{}
		n := 0
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
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		tick := time.NewTicker(100 * time.Millisecond)
	watch:
		for {
			select {
			case <-done:
				break watch
			case <-tick.C:
				peak = max(peak, rssMB(pid))
			}
		}
		tick.Stop()
		time.Sleep(10 * time.Second)
		after := rssMB(pid)
		keys := make([]string, 0, len(answers))
		for k := range answers {
			keys = append(keys, fmt.Sprintf("%s: %d", k, answers[k]))
		}
		sort.Strings(keys)
		fmt.Fprintf(stdout, "%-28s %9d %9.1f %9.1f %9.1f  %s\n", fl.name, n, before, peak, after, strings.Join(keys, ", "))
	}
	return nil
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
