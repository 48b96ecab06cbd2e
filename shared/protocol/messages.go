// Package protocol implements the HyFDCA round protocol (docs/design.md section 2) as two
// state machines free of I/O: the Coordinator (server side) and the
// Participant (one per client). They exchange Messages through a Transport;
// the in-memory transport here runs whole federations in one process, the
// websocket transport runs the same machines across the network.
package protocol

import (
	"github.com/hyfed/hyfed/shared/seal"
)

// Kind names a message type.
type Kind string

// Message kinds, coordinator -> participant.
const (
	KindSetup     Kind = "setup"      // layout and constants after alignment
	KindNorms     Kind = "norms"      // summed sealed squared norms of the client's samples
	KindRefresh   Kind = "refresh"    // sealed dual values of the client's samples: send hat_w
	KindStep      Kind = "step"       // run the local dual method
	KindDirection Kind = "direction"  // summed sealed direction on the client's samples
	KindWeights   Kind = "weights"    // step size and w on the client's features
	KindTrial     Kind = "trial"      // the round's primal direction u on the client's features
	KindIP        Kind = "ip"         // summed sealed inner products of the client's samples
	KindApply     Kind = "apply"      // seal gamma times the direction for the reported groups
	KindDone      Kind = "done"       // training finished
	KindError     Kind = "error"      // a typed error for the receiver
	KindOpen      Kind = "open"       // open this aggregate of sealed primal vectors (SealPrimal)
	KindLocal     Kind = "local"      // averaging baselines: take local steps from w (W) and seal the weights
	KindGram      Kind = "gram"       // block step: pick the group's samples, seal the block's partial Gram of them
	KindGramSum   Kind = "gram-sum"   // block step: the summed sealed Grams: solve the group's subproblem
	KindHello     Kind = "hello"      // participant registers its block
	KindNormsPart Kind = "norms-part" // sealed squared norms of the block's rows
	KindPrimal    Kind = "primal"     // hat_w_k
	KindDelta     Kind = "delta"      // sealed dual update
	KindDirPart   Kind = "dir-part"   // the block's share of dw and the conjugate change
	KindIPPart    Kind = "ip-part"    // sealed inner products of the block's rows
	KindMetrics   Kind = "metrics"    // loss and accuracy sums of labelled samples
	KindApplied   Kind = "applied"    // sealed dual update gamma*d of the reported groups
	KindWelcome   Kind = "welcome"    // the server accepted a hello: the session token and the participant's name
	KindOpened    Kind = "opened"     // the opened aggregate, on every feature (SealPrimal)
	KindLocalPart Kind = "local-part" // averaging baselines: the sealed local weights
	KindGramPart  Kind = "gram-part"  // block step: the sealed partial Grams of the picks
	KindSolved    Kind = "solved"     // block step, SolveOnce: the sealed directions of the groups the client solved

	// A federation with a schema prepares before the norms: each holder
	// seals its samples' label codes and its columns' statistics, and
	// gets back their sums over the holders (docs/own-data.md).
	KindPrepPart Kind = "prep-part" // sealed label codes (Sealed) and column statistics (Alpha)
	KindPrep     Kind = "prep"      // their sums on the client's samples and columns

	// After a server's restart: whether the participant resumed at the
	// boundary the server was restored at (Setup.Resume).
	KindResumed Kind = "resumed"

	// Threshold keys (Config.Keys): the key setup before the first round
	// and the switching of every sum the coordinator hands a participant
	// (docs/encryption.md, "Threshold keys in the protocol"). Keys carries
	// the key layer's messages in their own encodings (package
	// shared/seal/threshold), which the receiver decodes and checks.
	KindKeySetup     Kind = "key-setup"     // make your party of the threshold key (KeySetup)
	KindKeyShare     Kind = "key-share"     // a member's setup share, or another participant's own public key
	KindKeySetups    Kind = "key-setups"    // every member's setup share: members deal, the others take the collective key
	KindKeyDealt     Kind = "key-dealt"     // a member's encrypted Shamir shares for the other members (none from the others)
	KindKeyShares    Kind = "key-shares"    // the Shamir shares dealt to this member
	KindKeyReady     Kind = "key-ready"     // a member's setup is complete
	KindSwitch       Kind = "switch"        // make switching shares of these chunks to these participants' own keys
	KindSwitchShares Kind = "switch-shares" // the switching shares, one a job of the request, in its order

	// OPRF pseudonyms (Config.Pseudonyms "oprf"), before the alignment:
	// the key committee generates the OPRF key, every participant has its
	// blinded ids evaluated by the members and sends the pseudonyms
	// (coordinator_pseudonyms.go). Keys carries the package oprf's
	// encodings, each tagged under the link secret where a relay could
	// otherwise substitute it.
	KindOPRFSetup     Kind = "oprf-setup"     // the committee (OPRF): members make a channel key
	KindOPRFKey       Kind = "oprf-key"       // a member's channel key (none from the others)
	KindOPRFKeys      Kind = "oprf-keys"      // every member's channel key: deal
	KindOPRFDealt     Kind = "oprf-dealt"     // a member's commitment and its shares, sealed to the other members
	KindOPRFShares    Kind = "oprf-shares"    // every commitment and, to a member, its shares: blind your ids
	KindOPRFBlinded   Kind = "oprf-blinded"   // the participant's blinded ids
	KindOPRFEval      Kind = "oprf-eval"      // every participant's blinded ids, to a member: evaluate them
	KindOPRFEvaluated Kind = "oprf-evaluated" // a member's evaluations, one batch a participant, with proofs
	KindOPRFEvals     Kind = "oprf-evals"     // the members' evaluations of the receiver's ids
	KindPseudonyms    Kind = "pseudonyms"     // the participant's pseudonyms, in its hello's order
)

// Error codes of KindError messages: what a sender did wrong, for programs
// (and pages) to act on; Err says it for people.
const (
	CodeBadMessage        = "bad-message"        // the frame does not decode
	CodeTooLarge          = "too-large"          // the frame exceeds the read limit
	CodeOutOfPhase        = "out-of-phase"       // unexpected kind or round, a duplicate or a replay
	CodeBadField          = "bad-field"          // lengths, ranges, non-finite numbers, indexes outside the registration
	CodeWrongSecret       = "wrong-secret"       // the key fingerprint is not the federation's
	CodeBadInvite         = "bad-invite"         // no or a wrong invite token
	CodeUnknownFederation = "unknown-federation" // no federation with that id
	CodeUnknownSession    = "unknown-session"    // no session with that token
	CodeStarted           = "started"            // the federation started without this participant
	CodeSchema            = "schema"             // the block does not fit the federation's features
	CodeDeadline          = "deadline"           // no reply before the phase's deadline: reconnect
	CodeFinished          = "finished"           // training is over
	CodeStopped           = "stopped"            // the organizer stopped the federation, or it failed
	CodeAbuse             = "abuse"              // too many rejected messages: disconnected
	CodeReplaced          = "replaced"           // the same session connected again elsewhere
	CodeBusy              = "busy"               // the server is at a limit: try again shortly
	CodeDropped           = "dropped"            // the federation dropped the participant for good (an impossible value, too many failed replies)
)

// A participant's websocket offers two subprotocols: SocketProtocol and
// its token, SocketInvitePrefix+invite on its first connection,
// SocketSessionPrefix+session when it returns. Browsers cannot set headers
// on a WebSocket and URLs get logged; the server answers SocketProtocol.
const (
	SocketProtocol      = "hyfed.v1"
	SocketInvitePrefix  = "hyfed.invite."
	SocketSessionPrefix = "hyfed.session."
)

// Message is one protocol message. Exactly the fields of its Kind are set.
// Fields of type seal.Vec are the only ones that may carry per-sample
// values; every other field is public to the server by design.
type Message struct {
	Kind  Kind
	Round int
	// Saved (from the server, once known) is the latest round boundary
	// whose checkpoint is on disk: a participant keeps its state at every
	// boundary since, for a restart to resume (participant_resume.go).
	Saved int `json:",omitempty"`

	// hello
	Pseudonyms  []string
	Heldout     []bool
	Features    []int
	NumFeatures int
	Fingerprint string
	// hello from a participant's own file (a federation with a schema):
	// per feature, the power-of-two bound of its raw values
	// (schema.Magnitude), and whether the file has the label column.
	Magnitudes []int `json:",omitempty"`
	Labelled   bool  `json:",omitempty"`
	// Bias: the block holds the federation's last feature with this one
	// non-zero value in every row (Config.FindBias; 0: it does not).
	Bias float64 `json:",omitempty"`
	// Digest (OPRF pseudonyms, whose hello has none) is a keyed hash of
	// the block's ids in order: a returning participant must bring the
	// same block.
	Digest string `json:",omitempty"`
	// Browser: the participant runs in a browser tab, where the OPRF's
	// group arithmetic is 4.5 to 7 times slower: the OPRF key committee
	// takes native participants first.
	Browser bool `json:",omitempty"`

	// oprf-setup, oprf-eval: the OPRF key committee and what the receiver
	// does in it
	OPRF *OPRFRound `json:",omitempty"`

	// setup
	Setup *Setup

	// local: the client's index (its pick stream, as package averaging
	// draws it), its local steps so far (t of the step size) and, per
	// feature of the client, the number of active holders (its sum must
	// stay sealable)
	Client int `json:",omitempty"`
	Steps  int `json:",omitempty"`
	// local (fedhybrid): the number of participants, whose summands the
	// consensus adds (each must stay in its share of the sealable range)
	Participants int `json:",omitempty"`

	// step
	Active bool
	// Groups lists the indexes (into Setup.Groups) of the client's groups
	// that update this round, with the number of active holders of each
	// (local: ActiveHolders per feature of the client).
	Groups        []int
	ActiveHolders []int
	// gram: per entry of Groups, the first chunk of the group's Gram in the
	// Gram layout (every group has its own chunks, so a client opens only
	// its own groups' Grams).
	GramAt []int `json:",omitempty"`
	// gram-sum: the subproblems' scale sigma' (CoCoA+'s, >= 1) and, per
	// entry of Groups, the factor kappa (>= 1) on the summed partial Grams
	// (1 when the group's holders hold disjoint features, so that the sum
	// is the exact Gram).
	Sigma float64   `json:",omitempty"`
	Kappa []float64 `json:",omitempty"`
	// gram-sum under Config.SharedDirections: the scale (>= Sigma, the
	// number of updating groups) of each group's leading directions.
	SigmaShared float64 `json:",omitempty"`
	// gram-sum under GroupSteps: also solve each subproblem against the
	// Gram of the picks less their mean row, a second direction (the
	// server prices what the groups share). trial: per entry of Groups,
	// the server's weights on the group's two directions.
	Centered      bool      `json:",omitempty"`
	GroupScale    []float64 `json:",omitempty"`
	GroupCentered []float64 `json:",omitempty"`
	// Report lists the local groups whose label-dependent sums (conjugate
	// change, loss, accuracy) this client reports: one holder per group.
	// ip: Check lists the groups it prices too, as a second holder, so
	// that the two can be compared (coordinator_crosscheck.go).
	Report []int
	Check  []int `json:",omitempty"`

	// weights; opened: the aggregate on every feature
	Gamma   float64
	Applied bool      // the round's direction was applied with Gamma
	Full    bool      // weights: recompute and send every inner product
	W       []float64 `json:"-"` // on the wire in binary (floatFields)
	// weights: W is left out; the client held w before the round's step
	// and moves it itself by Gamma times the trial direction (if Applied)
	Follow bool `json:",omitempty"`
	// ip: candidate steps to price (nil: the values are x_n.w themselves)
	Grid []float64

	// primal, dir-part (empty under SealPrimal: Sealed then holds them per
	// feature, divided by lambda N, that is the client's share of w and of
	// the round's primal direction u)
	HatW  []float64 `json:"-"` // on the client's features, unscaled sum_n a_n x_{k,n}
	DW    []float64 `json:"-"` // on the client's features, unscaled sum_n d_n x_{k,n}
	DConj float64   // sum over labelled training samples of the conjugate change
	// dir-part under the block step, over the groups the client reports:
	// the largest step that keeps every picked dual value feasible (0: no
	// limit).
	GammaMax float64 `json:",omitempty"`
	// dir-part under GroupSteps: the second (centered) direction's DW,
	// DConj and GammaMax.
	DWCentered       []float64 `json:"-"`
	DConjCentered    float64   `json:",omitempty"`
	GammaMaxCentered float64   `json:",omitempty"`

	// metrics, one entry per grid value. GridLoss bounds the loss sum
	// from above: each margin is moved against its label by the most the
	// fixed-point rounding of its sealed shares can have moved it, so the
	// primal is never below P(w).
	GridLoss, GridConj      []float64
	GridTrainOK, GridHeldOK []int
	TrainN, HeldN           int
	// GroupLoss and GroupConj split GridLoss and GridConj by the groups
	// of Report (group-major: len(Report) x len(grid)); CheckLoss and
	// CheckConj are the same sums over the groups of Check.
	GroupLoss, GroupConj []float64 `json:",omitempty"`
	CheckLoss, CheckConj []float64 `json:",omitempty"`
	// GridWDot is the client's part of w_g . w(a_g), w_g = w + g u the
	// candidate model and w(a_g) = 1/(lambda N) sum_n a_n x_n the primal
	// point of the dual values the step would leave: (w_g on the client's
	// features) . (its sum_n a_n x_{k,n} over its training samples) /
	// (lambda N). Summed over every client it makes the dual of exactly the
	// held (quantised) dual values, whatever w has drifted to.
	GridWDot []float64 `json:",omitempty"`

	// norms-part after a preparation: per local group, its training and
	// held-out samples left out for want of a label and its samples whose
	// holders' labels disagree (3 numbers a group); per feature, the
	// scaling map the participant applies (offset, scale). norms: TrainN
	// is then the federation's training samples with labels.
	Labels []int     `json:",omitempty"`
	Scales []float64 `json:",omitempty"`

	// sealed payloads
	Sealed seal.Vec `json:"-"`
	// Alpha carries the sealed dual values along with inner products under
	// the paper rule, whose clients' own copies go stale while inactive;
	// and, in solved and direction under SolveOnce with group steps, the
	// second (centered) direction, as Sealed carries the first.
	Alpha seal.Vec `json:"-"`

	// key-setup: the federation's threshold key and the receiver's party
	KeySetup *KeySetup `json:",omitempty"`
	// switch, switch-shares: the request's number; the active set (t
	// committee members, their party ids ascending); the participants the
	// chunks go to; per job, the index of its target in Targets and of its
	// chunk among the chunks in Keys (after the own public keys).
	Batch     int      `json:",omitempty"`
	ActiveSet []int    `json:",omitempty"`
	Targets   []int    `json:",omitempty"`
	Jobs      [][2]int `json:",omitempty"`
	// switch: the targets (indexes into Targets) whose own public keys
	// lead Keys. A member keeps the own keys it got on its connection, so
	// the coordinator sends a target's own key to a member once, and again
	// only when it changed (the target came back with a new party).
	OwnKeys []int `json:",omitempty"`
	// switch: per job, where its chunk sits: the layout (LayoutSamples,
	// LayoutGram, LayoutFeatures) and the chunk's index in it. A member
	// switches a chunk only to a participant entitled to that position
	// (Setup.Layout); it cannot see what the chunk holds (docs/privacy.md).
	JobAt [][2]int `json:",omitempty"`
	// Keys holds the key layer's messages (setup shares, own public keys,
	// encrypted Shamir shares, switching shares) and, in a switch request,
	// the chunks to switch: public values the server may see, none of
	// which it can open.
	Keys [][]byte `json:"-"`

	// welcome: the token to reconnect as this participant, and the name
	// (a pseudonym) the server shows it under
	Session string
	Name    string

	// error; Close asks the transport to end the connection after it
	Err   string
	Code  string
	Close bool
}

// Setup tells a participant where its samples live in the layout and the
// constants of the federation. Per-sample slices follow the order of the
// participant's Hello.
type Setup struct {
	Client  int   // the participant's index: the paper rule's picks follow it
	Slots   []int // layout slot of each sample
	Group   []int // index into Groups of each sample
	Holders []int // |B_n| of each sample
	// Groups are the sample groups the participant belongs to; GroupKeys
	// name them by their holders, for pick seeds.
	GroupKeys []string
	NumTrain  int
	Config    Config
	// SendNorms asks for the sealed squared norms (first setup only: a
	// returning participant gets the stored sums).
	SendNorms bool
	// A federation with a schema: Prepare asks for the label codes and
	// column statistics (first setup only; a returning participant gets
	// the stored sums). StatSlots gives each feature's first slot in the
	// statistics layout (-1: none, the intercept and categories), and
	// Magnitudes each feature's power-of-two bound over every holder.
	// Intercept lists the local groups whose samples take the intercept
	// from this participant (one holder a group).
	Prepare bool `json:",omitempty"`
	// Resume (a server restored at a round boundary, Round): restore the
	// state kept at that boundary and answer resumed, Applied saying
	// whether it could.
	Resume bool `json:",omitempty"`
	// Lost lists the local groups the federation re-formed without
	// (a dropped holder's): their samples take no part any more.
	Lost       []int `json:",omitempty"`
	Round      int   `json:",omitempty"`
	StatSlots  []int `json:",omitempty"`
	Magnitudes []int `json:",omitempty"`
	Intercept  []int `json:",omitempty"`
	// Layout: threshold keys, to the key committee's members only: every
	// sample group in layout order, so that a member refuses to switch a
	// chunk to a participant that does not hold it.
	Layout []GroupLayout `json:",omitempty"`
}

// OPRFRound is the OPRF key committee and, in oprf-eval, the batches a
// member evaluates.
type OPRFRound struct {
	Members   []int // the members' participant indexes; member j (1-based) is Members[j-1]
	Threshold int
	Member    int // the receiver's member number (0: not a member)
	// Participant is the receiver's index, which its evaluations are
	// bound to.
	Participant int `json:",omitempty"`
	// oprf-eval: the participant each batch in Keys is from, and the rows
	// it declared (its hello's): a member evaluates no more for it.
	From []int `json:",omitempty"`
	Rows []int `json:",omitempty"`
	// pseudonyms: the members whose evaluations of the sender's ids did
	// not verify (it made its pseudonyms without them); the coordinator
	// checks each complaint itself.
	Bad []int `json:",omitempty"`
}

// GroupLayout is one sample group as a key committee member sees it: its
// holders (participant indexes, ascending) and its chunks in the sample
// layout (groups follow each other, each from a chunk boundary:
// seal.PadLayout). Its Gram chunks under the block step follow from its
// index (gramChunks).
type GroupLayout struct {
	Holders []int
	Chunks  int
}

// The layouts a switched chunk can sit in (Message.JobAt).
const (
	LayoutSamples  = 0 // per sample slot: norms, dual values, directions, inner products
	LayoutGram     = 1 // block step: per group, the Gram of its picks
	LayoutFeatures = 2 // per feature: the aggregate one participant opens (KindOpen)
)

// KeySetup describes a federation's threshold key to one participant.
type KeySetup struct {
	// Federation is the public id the common reference polynomials are
	// drawn from.
	Federation string
	// Committee lists the key committee's party ids; Threshold is t.
	Committee []int
	Threshold int
	// Party is the receiver's party id: its participant index plus 1 (the
	// Shamir points are the ids, and 0 is the secret's).
	Party int
	// Rejoin: the federation's key exists; send the own public key and
	// take the collective key from the setup shares.
	Rejoin bool `json:",omitempty"`
}

// WireSize estimates the bytes the message takes on the wire: 8 per number,
// the scheme's size per sealed chunk, the length of strings. It is what the
// metrics report as bytes sent until a wire encoding measures them exactly.
func (m *Message) WireSize(s seal.Scheme) int {
	n := 16 + len(m.Kind)
	for _, p := range m.Pseudonyms {
		n += len(p) + 2
	}
	n += 8*(len(m.Magnitudes)+len(m.Labels)+len(m.Scales)) + len(m.Heldout) + 8*len(m.Features) + len(m.Fingerprint) + 8*(len(m.Groups)+len(m.ActiveHolders)+len(m.Report))
	n += 8 * (len(m.GramAt) + len(m.Kappa) + len(m.GroupScale) + len(m.GroupCentered) + len(m.DWCentered))
	n += 8 * (len(m.W) + len(m.HatW) + len(m.DW) + len(m.Grid) + 2*len(m.GridLoss) + len(m.GridWDot) + 2*len(m.GridTrainOK))
	n += 8 * 8
	if m.Setup != nil {
		n += 8 * (len(m.Setup.Slots) + len(m.Setup.Group) + len(m.Setup.Holders) + len(m.Setup.StatSlots) + len(m.Setup.Magnitudes) + len(m.Setup.Intercept))
		n += 64
		for _, k := range m.Setup.GroupKeys {
			n += len(k)
		}
		for _, g := range m.Setup.Layout {
			n += 8 * (1 + len(g.Holders))
		}
	}
	if s != nil {
		n += m.Sealed.WireSize(s) + m.Alpha.WireSize(s)
	}
	for _, b := range m.Keys {
		n += 4 + len(b)
	}
	n += 8 * (len(m.ActiveSet) + len(m.Targets) + len(m.OwnKeys) + 2*len(m.Jobs) + 2*len(m.JobAt))
	if k := m.KeySetup; k != nil {
		n += 32 + len(k.Federation) + 8*len(k.Committee)
	}
	return n + len(m.Err)
}
