package oprf

import (
	"crypto"
	"crypto/rand"
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cloudflare/circl/zk/dleq"
)

// Context names whom an evaluation is for. It is hashed into every proof, so
// a response proves "member j evaluated these points for this participant of
// this federation". It does not stop a participant from sharing the points or
// its outputs, and it does not authenticate the requester: the caller must set
// it from an authenticated session, never from what the request claims.
type Context struct {
	FederationID  string
	ParticipantID string
}

func (c Context) check() error {
	if c.FederationID == "" || c.ParticipantID == "" {
		return errors.New("oprf: federation and participant ids must be non-empty")
	}
	if len(c.FederationID) > MaxIDLength || len(c.ParticipantID) > MaxIDLength {
		return fmt.Errorf("oprf: federation and participant ids are limited to %d bytes", MaxIDLength)
	}
	return nil
}

// proofParams binds the batched DLEQ proof of RFC 9497 section 2.2 to the
// context through its DST; the ids are hashed so the DST stays short and
// length-framed (no two contexts share a DST).
func (c Context) proofParams() dleq.Params {
	h := sha512.New()
	var n [2]byte
	for _, id := range []string{c.FederationID, c.ParticipantID} {
		binary.BigEndian.PutUint16(n[:], uint16(len(id)))
		h.Write(n[:])
		h.Write([]byte(id))
	}
	dst := append([]byte("HyFedThreshold-"+contextString+"-"), h.Sum(nil)...)
	return dleq.Params{G: g, H: crypto.SHA512, DST: dst}
}

// Budget rule: a participant that declares rows may have rows + Margin(rows)
// points evaluated by each member. The margin absorbs retries (a batch is
// charged when accepted, even if its response is lost) without letting a
// participant probe many ids beyond its data.
const (
	// MinMargin is the smallest margin, for small datasets.
	MinMargin = 16
	// MarginPercent is the margin, in percent of the rows, for large ones.
	MarginPercent = 1
	// MaxDeclaredRows keeps budget arithmetic far from overflow.
	MaxDeclaredRows = 1 << 40
)

// Margin returns max(MinMargin, ⌈rows·MarginPercent/100⌉).
func Margin(rows int) int {
	return max(MinMargin, (rows*MarginPercent+99)/100)
}

// Budget returns how many points one member evaluates for a participant that
// declared rows.
func Budget(rows int) int { return rows + Margin(rows) }

// EvaluationRequest carries a participant's blinded points to the members.
type EvaluationRequest struct {
	Context
	Elements []Element
}

// EvaluationResponse is member Member's Z_i = s_j·B_i for every requested
// point, with one batched DLEQ proof that log_G(K_j) = log_B(Z) under the
// request's context.
type EvaluationResponse struct {
	Member   int
	Elements []Element
	proof    *dleq.Proof
}

// BudgetError is the refusal of a batch that would exceed a participant's
// declared budget.
type BudgetError struct {
	Context
	Rows, Budget, Used, Asked int
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("oprf: participant %q in federation %q declared %d rows (budget %d with margin) and has used %d evaluations; refusing %d more",
		e.ParticipantID, e.FederationID, e.Rows, e.Budget, e.Used, e.Asked)
}

// ErrNotDeclared is returned for a participant that declared no row count.
var ErrNotDeclared = errors.New("oprf: participant has declared no row count")

type account struct {
	rows, budget, used int
}

// Evaluator is a committee member's evaluation service. It is safe for
// concurrent use. Its budget accounts live in memory: a caller that restarts
// a member must restore them, or a participant regains its budget.
type Evaluator struct {
	index  int
	secret Scalar
	public Element

	mu       sync.Mutex
	accounts map[Context]*account
}

// NewEvaluator returns the evaluator for member share.Index.
func NewEvaluator(share *KeyShare) (*Evaluator, error) {
	if share == nil || share.Secret == nil || share.Secret.Group() != g {
		return nil, errors.New("oprf: evaluator needs a ristretto255 key share")
	}
	if share.Index < 1 || share.Index > MaxMembers {
		return nil, fmt.Errorf("oprf: member index %d outside 1..%d", share.Index, MaxMembers)
	}
	if share.Secret.IsZero() {
		return nil, errors.New("oprf: key share is zero")
	}
	return &Evaluator{
		index:    share.Index,
		secret:   share.Secret.Copy(),
		public:   g.NewElement().MulGen(share.Secret),
		accounts: make(map[Context]*account),
	}, nil
}

// Share returns a copy of the member's key share: what a member must keep
// (or a test pools) to evaluate again.
func (e *Evaluator) Share() *KeyShare { return &KeyShare{Index: e.index, Secret: e.secret.Copy()} }

// Declare records the participant's row count. It is fixed once made: a
// second declaration with another count is refused, since raising it would
// raise the budget.
func (e *Evaluator) Declare(ctx Context, rows int) error {
	if err := ctx.check(); err != nil {
		return err
	}
	if rows < 0 || rows > MaxDeclaredRows {
		return fmt.Errorf("oprf: participant %q declares %d rows, want 0..%d", ctx.ParticipantID, rows, MaxDeclaredRows)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if a, ok := e.accounts[ctx]; ok {
		if a.rows != rows {
			return fmt.Errorf("oprf: participant %q in federation %q already declared %d rows; refusing to change it to %d",
				ctx.ParticipantID, ctx.FederationID, a.rows, rows)
		}
		return nil
	}
	e.accounts[ctx] = &account{rows: rows, budget: Budget(rows)}
	return nil
}

// Usage reports how many points were evaluated for ctx and its budget.
func (e *Evaluator) Usage(ctx Context) (used, budget int, declared bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	a, ok := e.accounts[ctx]
	if !ok {
		return 0, 0, false
	}
	return a.used, a.budget, true
}

// charge reserves n evaluations before any work, so concurrent batches
// cannot together exceed the budget.
func (e *Evaluator) charge(ctx Context, n int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	a, ok := e.accounts[ctx]
	if !ok {
		return fmt.Errorf("oprf: participant %q in federation %q: %w", ctx.ParticipantID, ctx.FederationID, ErrNotDeclared)
	}
	if a.used+n > a.budget {
		return &BudgetError{Context: ctx, Rows: a.rows, Budget: a.budget, Used: a.used, Asked: n}
	}
	a.used += n
	return nil
}

func (e *Evaluator) refund(ctx Context, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.accounts[ctx].used -= n
}

// Evaluate multiplies each blinded point by the key share and proves it.
// The points reveal nothing about the inputs (they are uniformly random);
// the budget is what stops a participant from querying the PRF at will.
func (e *Evaluator) Evaluate(req *EvaluationRequest) (*EvaluationResponse, error) {
	if req == nil {
		return nil, errors.New("oprf: evaluate: nil request")
	}
	if err := req.Context.check(); err != nil {
		return nil, fmt.Errorf("oprf: evaluate: %w", err)
	}
	n := len(req.Elements)
	if n == 0 || n > MaxBatch {
		return nil, fmt.Errorf("oprf: evaluate: batch of %d points, want 1..%d", n, MaxBatch)
	}
	for i, b := range req.Elements {
		if err := checkElement(b); err != nil {
			return nil, fmt.Errorf("oprf: evaluate: point %d: %w", i, err)
		}
	}
	if err := e.charge(req.Context, n); err != nil {
		return nil, err
	}
	out := make([]Element, n)
	for i, b := range req.Elements {
		out[i] = g.NewElement().Mul(b, e.secret)
	}
	// The proof nonce always comes from crypto/rand: a nonce repeated across
	// two proofs would reveal the key share.
	r, err := randomScalar(rand.Reader)
	if err != nil {
		e.refund(req.Context, n)
		return nil, fmt.Errorf("oprf: evaluate: %w", err)
	}
	proof, err := dleq.Prover{Params: req.Context.proofParams()}.ProveBatchWithRandomnessRFC9497(e.secret, e.public, req.Elements, out, r)
	if err != nil {
		e.refund(req.Context, n)
		return nil, fmt.Errorf("oprf: evaluate: prove: %w", err)
	}
	return &EvaluationResponse{Member: e.index, Elements: out, proof: proof}, nil
}
