// Package session runs one participant against a hyfed server: it parses
// join links, registers, answers the coordinator's messages, and reconnects
// with its session token when the connection drops. It does no network I/O
// of its own: a Dialer supplies connections (gorilla websockets natively, the
// browser's WebSocket in the wasm participant).
package session

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/hyfed/hyfed/shared/secret"
)

// Link is a parsed join link: /join/<id>?invite=<token>#<secret>. The
// fragment is never sent to a server by browsers; it holds the federation
// secret and, for a federation that seals nothing, a "plaintext:" prefix
// (so a server cannot talk a participant out of encryption).
type Link struct {
	Base   string // scheme://host[:port], no trailing slash
	ID     string
	Invite string
	Secret secret.Secret
	Scheme string // bgv (default) or plaintext
}

// ParseLink reads a join link.
func ParseLink(s string) (Link, error) {
	var l Link
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return l, fmt.Errorf("join link: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return l, fmt.Errorf("join link: scheme %q, want http or https", u.Scheme)
	}
	if u.Host == "" {
		return l, fmt.Errorf("join link: no host")
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) < 2 || parts[len(parts)-2] != "join" || parts[len(parts)-1] == "" {
		return l, fmt.Errorf("join link: path %q, want /join/<federation id>", u.Path)
	}
	prefix := strings.Join(parts[:len(parts)-2], "/")
	l.Base = u.Scheme + "://" + u.Host
	if prefix != "" {
		l.Base += "/" + prefix
	}
	l.ID = parts[len(parts)-1]
	l.Invite = u.Query().Get("invite")
	if l.Invite == "" {
		return l, fmt.Errorf("join link: no invite token (?invite=...)")
	}
	frag := u.Fragment
	l.Scheme = "bgv"
	if rest, ok := strings.CutPrefix(frag, "plaintext:"); ok {
		l.Scheme, frag = "plaintext", rest
	}
	if frag == "" {
		return l, fmt.Errorf("join link: no secret after '#': ask the organizer for the whole link")
	}
	if l.Secret, err = secret.Parse(frag); err != nil {
		return l, fmt.Errorf("join link: the secret after '#': %w", err)
	}
	return l, nil
}

// String returns the link.
func (l Link) String() string {
	frag := l.Secret.String()
	if l.Scheme == "plaintext" {
		frag = "plaintext:" + frag
	}
	return fmt.Sprintf("%s/join/%s?invite=%s#%s", l.Base, url.PathEscape(l.ID), url.QueryEscape(l.Invite), frag)
}

// SocketURL is the participants' websocket of the federation, entered with
// the invite (first time) or the session token (reconnects).
func (l Link) SocketURL(session string) string {
	base := l.Base
	switch {
	case strings.HasPrefix(base, "https://"):
		base = "wss://" + strings.TrimPrefix(base, "https://")
	case strings.HasPrefix(base, "http://"):
		base = "ws://" + strings.TrimPrefix(base, "http://")
	}
	q := url.Values{}
	if session != "" {
		q.Set("session", session)
	} else {
		q.Set("invite", l.Invite)
	}
	return fmt.Sprintf("%s/api/federations/%s/ws?%s", base, url.PathEscape(l.ID), q.Encode())
}

// StatusURL is the federation's status endpoint.
func (l Link) StatusURL() string {
	return fmt.Sprintf("%s/api/federations/%s", l.Base, url.PathEscape(l.ID))
}

// redact drops the query (tokens) from a URL for error messages.
func redact(url string) string {
	for i := range url {
		if url[i] == '?' {
			return url[:i]
		}
	}
	return url
}
