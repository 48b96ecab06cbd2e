package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"testing"
	"time"
)

// sseChunks is an event stream cut where a network may cut it: inside a
// line, between the \r and the \n of a line end; with a comment, \r, \n and
// \r\n line ends, a multi-line data field, a field without a space after
// the colon, an id, a retry, a named event and an unfinished last event
// (which is dropped).
var sseChunks = []string{
	": a comment, ignored\n",
	"event: status\ndata: {\"a\":", "1}\n\n",
	"data: line 1\r", "\ndata: line 2\r\n\r\n",
	"id: 7\ndata: after the id\n\n",
	"data:no space\rdata:  two spaces\r\r",
	"event: custom\ndata: x\nretry: 60000\n\n",
	"data: never finished",
}

// TestEventsReaderParsesLikeEventSource runs the pages' event reader
// (hyfed.js's events, over fetch) and the browser's own EventSource on the
// same stream, cut into the chunks above: both must see the same events,
// and the reader must have sent the bearer token.
func TestEventsReaderParsesLikeEventSource(t *testing.T) {
	ts := startServer(t)
	// The stream is served from the pages' own origin (CSP connect-src
	// 'self'): a proxy in front of the server adds it.
	target, err := url.Parse(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/e2e-sse" {
			proxy.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		rc := http.NewResponseController(w)
		write := func(s string) {
			w.Write([]byte(s))
			rc.Flush()
			time.Sleep(20 * time.Millisecond) // one chunk each, as far as the network goes
		}
		write("event: auth\ndata: " + r.Header.Get("Authorization") + "\n\n")
		for _, c := range sseChunks {
			write(c)
		}
	}))
	t.Cleanup(front.Close)

	b := newBrowser(t)
	tb := newTab(t, b)
	tb.allowConsole(`e2e-sse`) // EventSource logs the end of each stream it reconnects to
	tb.navigate(front.URL + "/")
	script := `(async () => {
	  const types = ['message', 'status', 'custom', 'auth'];
	  const viaEventSource = await new Promise((resolve) => {
	    const got = [], es = new EventSource('/e2e-sse');
	    for (const t of types) es.addEventListener(t, (e) => got.push([t, e.data, e.lastEventId]));
	    es.onerror = () => { es.close(); resolve(got); }; // the stream ended
	  });
	  const viaReader = await new Promise((resolve) => {
	    const got = [];
	    const s = hyfed.events('/e2e-sse', 'the-token', (t, d, id) => got.push([t, d, id]),
	      (state) => { if (state === 'reconnecting') { s.close(); resolve(got); } });
	  });
	  return JSON.stringify({viaEventSource, viaReader});
	})()`
	out := evalAsync[string](tb, "the two readers", script)
	var got struct{ ViaEventSource, ViaReader [][3]string }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	auth := func(evs [][3]string) (string, [][3]string) {
		var a string
		var rest [][3]string
		for _, e := range evs {
			if e[0] == "auth" {
				a = e[1]
				continue
			}
			rest = append(rest, e)
		}
		return a, rest
	}
	esAuth, es := auth(got.ViaEventSource)
	rdAuth, rd := auth(got.ViaReader)
	if esAuth != "" || rdAuth != "Bearer the-token" {
		t.Errorf("Authorization: EventSource sent %q (want none), the reader %q (want Bearer the-token)", esAuth, rdAuth)
	}
	want := [][3]string{{"status", `{"a":1}`, ""}, {"message", "line 1\nline 2", ""}, {"message", "after the id", "7"},
		{"message", "no space\n two spaces", "7"}, {"custom", "x", "7"}}
	if !reflect.DeepEqual(es, want) {
		t.Errorf("EventSource saw %q, want %q (the test's expectation is wrong)", es, want)
	}
	if !reflect.DeepEqual(rd, es) {
		t.Errorf("the reader saw %q; EventSource %q", rd, es)
	}
	t.Logf("both saw %d events: %q", len(rd), rd)
}
