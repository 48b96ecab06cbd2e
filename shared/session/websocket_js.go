//go:build js && wasm

package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall/js"
)

// WebSocket dials with the browser's WebSocket (the WebAssembly
// participant in a page or a Web Worker). Frames cross syscall/js once
// each, as whole byte arrays. The browser answers the server's pings by
// itself, even while the participant computes.
func WebSocket(readLimit int64) Dialer {
	return func(ctx context.Context, url string, protocols []string) (Conn, error) {
		ctor := js.Global().Get("WebSocket")
		if ctor.IsUndefined() {
			return nil, errors.New("dial: this environment has no WebSocket")
		}
		c := &jsConn{frames: make(chan []byte, 64), closed: make(chan struct{}), limit: readLimit}
		opened := make(chan struct{})
		var ws js.Value
		func() {
			defer func() {
				if r := recover(); r != nil { // a malformed URL throws
					c.fail(fmt.Errorf("dial %s: %v", url, r))
				}
			}()
			ps := make([]any, len(protocols))
			for i, p := range protocols {
				ps[i] = p
			}
			ws = ctor.New(url, ps)
		}()
		if c.err != nil {
			return nil, c.err
		}
		ws.Set("binaryType", "arraybuffer")
		c.ws = ws
		var once sync.Once
		c.funcs = []js.Func{
			js.FuncOf(func(js.Value, []js.Value) any {
				once.Do(func() { close(opened) })
				return nil
			}),
			js.FuncOf(func(_ js.Value, args []js.Value) any {
				data := args[0].Get("data")
				if data.Type() != js.TypeObject || !data.InstanceOf(js.Global().Get("ArrayBuffer")) {
					return nil // text frames are not part of the protocol
				}
				n := data.Get("byteLength").Int()
				if c.limit > 0 && int64(n) > c.limit {
					c.fail(fmt.Errorf("read: a frame of %d bytes exceeds the limit of %d", n, c.limit))
					ws.Call("close", 1009, "frame too large")
					return nil
				}
				b := make([]byte, n)
				js.CopyBytesToGo(b, js.Global().Get("Uint8Array").New(data))
				select {
				case c.frames <- b:
				case <-c.closed:
				}
				return nil
			}),
			js.FuncOf(func(_ js.Value, args []js.Value) any {
				ev := args[0]
				c.fail(fmt.Errorf("connection closed (code %d%s)", ev.Get("code").Int(), reason(ev.Get("reason").String())))
				once.Do(func() { close(opened) })
				return nil
			}),
		}
		ws.Set("onopen", c.funcs[0])
		ws.Set("onmessage", c.funcs[1])
		// No onerror: browsers hide why a socket failed, and the close
		// event that follows carries the code.
		ws.Set("onclose", c.funcs[2])
		select {
		case <-opened:
		case <-ctx.Done():
			c.Close()
			return nil, ctx.Err()
		}
		if ws.Get("readyState").Int() != 1 {
			c.Close()
			return nil, fmt.Errorf("dial %s: %w", url, c.err)
		}
		return c, nil
	}
}

func reason(r string) string {
	if r == "" {
		return ""
	}
	return ": " + r
}

type jsConn struct {
	ws     js.Value
	funcs  []js.Func
	frames chan []byte
	limit  int64
	mu     sync.Mutex
	err    error
	closed chan struct{}
	once   sync.Once
}

// fail records the first error and wakes readers.
func (c *jsConn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	c.once.Do(func() { close(c.closed) })
}

func (c *jsConn) Read(ctx context.Context) ([]byte, error) {
	// Frames that arrived before the close are still delivered (the
	// closed case looks again: select picks among ready cases at random).
	select {
	case b := <-c.frames:
		return b, nil
	case <-c.closed:
		select {
		case b := <-c.frames:
			return b, nil
		default:
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return nil, fmt.Errorf("read: %w", c.err)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *jsConn) Write(ctx context.Context, frame []byte) error {
	select {
	case <-c.closed:
		c.mu.Lock()
		defer c.mu.Unlock()
		return fmt.Errorf("write: %w", c.err)
	default:
	}
	a := js.Global().Get("Uint8Array").New(len(frame))
	js.CopyBytesToJS(a, frame)
	c.ws.Call("send", a)
	return nil
}

func (c *jsConn) Close() error {
	c.fail(errors.New("closed by the participant"))
	if !c.ws.IsUndefined() && c.ws.Get("readyState").Int() < 2 {
		c.ws.Call("close", 1000, "")
	}
	return nil
}
