package protocol

// InputKind says what reaches the coordinator.
type InputKind int

// What can reach the coordinator: a participant's message or connection,
// a phase deadline, or an organizer's action.
const (
	InputMessage  InputKind = iota // a participant's message (From, Msg)
	InputJoin                      // a participant connected and sent its hello (From, Msg)
	InputLeave                     // a participant's connection ended (From)
	InputDeadline                  // the current phase's deadline passed
	InputStart                     // the organizer starts a held federation (HoldStart)
	InputPause                     // the organizer pauses at the next round boundary
	InputResume                    // the organizer resumes (or a restored federation goes on)
	InputStop                      // the organizer stops the federation (Reason)
	// InputMisbehaved: the server closed participant From's connection
	// for what it sent (Reason: a frame past its limit): a leave and a
	// strike (coordinator_strikes.go).
	InputMisbehaved
	// InputSaved: the checkpoint of round boundary Round is on disk.
	InputSaved
)

var inputNames = [...]string{"message", "join", "leave", "deadline", "start", "pause", "resume", "stop", "misbehaved", "saved"}

func (k InputKind) String() string {
	if k >= 0 && int(k) < len(inputNames) {
		return inputNames[k]
	}
	return "input?"
}

// Input is one thing that reaches the coordinator.
type Input struct {
	Kind   InputKind
	From   int     // the participant (message, join, leave)
	Msg    Message // the message or hello (message, join)
	Reason string  // why the organizer stops (stop), what the participant did (misbehaved)
	Round  int     // the round boundary whose checkpoint was written (saved)
}

// Ready is everything one Step produced, for the caller to act on: the
// envelopes to send, a checkpoint to write, the rounds recorded, and the
// state to follow (a new PhaseSeq arms a new deadline). The server and
// Serve consume the same value; nothing needs polling after a call.
type Ready struct {
	Envelopes []Envelope
	// Checkpoint is the state at the round boundary just passed (nil:
	// none new); write it before acknowledging anything later.
	Checkpoint *Checkpoint
	// Rounds are the rounds recorded since the previous Ready (a restored
	// coordinator's rounds were carried before the restart).
	Rounds []RoundMetrics
	Round  int
	// Phase is the phase in progress ("" between phases), PhaseSeq the
	// number of phases started so far: a deadline armed for one phase
	// must not end the next.
	Phase    string
	PhaseSeq int
	Finished bool // the last round is done, or the federation was stopped
	Stopped  bool
	Waiting  bool // held at a round boundary (paused, quorum, restored)
	Paused   bool
	// MaxChunks bounds the sealed chunks one message may carry now
	// (Coordinator.MaxChunks), for the decoder's limits.
	MaxChunks int
	// Err is the refusal of an organizer's action (start); a refused
	// participant message is an error envelope instead.
	Err error
}

// Step feeds one input to the coordinator and returns what it produced.
func (c *Coordinator) Step(in Input) Ready {
	var err error
	switch in.Kind {
	case InputJoin:
		c.cur.BytesIn += in.Msg.WireSize(c.scheme)
		if err := c.connect(in.From, in.Msg); err != nil {
			c.reject(in.From, err)
		}
	case InputMessage:
		c.cur.BytesIn += in.Msg.WireSize(c.scheme)
		if err := c.receive(in.From, in.Msg); err != nil {
			c.refused(in.From, in.Msg, err)
		}
	case InputLeave:
		c.disconnect(in.From)
	case InputMisbehaved:
		c.misbehaved(in.From, in.Reason)
	case InputSaved:
		c.saved = max(c.saved, in.Round)
	case InputDeadline:
		c.expire()
	case InputStart:
		err = c.startNow()
	case InputPause:
		c.paused = true
	case InputResume:
		c.resume()
	case InputStop:
		c.stop(in.Reason)
	}
	c.requestSwitches()
	r := Ready{Envelopes: c.flush(), Checkpoint: c.snap, Round: c.round, Phase: c.Phase(), PhaseSeq: c.phaseSeq,
		Finished: c.finished, Stopped: c.stopped, Waiting: c.waiting, Paused: c.paused, MaxChunks: c.MaxChunks(), Err: err}
	c.snap = nil
	if c.reported < len(c.history) {
		r.Rounds = c.history[c.reported:len(c.history):len(c.history)]
		c.reported = len(c.history)
	}
	return r
}
