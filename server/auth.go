package server

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/labstack/echo/v4"
)

// Who may do what (docs/security.md has the whole table). Every token is
// a random string the server keeps only as a hash; requests carry it as
// "Authorization: Bearer <token>", websockets as a subprotocol, pages in
// their URL's fragment (which browsers never send).
//
//	admin    the organizer: everything, every participant's values, actions
//	viewer   the dashboard: status, events, model, aggregate views
//	invite   a prospective participant: what a viewer reads, registering,
//	         a demo federation's blocks
//	session  participant k: what a viewer reads, k's own values
type role int

const (
	roleNone role = iota
	roleViewer
	roleInvite
	roleSession
	roleAdmin
)

// access is what a request's token grants on one federation.
type access struct {
	role   role
	client int // the participant, for roleSession
}

// member: any token of the federation (reads the status, the model, the
// aggregate views).
func (a access) member() bool { return a.role != roleNone }

// mayReadClient says whether the token may read participant k's own
// values (its primal contribution, its change, the attack on its rows).
func (a access) mayReadClient(k int) bool {
	return a.role == roleAdmin || (a.role == roleSession && a.client == k)
}

// authorize maps a token to its access. Each comparison is of hashes in
// constant time: the cost of a wrong token is one SHA-256.
func (f *federation) authorize(tok string) access {
	if tok == "" {
		return access{}
	}
	h := []byte(hashToken(tok))
	eq := func(hash string) bool { return hash != "" && subtle.ConstantTimeCompare(h, []byte(hash)) == 1 }
	switch {
	case eq(f.meta.AdminHash):
		return access{role: roleAdmin, client: -1}
	case eq(f.meta.ViewerHash):
		return access{role: roleViewer, client: -1}
	case eq(f.meta.InviteHash):
		return access{role: roleInvite, client: -1}
	}
	if f.loadSessions() != nil {
		return access{}
	}
	f.sessMu.RLock()
	k, ok := f.sessions[string(h)]
	f.sessMu.RUnlock()
	if ok {
		return access{role: roleSession, client: k}
	}
	return access{}
}

func bearer(c echo.Context) string {
	t, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(t)
}

// errToken is the answer to a request without a token that grants it.
func errToken(what string) error {
	return httpError(http.StatusUnauthorized, "bad-token", "%s needs a token of this federation (Authorization: Bearer ...): the dashboard or join link carries one after '#'", what)
}

// member looks the federation up and checks that the request carries one
// of its tokens. The token is checked against the federation's record
// before the federation is loaded: a request without a valid token never
// makes the server read a checkpoint.
func (s *Server) member(c echo.Context, what string) (*federation, access, error) {
	f, err := s.record(c)
	if err != nil {
		return nil, access{}, err
	}
	a := f.authorize(bearer(c))
	if !a.member() {
		return nil, a, errToken(what)
	}
	return f, a, s.load(c, f)
}

// adminOf looks the federation up and checks for its admin token.
func (s *Server) adminOf(c echo.Context, what string) (*federation, error) {
	f, err := s.record(c)
	if err != nil {
		return nil, err
	}
	if f.authorize(bearer(c)).role != roleAdmin {
		return nil, httpError(http.StatusUnauthorized, "bad-token", "%s needs the federation's admin token (Authorization: Bearer ...)", what)
	}
	return f, s.load(c, f)
}

// record is the federation of the request's :id, loaded or not.
func (s *Server) record(c echo.Context) (*federation, error) {
	s.mu.Lock()
	f := s.feds[c.Param("id")]
	s.mu.Unlock()
	if f == nil {
		return nil, errUnknown(c.Param("id"))
	}
	return f, nil
}

// load loads an authorized request's federation.
func (s *Server) load(c echo.Context, f *federation) error {
	if !f.ensure() {
		return errUnknown(c.Param("id"))
	}
	return nil
}

func errUnknown(id string) error {
	return httpError(http.StatusNotFound, "unknown-federation", "no federation %q on this server", id)
}

// operator says whether the request carries the server's create token.
func (s *Server) operator(c echo.Context) bool {
	tok := bearer(c)
	return s.opt.CreateToken != "" && tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.opt.CreateToken)) == 1
}

// socketTokens reads the invite or session token a websocket offered.
func socketTokens(r *http.Request) (invite, session string) {
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(h, ",") {
			p = strings.TrimSpace(p)
			if t, ok := strings.CutPrefix(p, protocol.SocketInvitePrefix); ok {
				invite = t
			} else if t, ok := strings.CutPrefix(p, protocol.SocketSessionPrefix); ok {
				session = t
			}
		}
	}
	return invite, session
}
