package session

import (
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/secret"
)

func TestParseLink(t *testing.T) {
	sec := secret.FromSeed(1)
	for _, tc := range []struct {
		link, err string
		scheme    string
	}{
		{"http://localhost:8080/join/abc#invite=tok&secret=" + sec.String(), "", "bgv"},
		{"https://example.org/hyfed/join/abc#invite=tok&secret=plaintext:" + sec.String(), "", "plaintext"},
		{"http://localhost:8080/join/abc#secret=" + sec.String() + "&invite=tok", "", "bgv"},
		{"https://example.org/join/abc#invite=tok&secret=threshold:" + sec.String(), "", SchemeThreshold},
		// The older form, with the invite in the query.
		{"http://localhost:8080/join/abc?invite=tok#" + sec.String(), "", "bgv"},
		{"https://example.org/hyfed/join/abc?invite=tok#plaintext:" + sec.String(), "", "plaintext"},
		{"http://x/join/abc#invite=tok", "secret", ""},
		{"http://x/join/abc#secret=" + sec.String(), "invite", ""},
		{"http://x/join/abc#invite=tok;x&secret=" + sec.String(), "after '#'", ""},
		{"ftp://x/join/abc?invite=tok#" + sec.String(), "scheme", ""},
		{"http://x/joint/abc?invite=tok#" + sec.String(), "path", ""},
		{"http://x/join/abc#" + sec.String(), "invite", ""},
		{"http://x/join/abc?invite=tok", "secret", ""},
		{"http://x/join/abc?invite=tok#short", "secret", ""},
	} {
		l, err := ParseLink(tc.link)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one about %s", tc.link, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.link, err)
		}
		if l.ID != "abc" || l.Invite != "tok" || l.Secret != sec || l.Scheme != tc.scheme {
			t.Fatalf("%s: %+v", tc.link, l)
		}
		if back, err := ParseLink(l.String()); err != nil || back != l {
			t.Fatalf("%s: round trip %+v %v", tc.link, back, err)
		}
	}
	l, _ := ParseLink("https://example.org/hyfed/join/abc#invite=tok&secret=" + sec.String())
	if got := l.String(); got != "https://example.org/hyfed/join/abc#invite=tok&secret="+sec.String() {
		t.Fatalf("link %s", got)
	}
	// No token in the socket's URL (URLs get logged): it rides in a
	// subprotocol.
	if got := l.SocketURL(); got != "wss://example.org/hyfed/api/federations/abc/ws" {
		t.Fatalf("socket URL %s", got)
	}
	for _, tc := range []struct {
		session string
		want    []string
	}{
		{"", []string{"hyfed.v1", "hyfed.invite.tok"}},
		{"s1", []string{"hyfed.v1", "hyfed.session.s1"}},
	} {
		if got := l.SocketProtocols(tc.session); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("session %q: protocols %q, want %q", tc.session, got, tc.want)
		}
	}
}

// FuzzParseLink: any text gives a link or an error, and a link prints
// back to one that parses the same.
func FuzzParseLink(f *testing.F) {
	f.Add("http://localhost:8080/join/abc?invite=tok#" + secret.FromSeed(1).String())
	f.Add("http://localhost:8080/join/abc#invite=tok&secret=" + secret.FromSeed(1).String())
	f.Add("https://h/p/join/x?invite=a%20b#plaintext:" + secret.FromSeed(2).String())
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLink(s)
		if err != nil {
			return
		}
		back, err := ParseLink(l.String())
		if err != nil || back != l {
			t.Fatalf("%q -> %q: %+v %v", s, l.String(), back, err)
		}
	})
}
