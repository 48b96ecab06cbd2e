package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/labstack/echo/v4"
)

// pendingCount counts a federation's sockets that have not registered.
type pendingCount struct {
	mu sync.Mutex
	n  int
}

func (p *pendingCount) reserve(max int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n >= max {
		return false
	}
	p.n++
	return true
}

func (p *pendingCount) release() {
	p.mu.Lock()
	p.n--
	p.mu.Unlock()
}

// Keepalive: the server pings every pingEvery and drops a connection that
// has sent nothing (not even a pong) for pongWait.
const (
	pingEvery = 20 * time.Second
	pongWait  = 60 * time.Second
	writeWait = 60 * time.Second
	helloWait = 30 * time.Second
	// maxQueued bounds the bytes queued for one slow participant (in
	// sealed chunks' wire size): past it the connection is dropped, its
	// participant leaves the round, and it may come back.
	maxQueued = 1 << 30
)

// conn is one participant's websocket. A reader goroutine decodes frames
// and hands them to the federation; a writer goroutine encodes and sends
// what the federation queued, in order, and pings.
type conn struct {
	f      *federation
	ws     *websocket.Conn
	client int

	mu         sync.Mutex
	queue      []protocol.Message
	queued     int
	wake       chan struct{}
	closing    bool // a closing message is queued: nothing after it
	closed     chan struct{}
	writerDone chan struct{}
	once       sync.Once
	rejected   int // messages rejected so far (guarded by f.mu)
	// durable is the registrations log's line of this participant's new
	// session: its writer makes it durable before the welcome goes out.
	durable atomic.Uint64
	// limit bounds the frame the reader takes, read once the frame has
	// begun; ceiling is the read limit the reader sets before each frame
	// (only the reader may call SetReadLimit), readLimit the one it set.
	// The federation keeps both (setLimit).
	limit, ceiling atomic.Int64
	readLimit      int64
}

func newConn(f *federation, ws *websocket.Conn) *conn {
	return &conn{f: f, ws: ws, client: -1, wake: make(chan struct{}, 1), closed: make(chan struct{}), writerDone: make(chan struct{})}
}

// send queues a message; it never blocks the federation.
func (c *conn) send(m protocol.Message) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	c.queue = append(c.queue, m)
	c.queued += m.WireSize(c.f.scheme)
	over := c.queued > maxQueued
	if m.Close {
		c.closing = true
	}
	c.mu.Unlock()
	if over {
		c.f.log.Warn("participant too slow: queue over the limit", "client", c.client)
		c.closeNow()
		return
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *conn) closeNow() {
	c.once.Do(func() {
		close(c.closed)
		c.ws.Close()
	})
}

func (c *conn) writeLoop() {
	defer close(c.writerDone)
	defer c.f.recoverFail("a connection's writer")
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	defer c.closeNow()
	for {
		select {
		case <-c.closed:
			return
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				return
			}
		case <-c.wake:
			c.mu.Lock()
			batch := c.queue
			c.queue, c.queued = nil, 0
			c.mu.Unlock()
			if seq := c.durable.Swap(0); seq > 0 {
				if err := c.f.sessLog.sync(seq); err != nil {
					// No welcome for a session the disk may not have.
					c.f.sessionUnsaved(c, err)
					batch = []protocol.Message{{Kind: protocol.KindError, Code: protocol.CodeBusy, Close: true,
						Err: "the server cannot save registrations now: try again shortly"}}
				}
			}
			for i := range batch {
				m := &batch[i]
				buf := frameBuffers.Get().(*[]byte)
				frame, err := protocol.AppendMessage((*buf)[:0], c.f.scheme, *m)
				if err != nil {
					c.f.log.Error("cannot encode a message", "client", c.client, "kind", m.Kind, "error", err)
					return
				}
				if c.client >= 0 {
					// Before the write: a reply cannot be seen first.
					c.f.observeWrite(c.client, frame, m)
				}
				c.ws.SetWriteDeadline(time.Now().Add(writeWait))
				err = c.ws.WriteMessage(websocket.BinaryMessage, frame) // copies the frame out
				size := len(frame)
				if len(c.f.observers) == 0 && cap(frame) <= maxPooledFrame { // observers may keep it
					*buf = frame
					frameBuffers.Put(buf)
				}
				if err != nil {
					return
				}
				c.f.wireOut.Add(int64(size))
				if m.Close {
					code := websocket.ClosePolicyViolation
					if m.Code == protocol.CodeTooLarge {
						code = websocket.CloseMessageTooBig
					}
					if m.Code == protocol.CodeDeadline || m.Code == protocol.CodeReplaced || m.Code == protocol.CodeStopped || m.Code == protocol.CodeFinished {
						code = websocket.CloseNormalClosure
					}
					reason := m.Code
					c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
					// Let the close frame go out before the socket does.
					time.Sleep(50 * time.Millisecond)
					return
				}
			}
		}
	}
}

// serve runs a participant's connection until it ends. The token was
// checked before the upgrade (a); until the hello registers, the socket
// reads at most Options.HelloLimit bytes, and counts as pending; after,
// what its participant may send (federation.setLimit).
func (c *conn) serve(a access) {
	go c.writeLoop()
	pending := true
	defer func() {
		if pending {
			c.f.pending.release()
		}
	}()
	c.limit.Store(int64(c.f.srv.opt.HelloLimit))
	c.ceiling.Store(int64(c.f.srv.opt.HelloLimit))
	c.setReadLimit()
	c.ws.SetReadDeadline(time.Now().Add(helloWait))
	c.ws.SetPongHandler(func(string) error {
		c.ws.SetReadDeadline(time.Now().Add(pongWait))
		return nil
	})
	var err error
	defer func() {
		c.f.leave(c, err)
		c.mu.Lock()
		closing := c.closing
		c.mu.Unlock()
		if closing {
			// Let the writer deliver the closing error first.
			select {
			case <-c.writerDone:
			case <-time.After(5 * time.Second):
			}
		}
		c.closeNow()
	}()
	// Deferred last, run first: a panic is recovered before leave takes
	// the federation's lock.
	defer c.f.recoverFail("a connection's reader")
	hello, _, derr, err := c.read()
	if err != nil {
		if !errors.Is(err, errClosed) {
			c.send(protocol.Message{Kind: protocol.KindError, Code: codeOf(err), Close: true, Err: "no hello: " + err.Error()})
		}
		return
	}
	if err = derr; err != nil {
		c.send(protocol.Message{Kind: protocol.KindError, Code: protocol.CodeBadMessage, Close: true, Err: err.Error()})
		return
	}
	if hello.Kind != protocol.KindHello {
		c.send(protocol.Message{Kind: protocol.KindError, Code: protocol.CodeOutOfPhase, Close: true, Err: "the first message must be a hello, got " + string(hello.Kind)})
		return
	}
	if !c.f.register(c, hello, a) {
		return
	}
	c.f.pending.release()
	pending = false
	for {
		c.ws.SetReadDeadline(time.Now().Add(pongWait))
		c.setReadLimit()
		var m protocol.Message
		var size int
		m, size, derr, err = c.read()
		if err != nil {
			if !errors.Is(err, errClosed) && codeOf(err) == protocol.CodeTooLarge {
				c.f.tooLarge(c, err.Error())
			}
			return
		}
		if derr != nil {
			c.f.refuseFrame(c, derr)
			continue
		}
		c.f.receive(c, m, size)
	}
}

// setReadLimit makes the ceiling the connection's read limit for the next
// frame: a frame that announces more is refused at its header, unread.
func (c *conn) setReadLimit() {
	c.readLimit = c.ceiling.Load()
	c.ws.SetReadLimit(c.readLimit)
}

var errClosed = errors.New("connection closed")

type frameError struct {
	code string
	err  error
}

func (e *frameError) Error() string { return e.err.Error() }
func (e *frameError) Unwrap() error { return e.err }

func codeOf(err error) string {
	var fe *frameError
	if errors.As(err, &fe) {
		return fe.code
	}
	return protocol.CodeBadMessage
}

// read reads the next frame and decodes it. The federation's observers
// see every frame the connection delivers, decoded or not, before the
// server acts on it (observe.go). err ends the connection (errClosed, or
// a frameError: too large, a text frame); derr is a frame that did not
// decode; size is the frame's.
func (c *conn) read() (m protocol.Message, size int, derr, err error) {
	typ, r, err := c.ws.NextReader()
	if err == nil {
		// Loaded once the frame has begun, so after its sender was sent
		// what it answers: the federation raises a limit before it sends
		// what needs the room.
		limit := c.limit.Load()
		// A pooled buffer, not a fresh slice grown from 512 bytes per
		// frame (13% of the server's CPU at 5,000 participants:
		// docs/results/2026-11-24-scale.md).
		// DecodeMessage copies what it keeps (TestDecodeDoesNotAlias).
		buf := readBuffers.Get().(*bytes.Buffer)
		defer readBuffers.Put(buf)
		buf.Reset()
		_, err = buf.ReadFrom(io.LimitReader(r, limit+1))
		b := buf.Bytes()
		if err == nil && int64(len(b)) > limit {
			return m, 0, nil, &frameError{protocol.CodeTooLarge, fmt.Errorf("frame over the %d bytes this participant may send", limit)}
		}
		if err == nil {
			return c.decode(typ, b)
		}
	}
	if errors.Is(err, websocket.ErrReadLimit) {
		return m, 0, nil, &frameError{protocol.CodeTooLarge, fmt.Errorf("frame over the %d bytes this participant may send", c.readLimit)}
	}
	return m, 0, nil, errClosed
}

// readBuffers hold frames while they are decoded.
var readBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// frameBuffers hold frames while they are written: at 5,000 participants a
// fresh buffer per frame was a third of the server's allocation
// (docs/results/2026-11-24-scale.md). Frames past maxPooledFrame are left
// to the collector.
var frameBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledFrame = 16 << 20

// decode decodes a frame read into a pooled buffer, b, and shows it to the
// observers, which get their own copy (they may keep it).
func (c *conn) decode(typ int, b []byte) (m protocol.Message, size int, derr, err error) {
	var decoded *protocol.Message
	if typ == websocket.BinaryMessage {
		if m, derr = protocol.DecodeMessage(c.f.scheme, b, c.f.limits()); derr == nil {
			decoded = &m
		}
	}
	if len(c.f.observers) > 0 {
		b = bytes.Clone(b)
	}
	c.f.observeRead(c.client, b, decoded)
	if typ != websocket.BinaryMessage {
		return m, len(b), nil, &frameError{protocol.CodeBadMessage, errors.New("text frame: the protocol speaks binary frames")}
	}
	return m, len(b), derr, nil
}

// limits are the decode limits: the layouts' chunk bound once known. It
// takes no lock, so readers decode while the coordinator works.
func (f *federation) limits() protocol.Limits {
	lim := f.srv.opt.Limits
	if n := int(f.chunks.Load()); n > 0 {
		lim.MaxChunks = n
	}
	return lim
}

// writeBuffers are the participants' sockets' write buffers, shared: a
// connection holds one only while it writes a frame, not for its life
// (64 kB x 5,000 connections was 320 MB of the server's heap).
var writeBuffers sync.Pool

// upgrader checks origins against the server's list. The read buffer is
// per connection for its life: none of its own (ReadBufferSize 0), the
// HTTP server's 4 kB reader, which lives as long anyway because the socket
// is served inside the HTTP handler (a 64 kB buffer of its own was 0.6 GB
// of the server's heap at 5,000 participants, an 8 kB one 40 MB).
func (s *Server) upgrader() *websocket.Upgrader {
	return &websocket.Upgrader{
		ReadBufferSize:  0,
		WriteBufferSize: 64 << 10,
		WriteBufferPool: &writeBuffers,
		CheckOrigin:     s.checkOrigin,
		Subprotocols:    []string{protocol.SocketProtocol},
	}
}

// refuser upgrades sockets only to refuse them: small buffers, nothing
// read.
var refuser = &websocket.Upgrader{ReadBufferSize: 256, WriteBufferSize: 1024,
	CheckOrigin: func(*http.Request) bool { return true }, Subprotocols: []string{protocol.SocketProtocol}}

// checkOrigin admits native clients (no Origin header), the configured
// origins, and pages of this server when it is reached on a loopback
// address. The Host header alone proves nothing: under DNS rebinding an
// attacker's name points at this server and Origin and Host agree.
func (s *Server) checkOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	for _, o := range s.opt.AllowedOrigins {
		if o == "*" || o == origin {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host != r.Host {
		return false
	}
	return isLoopback(u.Hostname())
}

// isLoopback: "localhost" or a loopback address, names no DNS answer can
// make a page of another site carry as its origin.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// refuse answers a socket the server will not serve: one typed error,
// then the close.
func refuse(c echo.Context, code, msg string) {
	ws, err := refuser.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		return // the upgrader has answered
	}
	refuseRaw(ws, code, msg)
}

// refuseRaw sends one typed error on a socket and closes it.
func refuseRaw(ws *websocket.Conn, code, msg string) {
	defer ws.Close()
	frame, err := protocol.EncodeMessage(nil, protocol.Message{Kind: protocol.KindError, Code: code, Close: true, Err: msg})
	if err != nil {
		return
	}
	ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if ws.WriteMessage(websocket.BinaryMessage, frame) == nil {
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, code), time.Now().Add(time.Second))
	}
}
