package server

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"

	"github.com/hyfed/hyfed/web"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// Handler returns the HTTP routes:
//
//	GET  /healthz                          liveness and federation count
//	POST /api/federations                  create (CreateRequest -> CreateResponse)
//	GET  /api/federations                  list
//	GET  /api/federations/:id              status (Status)
//	POST /api/federations/:id/:action      start, pause, resume, stop (admin bearer token)
//	GET  /api/federations/:id/events       server-sent events: round, phase, participant, state
//	GET  /api/federations/:id/ws           participants' websocket (?invite= or ?session=)
//	GET  /api/federations/:id/demo-blocks  a demo federation's blocks ([]DemoBlock)
//	GET  /api/federations/:id/demo-blocks/:k  demo block k as a LIBSVM block file
//	POST /api/federations/:id/fill         a demo's free seats to simulated participants
//	GET  /api/federations/:id/model        the model w: {round, num_features, w}
//	GET  /api/federations/:id/server-view  what the server holds: sealed sizes, plaintext w and hat_w
//	GET  /api/federations/:id/attack       the curious server's progress per participant (Options.Curious)
//	GET  /api/federations/:id/attack/rows  ?session=&from=&count=: the reconstruction of the token holder's rows
//	GET  /join/:id, /federations/:id, /    pages
//	GET  /federations/:id/privacy, /new    pages: privacy view, create a federation
func (s *Server) Handler() http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.GET("/healthz", func(c echo.Context) error {
		s.mu.Lock()
		n := len(s.feds)
		s.mu.Unlock()
		return c.JSON(http.StatusOK, map[string]any{"status": "ok", "federations": n})
	})
	e.POST("/api/federations", s.handleCreate)
	e.GET("/api/federations", func(c echo.Context) error { return c.JSON(http.StatusOK, s.list()) })
	e.GET("/api/federations/:id", func(c echo.Context) error {
		f, err := s.lookup(c)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, f.status())
	})
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

func (s *Server) lookup(c echo.Context) (*federation, error) {
	f := s.federation(c.Param("id"))
	if f == nil {
		return nil, httpError(http.StatusNotFound, "unknown-federation", "no federation %q on this server", c.Param("id"))
	}
	return f, nil
}

func bearer(c echo.Context) string {
	h := c.Request().Header.Get("Authorization")
	t, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(t)
}

func (s *Server) handleCreate(c echo.Context) error {
	if s.opt.CreateToken != "" && subtle.ConstantTimeCompare([]byte(bearer(c)), []byte(s.opt.CreateToken)) != 1 {
		return httpError(http.StatusUnauthorized, "bad-token", "creating federations on this server needs its create token (Authorization: Bearer ...)")
	}
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, 1<<20+1))
	if err != nil {
		return httpError(http.StatusBadRequest, "bad-request", "reading the request: %v", err)
	}
	if len(body) > 1<<20 {
		return httpError(http.StatusRequestEntityTooLarge, "too-large", "request body over 1 MiB")
	}
	var req CreateRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return httpError(http.StatusBadRequest, "bad-request", "federation request: %v", err)
	}
	resp, err := s.Create(req)
	if err != nil {
		return httpError(http.StatusBadRequest, "bad-config", "%v", err)
	}
	return c.JSON(http.StatusCreated, resp)
}

func (s *Server) handleAdmin(c echo.Context) error {
	f, err := s.lookup(c)
	if err != nil {
		return err
	}
	tok := bearer(c)
	if tok == "" || subtle.ConstantTimeCompare([]byte(hashToken(tok)), []byte(f.meta.AdminHash)) != 1 {
		return httpError(http.StatusUnauthorized, "bad-token", "this action needs the federation's admin token (Authorization: Bearer ...)")
	}
	if err := f.admin(c.Param("action")); err != nil {
		return httpError(http.StatusConflict, "refused", "%s: %v", c.Param("action"), err)
	}
	return c.JSON(http.StatusOK, f.status())
}

func (s *Server) handleEvents(c echo.Context) error {
	f, err := s.lookup(c)
	if err != nil {
		return err
	}
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
	ws, err := s.upgrader().Upgrade(c.Response(), r, nil)
	if err != nil {
		return nil // the upgrader has answered
	}
	f := s.federation(c.Param("id"))
	if f == nil {
		// Upgrade first, then refuse with a typed message: a page's
		// WebSocket cannot read an HTTP error body.
		refuseRaw(ws, "unknown-federation", fmt.Sprintf("no federation %q on this server", c.Param("id")))
		return nil
	}
	q := r.URL.Query()
	newConn(f, ws).serve(q.Get("invite"), q.Get("session"))
	return nil
}
