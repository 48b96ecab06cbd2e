//go:build js && wasm

// Command wasmclient is hyfed's participant for the browser: compiled with
// GOOS=js GOARCH=wasm, it runs in a Web Worker (web/static/worker.js) so
// that the page stays responsive while it computes. The page hands it the
// bytes of the file the user picked; the bytes stay in the tab. Out of the
// tab go only the protocol's messages: sealed dual values and inner
// products, and the plaintext primal contribution.
//
// The worker calls three functions this program sets on the global object:
//
//	hyfedLoad(name, Uint8Array, schemaJSON, delimiter)  read and summarize the file:
//	                             a block file, or with the federation's schema (its
//	                             JSON; "" for none) the user's own CSV file;
//	                             delimiter "" (found from the header), comma, semicolon or tab
//	hyfedStart(href, session, keyState)  join the federation of a join link (session: return
//	                             to a seat; keyState: base64 of the threshold key state kept)
//	hyfedStop()                  leave
//	hyfedBench(Uint8Array)       replay a recorded trace (tab.Trace), timing the participant
//
// and receives every event as a JSON string through postMessage.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"syscall/js"

	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/session"
	"github.com/hyfed/hyfed/shared/table"
	"github.com/hyfed/hyfed/wasmclient/tab"
)

func main() {
	var (
		block  *partition.Block
		cancel context.CancelFunc
		events = make(chan tab.Event, 256)
	)
	// One goroutine posts events, so the page sees them in order.
	go func() {
		for e := range events {
			b, err := json.Marshal(e)
			if err != nil {
				b, _ = json.Marshal(tab.Event{Type: "error", Message: fmt.Sprintf("event: %v", err)})
			}
			js.Global().Call("postMessage", string(b))
		}
	}()
	emit := func(e tab.Event) { events <- e }
	js.Global().Set("hyfedLoad", js.FuncOf(func(_ js.Value, args []js.Value) any {
		if len(args) != 4 || args[1].Type() != js.TypeObject {
			return "hyfedLoad(name, bytes, schemaJSON, delimiter): wrong arguments"
		}
		name := args[0].String()
		data := make([]byte, args[1].Get("byteLength").Int())
		js.CopyBytesToGo(data, args[1]) // one bulk copy
		var sch *schema.Schema
		if args[2].Type() == js.TypeString && args[2].String() != "" {
			s, err := schema.Parse(strings.NewReader(args[2].String()))
			if err != nil {
				return "the federation's schema: " + err.Error()
			}
			sch = s
		}
		var o table.Options
		if args[3].Type() == js.TypeString {
			d, err := table.ParseDelimiter(args[3].String())
			if err != nil {
				return err.Error()
			}
			o.Delimiter = d
		}
		go func() {
			b, s, err := tab.Load(name, data, sch, o)
			if err != nil {
				block = nil // a failed load leaves nothing to join with
				emit(tab.Event{Type: "error", Code: "bad-file", Message: err.Error()})
				return
			}
			block = b
			emit(tab.Event{Type: "summary", Summary: s})
		}()
		return nil
	}))
	js.Global().Set("hyfedStart", js.FuncOf(func(_ js.Value, args []js.Value) any {
		if block == nil {
			return "load a block first"
		}
		if cancel != nil {
			return "already running"
		}
		if len(args) != 3 {
			return "hyfedStart(href, session, keyState): wrong arguments"
		}
		href, r := args[0].String(), tab.Resume{}
		if args[1].Type() == js.TypeString {
			r.Session = args[1].String()
		}
		if args[2].Type() == js.TypeString && args[2].String() != "" {
			// The keys event's key_state, as JSON carried it.
			ks, err := base64.StdEncoding.DecodeString(args[2].String())
			if err != nil {
				return "hyfedStart: the stored key state is not base64: " + err.Error()
			}
			r.KeyState = ks
		}
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		go func() {
			tab.Run(ctx, href, r, block, session.WebSocket(int64(protocol.DefaultLimits.MaxBytes)), emit)
		}()
		return nil
	}))
	js.Global().Set("hyfedStop", js.FuncOf(func(js.Value, []js.Value) any {
		if cancel != nil {
			cancel()
		}
		return nil
	}))
	js.Global().Set("hyfedBench", js.FuncOf(func(_ js.Value, args []js.Value) any {
		if len(args) != 1 || args[0].Type() != js.TypeObject {
			return "hyfedBench(bytes): wrong arguments"
		}
		data := make([]byte, args[0].Get("byteLength").Int())
		js.CopyBytesToGo(data, args[0])
		go func() {
			r, err := bench(data)
			if err != nil {
				emit(tab.Event{Type: "error", Code: "bench", Message: err.Error()})
				return
			}
			emit(tab.Event{Type: "bench", Replay: r})
		}()
		return nil
	}))
	js.Global().Call("postMessage", `{"type":"ready"}`)
	select {}
}

func bench(data []byte) (*tab.ReplayResult, error) {
	t, err := tab.DecodeTrace(data)
	if err != nil {
		return nil, err
	}
	return tab.Replay(t)
}
