package server

import "github.com/hyfed/hyfed/shared/protocol"

// Observers watch a federation's traffic from the server's side: every
// frame its participants' connections read, every frame they write to a
// registered participant. Options.Received and Options.Sent are one
// observer (hooks), the curious-server demonstration another (attack.go);
// a federation gets its observers once, when it is loaded, and its
// connections call them all, in order, from one place each: read and
// write (ws.go). Without an observer a frame costs nothing more.
//
// An observer runs in the connection's goroutine, so it sees one
// connection's frames in the order the server handles them: a frame read
// before the coordinator has it, a frame written before it goes out (a
// reply to it cannot be seen first). It must be quick, and a panic in it
// fails its federation only, as any panic in a connection does
// (recover.go).
type frameObserver interface {
	// frame sees one frame: toServer, read from client's connection
	// (client -1 before a hello registered the connection, so for hellos
	// and whatever comes instead of one); otherwise about to be written to
	// registered client. m is the frame decoded, nil if it did not decode
	// (or was not binary). frame and m are the server's, valid during the
	// call only: an observer copies what it keeps and changes nothing.
	frame(toServer bool, client int, frame []byte, m *protocol.Message)
	// registered sees the hello that registered its connection as client
	// (seen by frame as client -1 when it was read): called once the
	// federation accepted it, with the federation's lock held, before any
	// reply to it is queued. hello is the server's, as in frame.
	registered(client int, hello *protocol.Message)
}

// observersOf are the observers of a federation being loaded: the
// server's hooks, then the curious server if it runs.
func (f *federation) observersOf() []frameObserver {
	var obs []frameObserver
	if o := f.srv.opt; o.Received != nil || o.Sent != nil {
		obs = append(obs, hooks{fed: f.meta.ID, received: o.Received, sent: o.Sent})
	}
	if f.attack != nil {
		obs = append(obs, f.attack)
	}
	return obs
}

// observeRead shows a frame a connection read to the observers; m is its
// decoding, nil if it did not decode. The observers get a copy of the
// message's header (not of its vectors), made only when there are any:
// the reader's decoded message stays on its stack otherwise.
func (f *federation) observeRead(client int, frame []byte, m *protocol.Message) {
	if len(f.observers) == 0 {
		return
	}
	var mp *protocol.Message
	if m != nil {
		cp := *m
		mp = &cp
	}
	for _, o := range f.observers {
		o.frame(true, client, frame, mp)
	}
}

// observeWrite shows a frame about to be written to registered client k
// to the observers; m is the message it encodes.
func (f *federation) observeWrite(k int, frame []byte, m *protocol.Message) {
	for _, o := range f.observers {
		o.frame(false, k, frame, m)
	}
}

// observeRegistered tells the observers that hello registered client k.
// Called with f.mu held.
func (f *federation) observeRegistered(k int, hello *protocol.Message) {
	for _, o := range f.observers {
		o.registered(k, hello)
	}
}

// hooks are Options.Received and Sent as an observer of one federation.
type hooks struct {
	fed            string
	received, sent func(federation string, client int, frame []byte)
}

func (h hooks) frame(toServer bool, client int, frame []byte, _ *protocol.Message) {
	switch {
	case toServer && h.received != nil:
		h.received(h.fed, client, frame)
	case !toServer && h.sent != nil:
		h.sent(h.fed, client, frame)
	}
}

// registered: the hooks saw the hello as client -1, which is what
// Options.Received promises.
func (hooks) registered(int, *protocol.Message) {}
