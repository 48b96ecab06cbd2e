//go:build !js

package session

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// WebSocket dials with gorilla/websocket (native participants). A
// goroutine reads all the time, so pings are answered even while the
// participant computes.
func WebSocket(readLimit int64) Dialer {
	return func(ctx context.Context, url string, protocols []string) (Conn, error) {
		d := websocket.Dialer{HandshakeTimeout: 15 * time.Second, ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10,
			Subprotocols: protocols}
		ws, resp, err := d.DialContext(ctx, url, http.Header{})
		if err != nil {
			if resp != nil {
				return nil, fmt.Errorf("dial %s: %s: %w", url, resp.Status, err)
			}
			return nil, fmt.Errorf("dial %s: %w", url, err)
		}
		if readLimit > 0 {
			ws.SetReadLimit(readLimit)
		}
		c := &wsConn{ws: ws, frames: make(chan []byte, 16), done: make(chan struct{})}
		go c.readLoop()
		return c, nil
	}
}

type wsConn struct {
	ws     *websocket.Conn
	frames chan []byte
	err    error
	done   chan struct{}
	wmu    sync.Mutex
	once   sync.Once
}

func (c *wsConn) readLoop() {
	defer close(c.frames)
	for {
		typ, b, err := c.ws.ReadMessage()
		if err != nil {
			c.err = err
			return
		}
		if typ != websocket.BinaryMessage {
			continue
		}
		select {
		case c.frames <- b:
		case <-c.done:
			return
		}
	}
}

func (c *wsConn) Read(ctx context.Context) ([]byte, error) {
	select {
	case b, ok := <-c.frames:
		if !ok {
			return nil, fmt.Errorf("read: %w", c.err)
		}
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *wsConn) Write(ctx context.Context, frame []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	dl := time.Now().Add(time.Minute)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	c.ws.SetWriteDeadline(dl)
	if err := c.ws.WriteMessage(websocket.BinaryMessage, frame); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

func (c *wsConn) Close() error {
	c.once.Do(func() {
		close(c.done)
		c.wmu.Lock()
		c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		c.wmu.Unlock()
	})
	return c.ws.Close()
}
