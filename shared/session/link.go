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

	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/secret"
)

// Link is a parsed join link: /join/<id>#invite=<token>&secret=<secret>.
// The fragment is never sent to a server by browsers (nor logged by
// proxies); it holds the invite and the federation secret, the latter with
// a "plaintext:" prefix for a federation that seals nothing (so a server
// cannot talk a participant out of encryption) or a "threshold:" prefix for
// one with threshold keys (so a server cannot talk a participant back to
// the key every participant derives from the link). Links of the older form
// /join/<id>?invite=<token>#<secret> are read too.
type Link struct {
	Base   string // scheme://host[:port], no trailing slash
	ID     string
	Invite string
	Secret secret.Secret
	Scheme string // bgv (default), bgv-threshold or plaintext
	// OPRF: the federation aligns samples by OPRF pseudonyms (the
	// fragment's pseudonyms=oprf), so the participant never sends keyed
	// ones, whatever a server says.
	OPRF bool
}

// SchemeThreshold is the Scheme of a link to a federation with threshold
// keys (its secret has the prefix "threshold:").
const SchemeThreshold = "bgv-threshold"

// Threshold reports whether the link is to a federation with threshold keys.
func (l Link) Threshold() bool { return l.Scheme == SchemeThreshold }

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
	frag := u.Fragment
	if strings.Contains(frag, "secret=") || strings.Contains(frag, "invite=") {
		v, err := url.ParseQuery(frag)
		if err != nil {
			return l, fmt.Errorf("join link: the part after '#': %w", err)
		}
		l.Invite, frag = v.Get("invite"), v.Get("secret")
		switch ps := v.Get("pseudonyms"); ps {
		case "", "keyed":
		case "oprf":
			l.OPRF = true
		default:
			return l, fmt.Errorf("join link: pseudonyms=%q, want oprf", ps)
		}
	} else {
		l.Invite = u.Query().Get("invite") // the older form
	}
	if l.Invite == "" {
		return l, fmt.Errorf("join link: no invite token (#invite=...): ask the organizer for the whole link")
	}
	l.Scheme = "bgv"
	if rest, ok := strings.CutPrefix(frag, "plaintext:"); ok {
		l.Scheme, frag = "plaintext", rest
	} else if rest, ok := strings.CutPrefix(frag, "threshold:"); ok {
		l.Scheme, frag = SchemeThreshold, rest
	}
	if frag == "" {
		return l, fmt.Errorf("join link: no secret (#...&secret=...): ask the organizer for the whole link")
	}
	if l.Secret, err = secret.Parse(frag); err != nil {
		return l, fmt.Errorf("join link: the secret: %w", err)
	}
	return l, nil
}

// Fragment is the part of the link after '#': the invite and the secret.
func (l Link) Fragment() string {
	sec := SecretPrefix(l.Scheme) + l.Secret.String()
	f := "invite=" + url.QueryEscape(l.Invite) + "&secret=" + sec
	if l.OPRF {
		f += "&" + OPRFParam
	}
	return f
}

// OPRFParam ends the fragment of a link to a federation that aligns samples
// by OPRF pseudonyms.
const OPRFParam = "pseudonyms=oprf"

// SecretPrefix is what precedes the secret in the link of a federation
// sealed with scheme (a seal.Scheme's name): "plaintext:", "threshold:" or
// nothing.
func SecretPrefix(scheme string) string {
	switch scheme {
	case "plaintext":
		return "plaintext:"
	case SchemeThreshold:
		return "threshold:"
	}
	return ""
}

// String returns the link.
func (l Link) String() string {
	return fmt.Sprintf("%s/join/%s#%s", l.Base, url.PathEscape(l.ID), l.Fragment())
}

// SocketURL is the participants' websocket of the federation. It carries
// no token: SocketProtocols does.
func (l Link) SocketURL() string {
	base := l.Base
	switch {
	case strings.HasPrefix(base, "https://"):
		base = "wss://" + strings.TrimPrefix(base, "https://")
	case strings.HasPrefix(base, "http://"):
		base = "ws://" + strings.TrimPrefix(base, "http://")
	}
	return fmt.Sprintf("%s/api/federations/%s/ws", base, url.PathEscape(l.ID))
}

// SocketProtocols are the websocket subprotocols a participant offers:
// the protocol's name and its token, the invite (first time) or the
// session token (returning). Browsers cannot set headers on a WebSocket;
// a subprotocol is the one header they send that is not logged with URLs.
func (l Link) SocketProtocols(session string) []string {
	if session != "" {
		return []string{protocol.SocketProtocol, protocol.SocketSessionPrefix + session}
	}
	return []string{protocol.SocketProtocol, protocol.SocketInvitePrefix + l.Invite}
}

// StatusURL is the federation's status endpoint.
func (l Link) StatusURL() string {
	return fmt.Sprintf("%s/api/federations/%s", l.Base, url.PathEscape(l.ID))
}
