package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"time"

	"github.com/hyfed/hyfed/shared/protocol"
	"golang.org/x/time/rate"

	"github.com/hyfed/hyfed/web"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// Handler returns the HTTP routes. Tokens (auth.go) travel as
// "Authorization: Bearer <token>"; "member" is any token of the
// federation (admin, viewer, invite, a participant's session).
//
//	GET    /healthz                          liveness
//	POST   /api/federations                  create (create token; CreateRequest -> CreateResponse)
//	GET    /api/federations                  list (create token; else [])
//	GET    /api/federations/:id              status (member)
//	DELETE /api/federations/:id              delete it and its checkpoints (admin)
//	POST   /api/federations/:id/:action      start, pause, resume, stop (admin)
//	GET    /api/federations/:id/events       server-sent events: round, phase, participant, state (member)
//	GET    /api/federations/:id/ws           participants' websocket (invite or session token as a subprotocol)
//	GET    /api/federations/:id/demo-blocks  a demo federation's blocks ([]DemoBlock; invite or admin)
//	GET    /api/federations/:id/demo-blocks/:k  demo block k's file: named CSV (a schema's demo) or a block file (invite or admin)
//	POST   /api/federations/:id/fill         a demo's free seats to simulated participants (admin)
//	GET    /api/federations/:id/model        the model w: {round, num_features, w, model_round, best, ...} (member);
//	                                          ?format=liblinear: LIBLINEAR's model file, ?format=json: its sidecar (downloads)
//	GET    /api/federations/:id/server-view  what the server holds; a participant's own values only for its session or admin
//	GET    /api/federations/:id/attack       the curious server's progress per participant (member; Options.Curious)
//	GET    /api/federations/:id/attack/rows  ?from=&count=: the reconstruction of the token holder's rows (session; admin: &participant=k)
//	GET    /join/:id, /federations/:id, /    pages
//	GET    /federations/:id/privacy, /new    pages: privacy view, create a federation
func (s *Server) Handler() http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.Use(s.securityHeaders)
	e.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]any{"status": "ok"})
	})
	e.POST("/api/federations", s.handleCreate, s.createLimiter())
	e.GET("/api/federations", func(c echo.Context) error {
		if !s.operator(c) {
			return c.JSON(http.StatusOK, []Summary{}) // the list is the operator's
		}
		return c.JSON(http.StatusOK, s.list())
	})
	e.GET("/api/federations/:id", func(c echo.Context) error {
		f, _, err := s.member(c, "the status")
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, f.status())
	})
	e.DELETE("/api/federations/:id", s.handleDelete)
	e.GET("/api/federations/:id/demo-blocks", s.handleDemoList)
	e.GET("/api/federations/:id/demo-blocks/:k", s.handleDemoBlock)
	e.POST("/api/federations/:id/fill", s.handleFill)
	e.POST("/api/federations/:id/:action", s.handleAdmin)
	e.GET("/api/federations/:id/events", s.handleEvents)
	e.GET("/api/federations/:id/ws", s.handleSocket)
	e.GET("/api/federations/:id/model", s.handleModel)
	e.GET("/api/federations/:id/server-view", s.handleServerView)
	e.GET("/api/federations/:id/attack", s.handleAttack)
	e.GET("/api/federations/:id/attack/rows", s.handleAttackRows)
	static := web.Static()
	page := func(name string) echo.HandlerFunc {
		return func(c echo.Context) error {
			b, err := fs.ReadFile(static, name)
			if err != nil {
				return err
			}
			return c.HTMLBlob(http.StatusOK, b)
		}
	}
	e.GET("/", page("index.html"))
	e.GET("/join/:id", page("join.html"))
	e.GET("/federations/:id", page("dashboard.html"))
	e.GET("/federations/:id/privacy", page("privacy.html"))
	e.GET("/new", page("new.html"))
	// The wasm participant is 12 MB, 3 MB compressed.
	e.Group("/static", middleware.Gzip()).StaticFS("/", static)
	return e
}

// contentSecurityPolicy: the pages load scripts, styles, the wasm and the
// worker from this server only, are never framed, and send no referrer
// (their URLs' fragments hold tokens; the fragment is never sent, but the
// rule is cheap).
const contentSecurityPolicy = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data: blob:; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; " +
	"frame-ancestors 'none'; form-action 'self'"

func (s *Server) securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Content-Type-Options", "nosniff")
		if s.opt.TLS || c.Request().TLS != nil {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		return next(c)
	}
}

// createLimiter bounds creations per address: a refused one costs a map
// look-up (echo's limiter, golang.org/x/time/rate buckets).
func (s *Server) createLimiter() echo.MiddlewareFunc {
	return middleware.RateLimiterWithConfig(middleware.RateLimiterConfig{
		Store: middleware.NewRateLimiterMemoryStoreWithConfig(middleware.RateLimiterMemoryStoreConfig{
			Rate: rate.Limit(s.opt.CreateRate), Burst: s.opt.CreateBurst, ExpiresIn: 3 * time.Minute}),
		IdentifierExtractor: func(c echo.Context) (string, error) { return c.RealIP(), nil },
		DenyHandler: func(c echo.Context, _ string, _ error) error {
			return httpError(http.StatusTooManyRequests, "rate-limited", "too many federations created from this address: at most %g per second", s.opt.CreateRate)
		},
	})
}

// apiError is every error body: a message for people, a code for programs.
type apiError struct {
	Error string `json:"error"`
	Code  string `json:"code,omitempty"`
}

func httpError(status int, code, format string, args ...any) error {
	return echo.NewHTTPError(status, apiError{Error: fmt.Sprintf(format, args...), Code: code})
}

func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, body := http.StatusInternalServerError, apiError{Error: err.Error()}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		status = he.Code
		switch m := he.Message.(type) {
		case apiError:
			body = m
		default:
			body = apiError{Error: fmt.Sprint(m)}
		}
	}
	if status >= 500 {
		s.log.Error("request failed", "path", c.Path(), "error", err)
	}
	c.JSON(status, body)
}

func (s *Server) handleCreate(c echo.Context) error {
	creator := "operator"
	switch {
	case s.operator(c):
	case s.opt.OpenCreate:
		creator = "address " + c.RealIP()
	default:
		return httpError(http.StatusUnauthorized, "bad-token", "creating federations on this server needs its create token (Authorization: Bearer ...; hyfed serve prints a /new link carrying it)")
	}
	if mt, _, err := mime.ParseMediaType(c.Request().Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return httpError(http.StatusUnsupportedMediaType, "bad-content-type", "a federation request is JSON: Content-Type: application/json")
	}
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, 1<<20+1))
	if err != nil {
		return httpError(http.StatusBadRequest, "bad-request", "reading the request: %v", err)
	}
	if len(body) > 1<<20 {
		return httpError(http.StatusRequestEntityTooLarge, "too-large", "request body over 1 MiB")
	}
	req := NewCreateRequest() // a field left out keeps its default
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return httpError(http.StatusBadRequest, "bad-request", "federation request: %v", err)
	}
	// The configuration reads 0 as the default; a request that gives 0
	// for a setting where 0 means nothing is refused, not defaulted.
	var given struct {
		Lambda *float64 `json:"lambda"`
		IIC    *float64 `json:"iic"`
		Rounds *int     `json:"rounds"`
	}
	if json.Unmarshal(body, &given) == nil {
		switch {
		case given.Lambda != nil && *given.Lambda == 0:
			return httpError(http.StatusBadRequest, "bad-config", "config: lambda 0 must be positive (leave it out for the default %v)", protocol.DefaultLambda)
		case given.IIC != nil && *given.IIC == 0 && req.Inner == 0:
			return httpError(http.StatusBadRequest, "bad-config", "config: IIC 0 must be positive (leave it out for the default %v, or give inner)", protocol.DefaultIIC)
		case given.Rounds != nil && *given.Rounds == 0:
			return httpError(http.StatusBadRequest, "bad-config", "config: rounds 0: want at least 1 (leave it out for the default %d)", protocol.DefaultRounds)
		}
	}
	resp, err := s.create(req, hashToken(creator))
	var q errQuota
	switch {
	case errors.As(err, &q):
		return httpError(http.StatusTooManyRequests, "quota", "%v", err)
	case err != nil:
		return httpError(http.StatusBadRequest, "bad-config", "%v", err)
	}
	return c.JSON(http.StatusCreated, resp)
}

func (s *Server) handleAdmin(c echo.Context) error {
	f, err := s.adminOf(c, "this action")
	if err != nil {
		return err
	}
	if err := f.admin(c.Param("action")); err != nil {
		return httpError(http.StatusConflict, "refused", "%s: %v", c.Param("action"), err)
	}
	return c.JSON(http.StatusOK, f.status())
}

func (s *Server) handleEvents(c echo.Context) error {
	f, _, err := s.member(c, "the event stream")
	if err != nil {
		return err
	}
	// The stream outlives the server's read timeout.
	http.NewResponseController(c.Response().Writer).SetReadDeadline(time.Time{})
	w := c.Response()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	ch := f.events.subscribe()
	defer f.events.unsubscribe(ch)
	// First the whole status, then changes as they happen.
	st, err := json.Marshal(f.status())
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "event: status\ndata: %s\n\n", st)
	w.Flush()
	ctx := c.Request().Context()
	for {
		select {
		case <-ctx.Done():
			return nil
		case b, ok := <-ch:
			if !ok {
				return nil
			}
			if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
				return nil
			}
			w.Flush()
		}
	}
}

func (s *Server) handleSocket(c echo.Context) error {
	r := c.Request()
	if !s.checkOrigin(r) {
		return httpError(http.StatusForbidden, "bad-origin", "origin %q may not open participant sockets on this server", r.Header.Get("Origin"))
	}
	// The token is checked before anything is read from the socket; a
	// refusal is still upgraded (with small buffers) to carry a typed
	// error, since a page's WebSocket cannot read an HTTP error body.
	f, err := s.record(c)
	if err != nil {
		refuse(c, protocol.CodeUnknownFederation, fmt.Sprintf("no federation %q on this server", c.Param("id")))
		return nil
	}
	invite, session := socketTokens(r)
	var a access
	switch {
	case session != "":
		if a = f.authorize(session); a.role != roleSession {
			refuse(c, protocol.CodeUnknownSession, "no participant with this session token in this federation")
			return nil
		}
	case invite != "":
		if a = f.authorize(invite); a.role != roleInvite {
			refuse(c, protocol.CodeBadInvite, "the invite token is not this federation's")
			return nil
		}
	default:
		refuse(c, protocol.CodeBadInvite, "no invite or session token: a participant's socket offers the subprotocol "+protocol.SocketInvitePrefix+"<invite> or "+protocol.SocketSessionPrefix+"<session>")
		return nil
	}
	if !f.ensure() {
		refuse(c, protocol.CodeUnknownFederation, fmt.Sprintf("no federation %q on this server", c.Param("id")))
		return nil
	}
	if !f.pending.reserve(s.opt.MaxPending) {
		refuse(c, protocol.CodeBusy, "too many participants are registering at once: try again shortly")
		return nil
	}
	ws, err := s.upgrader().Upgrade(c.Response(), r, nil)
	if err != nil {
		f.pending.release()
		return nil // the upgrader has answered
	}
	newConn(f, ws).serve(a)
	return nil
}
