package oprf

import (
	"errors"
	"fmt"
	"io"
	"slices"
)

// Committee is the public shape of the key committee: members are indexed
// 1..N and any T of them can evaluate; fewer than T learn nothing of k.
type Committee struct {
	N, T int
}

func (c Committee) check() error {
	if c.N < 1 || c.N > MaxMembers {
		return fmt.Errorf("oprf: committee of %d members, want 1..%d", c.N, MaxMembers)
	}
	if c.T < 1 || c.T > c.N {
		return fmt.Errorf("oprf: threshold %d for %d members, want 1..%d", c.T, c.N, c.N)
	}
	return nil
}

func (c Committee) checkMember(i int, role string) error {
	if i < 1 || i > c.N {
		return fmt.Errorf("oprf: %s index %d outside 1..%d", role, i, c.N)
	}
	return nil
}

// Commitment is a dealer's public Feldman commitment [a_0·G, ..., a_{T-1}·G]
// to its polynomial; it is broadcast to every member and client.
type Commitment struct {
	Dealer       int
	Coefficients []Element
}

// SecretShare is f_dealer(recipient); it must reach only its recipient, so
// the caller encrypts it in transit.
type SecretShare struct {
	Dealer, Recipient int
	Value             Scalar
}

// Dealing is one dealer's output: a commitment for everyone and
// Shares[j-1] for member j.
type Dealing struct {
	Commitment *Commitment
	Shares     []*SecretShare
}

// KeyShare is member Index's share s_j = Σ_i f_i(j) of the key; it is the
// only secret a member keeps.
type KeyShare struct {
	Index  int
	Secret Scalar
}

// PublicKeys are derived from the qualified dealers' commitments by anyone:
// Key is K = k·G and Shares[j-1] is K_j = s_j·G, which clients check
// member j's proofs against.
type PublicKeys struct {
	Committee Committee
	Key       Element
	Shares    []Element
}

// DealerError names a dealer whose commitment or share is wrong, so the
// caller can exclude it from the qualified set and recombine.
type DealerError struct {
	Dealer int
	Err    error
}

func (e *DealerError) Error() string { return fmt.Sprintf("oprf: dealer %d: %v", e.Dealer, e.Err) }
func (e *DealerError) Unwrap() error { return e.Err }

// Deal is member dealer's single round of the joint key generation: a random
// polynomial of degree T-1, its commitment, and one share per member.
// rnd nil means crypto/rand; anything else is for tests only.
func Deal(c Committee, dealer int, rnd io.Reader) (*Dealing, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if err := c.checkMember(dealer, "dealer"); err != nil {
		return nil, err
	}
	coeffs := make([]Scalar, c.T)
	com := &Commitment{Dealer: dealer, Coefficients: make([]Element, c.T)}
	for m := range coeffs {
		s, err := randomScalar(rnd)
		if err != nil {
			return nil, fmt.Errorf("oprf: deal: %w", err)
		}
		coeffs[m] = s
		com.Coefficients[m] = g.NewElement().MulGen(s)
	}
	d := &Dealing{Commitment: com, Shares: make([]*SecretShare, c.N)}
	for j := 1; j <= c.N; j++ {
		d.Shares[j-1] = &SecretShare{Dealer: dealer, Recipient: j, Value: evalPoly(coeffs, j)}
	}
	return d, nil
}

// CombineShares is member recipient's end of the key generation: it checks
// every received share against its dealer's commitment and sums them. The
// commitments are the qualified dealers (at least T, so one is honest while
// fewer than T members collude); every member and client must use the same set.
func CombineShares(c Committee, recipient int, commitments []*Commitment, shares []*SecretShare) (*KeyShare, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if err := c.checkMember(recipient, "recipient"); err != nil {
		return nil, err
	}
	byDealer, err := indexCommitments(c, commitments)
	if err != nil {
		return nil, err
	}
	got := make(map[int]*SecretShare, len(shares))
	for _, s := range shares {
		if s == nil {
			return nil, errors.New("oprf: combine shares: nil share")
		}
		if _, ok := byDealer[s.Dealer]; !ok {
			return nil, &DealerError{s.Dealer, errors.New("share from a dealer without a qualified commitment")}
		}
		if _, dup := got[s.Dealer]; dup {
			return nil, &DealerError{s.Dealer, errors.New("two shares for one recipient")}
		}
		got[s.Dealer] = s
	}
	sum := g.NewScalar()
	for _, dealer := range sortedKeys(byDealer) {
		s, ok := got[dealer]
		if !ok {
			return nil, &DealerError{dealer, fmt.Errorf("dealt no share to member %d", recipient)}
		}
		if s.Recipient != recipient {
			return nil, &DealerError{dealer, fmt.Errorf("share addressed to member %d reached member %d", s.Recipient, recipient)}
		}
		if s.Value == nil || s.Value.Group() != g {
			return nil, &DealerError{dealer, errors.New("share is not a ristretto255 scalar")}
		}
		// Feldman check: f_i(j)·G must equal Σ_m C_i[m]·j^m.
		if !g.NewElement().MulGen(s.Value).IsEqual(evalCommitment(byDealer[dealer].Coefficients, recipient)) {
			return nil, &DealerError{dealer, fmt.Errorf("share for member %d does not match the dealer's commitment", recipient)}
		}
		sum.Add(sum, s.Value)
	}
	return &KeyShare{Index: recipient, Secret: sum}, nil
}

// NewPublicKeys derives K and every K_j from the qualified dealers'
// commitments. Clients must get these commitments authenticated by the
// members, not merely relayed: a relay that swaps them can fake the key.
func NewPublicKeys(c Committee, commitments []*Commitment) (*PublicKeys, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	byDealer, err := indexCommitments(c, commitments)
	if err != nil {
		return nil, err
	}
	// Summing the commitments coefficient-wise commits to Σ_i f_i.
	joint := make([]Element, c.T)
	for m := range joint {
		joint[m] = g.Identity()
		for _, com := range byDealer {
			joint[m].Add(joint[m], com.Coefficients[m])
		}
	}
	pub := &PublicKeys{Committee: c, Key: joint[0], Shares: make([]Element, c.N)}
	if pub.Key.IsIdentity() {
		return nil, errors.New("oprf: public keys: joint key is the identity")
	}
	for j := 1; j <= c.N; j++ {
		pub.Shares[j-1] = evalCommitment(joint, j)
		if pub.Shares[j-1].IsIdentity() {
			return nil, fmt.Errorf("oprf: public keys: member %d's key share is the identity", j)
		}
	}
	return pub, nil
}

// indexCommitments validates the qualified set and maps it by dealer.
func indexCommitments(c Committee, commitments []*Commitment) (map[int]*Commitment, error) {
	byDealer := make(map[int]*Commitment, len(commitments))
	for _, com := range commitments {
		if com == nil {
			return nil, errors.New("oprf: nil commitment")
		}
		if err := c.checkMember(com.Dealer, "dealer"); err != nil {
			return nil, err
		}
		if _, dup := byDealer[com.Dealer]; dup {
			return nil, &DealerError{com.Dealer, errors.New("two commitments")}
		}
		if len(com.Coefficients) != c.T {
			return nil, &DealerError{com.Dealer, fmt.Errorf("commitment has %d coefficients, threshold %d needs %d", len(com.Coefficients), c.T, c.T)}
		}
		for m, e := range com.Coefficients {
			if err := checkElement(e); err != nil {
				return nil, &DealerError{com.Dealer, fmt.Errorf("commitment coefficient %d: %w", m, err)}
			}
		}
		byDealer[com.Dealer] = com
	}
	if len(byDealer) < c.T {
		return nil, fmt.Errorf("oprf: %d qualified dealers, threshold %d needs at least %d", len(byDealer), c.T, c.T)
	}
	return byDealer, nil
}

// evalPoly evaluates Σ_m coeffs[m]·x^m by Horner's rule.
func evalPoly(coeffs []Scalar, x int) Scalar {
	xs := scalarOf(x)
	acc := coeffs[len(coeffs)-1].Copy()
	for m := len(coeffs) - 2; m >= 0; m-- {
		acc.Mul(acc, xs)
		acc.Add(acc, coeffs[m])
	}
	return acc
}

// evalCommitment evaluates Σ_m coeffs[m]·x^m "in the exponent".
func evalCommitment(coeffs []Element, x int) Element {
	xs := scalarOf(x)
	acc := coeffs[len(coeffs)-1].Copy()
	for m := len(coeffs) - 2; m >= 0; m-- {
		acc.Mul(acc, xs)
		acc.Add(acc, coeffs[m])
	}
	return acc
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
