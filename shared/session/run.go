package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/seal"
)

// Conn is one message-oriented connection to the server.
type Conn interface {
	// Read returns the next binary frame.
	Read(ctx context.Context) ([]byte, error)
	// Write sends one binary frame.
	Write(ctx context.Context, frame []byte) error
	Close() error
}

// Dialer opens a connection to a websocket URL offering the given
// subprotocols (they carry the token: Link.SocketProtocols).
type Dialer func(ctx context.Context, url string, protocols []string) (Conn, error)

// Options configure Run.
type Options struct {
	Dial Dialer
	Log  *slog.Logger
	// Browser: the participant runs in a browser tab (its hello says so,
	// and the OPRF key committee takes native participants first).
	Browser bool
	// Session, if set, reconnects as an already registered participant.
	Session string
	// OnWelcome sees the session token and name once the server accepts
	// the registration (to keep the token, or to start the next client).
	OnWelcome func(session, name string)
	// OnMessage sees every message from the coordinator (progress).
	OnMessage func(m *protocol.Message)
	// OnSend sees every message this participant sends with its frame
	// (what leaves the participant: the browser page shows it).
	OnSend func(m *protocol.Message, frame []byte)
	// OnRetry sees every lost connection before Run tries again in wait.
	OnRetry func(err error, wait time.Duration)
	// RetryFor bounds how long Run keeps trying to reach the server without
	// success before it gives up (default 2 minutes).
	RetryFor time.Duration
	// Limits bound the frames accepted from the server.
	Limits protocol.Limits
	// KeyState, if set, is a threshold key state kept from an earlier run
	// (Result.KeyState, or what OnKeyState saw): a participant that returns
	// to its seat (Session) with it takes part again with its party, a
	// committee member with its share.
	KeyState []byte
	// OnKeyState sees the participant's threshold key state whenever the
	// key setup changes it (its party made, dealt, ready, or taken back),
	// for a participant that may stop before Run returns (a closed tab, a
	// killed process) to keep it. The bytes are already sealed under a key
	// derived from the link secret (Participant.KeyState), so they may be
	// stored where the link secret is not.
	OnKeyState func(state []byte)

	// Unordered lets RunMany's participants register as they come (up to
	// DialAhead at once) rather than in block order: the server numbers
	// them in the order it admits them, as it does participants on their
	// own machines, so a run need not equal an in-process experiment bit
	// for bit.
	Unordered bool

	// beforeHello, if set, holds the hello of a first registration until
	// the participant's turn (RunMany: in block order).
	beforeHello func(ctx context.Context) error
}

// Result is what a participant saw of a finished federation.
type Result struct {
	Session    string
	Name       string
	Rounds     int // last round seen
	Reconnects int
	BytesSent  int
	BytesRecv  int
	// KeyState is the participant's threshold key state when Run returned
	// (Participant.KeyState: its party's secrets sealed under a key derived
	// from the link secret; nil with the shared key or before the key
	// setup): what a participant keeps to take part again with its share.
	KeyState []byte
}

// ErrFatal wraps errors that reconnecting cannot fix.
var ErrFatal = errors.New("session")

// ErrKeyMode wraps a key mode of the federation other than the one the link
// says (threshold keys, "threshold:", or the shared key); it is fatal too.
var ErrKeyMode = errors.New("key mode")

// fatalCodes are server errors that end the session.
var fatalCodes = map[string]bool{
	protocol.CodeWrongSecret: true, protocol.CodeBadInvite: true, protocol.CodeUnknownFederation: true,
	protocol.CodeUnknownSession: true, protocol.CodeStarted: true, protocol.CodeSchema: true,
	protocol.CodeStopped: true, protocol.CodeAbuse: true, protocol.CodeDropped: true,
}

// Run takes part in the federation of the link with one block until it
// finishes: it registers, answers every message, and after a lost
// connection comes back with its session token (a fresh participant that
// keeps the last round boundaries: a restarted server resumes one of them,
// any other sets it up again and refreshes its dual values).
func Run(ctx context.Context, l Link, b *partition.Block, o Options) (*Result, error) {
	if o.Dial == nil {
		return nil, errors.New("session: no dialer")
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.RetryFor == 0 {
		o.RetryFor = 2 * time.Minute
	}
	if o.Limits.MaxBytes == 0 {
		o.Limits = protocol.DefaultLimits
	}
	scheme, err := seal.ByName(l.Scheme)
	if err != nil {
		return nil, err
	}
	// With threshold keys the participant has no key until the key setup
	// gives it its party of the federation's threshold key.
	var key seal.Key
	if !l.Threshold() {
		if key, err = seal.NewKeyFor(scheme, l.Secret.Derive(seal.KeyPurpose)); err != nil {
			return nil, err
		}
	}
	res := &Result{Session: o.Session, KeyState: o.KeyState}
	lastOK := time.Now()
	backoff := 100 * time.Millisecond
	var prev *protocol.Participant
	for attempt := 0; ; attempt++ {
		p, err := protocol.NewParticipant(b, l.Secret, key)
		if err != nil {
			return res, err
		}
		if l.OPRF {
			p.AlignByOPRF()
		}
		if o.Browser {
			p.InBrowser()
		}
		p.TakeBoundaries(prev)
		prev = p
		if res.KeyState != nil {
			// A threshold key's party outlives the connection: the
			// coordinator asks a returning participant back into the key,
			// and a member that still holds its share switches again.
			p.RestoreKeyState(res.KeyState)
		}
		done, err := runOnce(ctx, l, p, scheme, res, &o, log)
		// The party of the last connection that had one (a connection
		// that failed before the key setup leaves the state as it was).
		if ks, kerr := p.KeyState(); kerr != nil {
			return res, errors.Join(err, kerr)
		} else if ks != nil {
			res.KeyState = ks
		}
		if done {
			return res, err
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if err != nil && errors.Is(err, ErrFatal) {
			return res, err
		}
		if err == nil {
			lastOK, backoff = time.Now(), 100*time.Millisecond
		}
		if time.Since(lastOK) > o.RetryFor {
			return res, fmt.Errorf("session: no working connection for %v: %w", o.RetryFor, err)
		}
		log.Info("connection lost; reconnecting", "error", err, "in", backoff)
		if o.OnRetry != nil {
			o.OnRetry(err, backoff)
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
		res.Reconnects++
	}
}

// runOnce runs one connection. It returns done when the federation is over
// (or the session cannot go on), and otherwise the reason the connection
// ended (nil if it had worked: registered and exchanged messages).
func runOnce(ctx context.Context, l Link, p *protocol.Participant, scheme seal.Scheme, res *Result, o *Options, log *slog.Logger) (bool, error) {
	first := res.Session == ""
	c, err := o.Dial(ctx, l.SocketURL(), l.SocketProtocols(res.Session))
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer c.Close()
	write := func(m protocol.Message, f []byte) error {
		res.BytesSent += len(f)
		if o.OnSend != nil {
			o.OnSend(&m, f)
		}
		return c.Write(ctx, f)
	}
	send := func(m protocol.Message) error {
		f, err := protocol.EncodeMessage(scheme, m)
		if err != nil {
			return err
		}
		return write(m, f)
	}
	// The hello is encoded before the participant's turn (RunMany).
	hello := p.Hello()
	hf, err := protocol.EncodeMessage(scheme, hello)
	if err != nil {
		return false, fmt.Errorf("send hello: %w", err)
	}
	if first && o.beforeHello != nil {
		if err := o.beforeHello(ctx); err != nil {
			return true, err
		}
	}
	if err := write(hello, hf); err != nil {
		return false, fmt.Errorf("send hello: %w", err)
	}
	welcomed := false
	for {
		f, err := c.Read(ctx)
		if err != nil {
			if !welcomed {
				return false, fmt.Errorf("before the welcome: %w", err)
			}
			return false, nil
		}
		res.BytesRecv += len(f)
		m, err := protocol.DecodeMessage(scheme, f, o.Limits)
		if err != nil {
			// A server speaking another version or scheme: retrying
			// will not help.
			return true, fmt.Errorf("%w: the server sent a message this participant cannot read: %v", ErrFatal, err)
		}
		if o.OnMessage != nil {
			o.OnMessage(&m)
		}
		if m.Round > res.Rounds {
			res.Rounds = m.Round
		}
		if err := keyModeFits(l, &m); err != nil {
			return true, err
		}
		switch m.Kind {
		case protocol.KindWelcome:
			welcomed = true
			if m.Session != "" { // a first registration; returns keep theirs
				res.Session = m.Session
			}
			res.Name = m.Name
			if o.OnWelcome != nil {
				o.OnWelcome(res.Session, m.Name)
			}
			continue
		case protocol.KindDone:
			return true, nil
		case protocol.KindError:
			err := &protocol.CodedError{Code: m.Code, Msg: m.Err}
			switch {
			case m.Code == protocol.CodeFinished:
				return true, nil
			case fatalCodes[m.Code]:
				return true, fmt.Errorf("%w: server: %w", ErrFatal, err)
			case m.Close:
				log.Warn("server closed the connection", "code", m.Code, "error", m.Err)
				return false, err
			default:
				log.Warn("server rejected a message", "code", m.Code, "error", m.Err)
				continue
			}
		}
		replies, err := p.Handle(m)
		if err != nil && (errors.Is(err, protocol.ErrData) || errors.Is(err, seal.ErrRange)) {
			// The data cannot take part: reconnecting would fail alike.
			// The organizer is told why.
			send(protocol.Message{Kind: protocol.KindError, Err: err.Error()})
			return true, fmt.Errorf("%w: %w", ErrFatal, err)
		}
		if err != nil {
			// The participant's state no longer fits the federation's:
			// start afresh through a reconnect and a refresh.
			log.Warn("participant error; reconnecting afresh", "error", err)
			return false, err
		}
		if err := keyStateChanged(p, &m, o); err != nil {
			return true, err
		}
		for _, r := range replies {
			if err := send(r); err != nil {
				return false, nil
			}
		}
	}
}

// keyStateChanged hands o.OnKeyState the participant's key state after a
// key setup message, the only ones that change it: before its replies
// leave, so that a committee member whose dealt shares the others use has
// its own kept first.
func keyStateChanged(p *protocol.Participant, m *protocol.Message, o *Options) error {
	if o.OnKeyState == nil {
		return nil
	}
	switch m.Kind {
	case protocol.KindKeySetup, protocol.KindKeySetups, protocol.KindKeyShares:
	default:
		return nil
	}
	ks, err := p.KeyState()
	if err != nil {
		return fmt.Errorf("%w: after %s: %w", ErrFatal, m.Kind, err)
	}
	if ks != nil {
		o.OnKeyState(ks)
	}
	return nil
}

// keyModeFits checks that the coordinator runs the key mode the link says:
// a link with "threshold:" never seals under a key every participant of the
// link could derive, and a participant whose link has no "threshold:" learns
// at the key setup, not at its first unreadable frame, why it cannot go on.
func keyModeFits(l Link, m *protocol.Message) error {
	switch {
	case m.Kind == protocol.KindKeySetup && !l.Threshold():
		return fmt.Errorf("%w: %w: the federation uses threshold keys but this join link does not say so (its secret has no \"threshold:\" prefix): ask the organizer for the link hyfed create printed", ErrFatal, ErrKeyMode)
	case m.Kind == protocol.KindSetup && m.Setup != nil && l.Threshold() && m.Setup.Config.Keys != protocol.KeysThreshold:
		return fmt.Errorf("%w: %w: the join link says threshold keys, but the server set the federation up with keys %q: refusing to seal under a key every participant derives", ErrFatal, ErrKeyMode, m.Setup.Config.Keys)
	}
	return nil
}
