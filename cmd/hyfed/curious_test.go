package main

import (
	"bufio"
	"context"
	"github.com/hyfed/hyfed/shared/protocol"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hyfed/hyfed/server"
)

// TestServeCuriousFlag: hyfed serve runs the curious-server demonstration
// only when asked (--demo asks by default: TestDemoBlocksAndFill), and the
// federations' status says whether it runs.
func TestServeCuriousFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--curious"}, true},
		{[]string{"--curious=false"}, false},
	} {
		t.Run(strings.Join(append([]string{"serve"}, c.args...), " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			pr, pw := io.Pipe()
			errc := make(chan error, 1)
			go func() {
				errc <- runServe(ctx, append([]string{"--addr", "127.0.0.1:0", "--data-dir", t.TempDir()}, c.args...), pw, io.Discard)
				pw.Close()
			}()
			base, token := serveLines(t, pr)
			var resp server.CreateResponse
			if err := postJSON(ctx, base+"/api/federations", token, server.CreateRequest{Config: protocol.Config{Lambda: protocol.DefaultLambda, IIC: protocol.DefaultIIC, Clients: 2, Rounds: 3}}, &resp); err != nil {
				t.Fatal(err)
			}
			var st server.Status
			if err := getJSON(ctx, base+"/api/federations/"+resp.ID, resp.ViewerToken, &st); err != nil {
				t.Fatal(err)
			}
			if st.Curious != c.want {
				t.Errorf("status says curious %v, want %v", st.Curious, c.want)
			}
			cancel()
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// serveLines reads hyfed serve's first lines (listening:, create:) and
// returns its base URL and the create token it made; the rest of its
// output is drained.
func serveLines(t *testing.T, r io.Reader) (base, token string) {
	t.Helper()
	br := bufio.NewReader(r)
	for base == "" || token == "" {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("hyfed serve printed %q (%v)", line, err)
		}
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "listening: "); ok {
			base = v
		} else if v, ok := strings.CutPrefix(line, "create: "); ok {
			_, token, _ = strings.Cut(v, "#create=")
		}
	}
	go io.Copy(io.Discard, br)
	return base, token
}
