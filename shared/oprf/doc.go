// Package oprf is a threshold oblivious pseudorandom function over
// ristretto255 that gives record ids pseudonyms no single party can compute.
// A pseudonym is the output of RFC 9497's OPRF mode, suite
// ristretto255-SHA512, under a key k that nobody holds:
//
//	pseudonym(id) = SHA-512(I2OSP(len(id), 2) || id || I2OSP(32, 2) || k·H(id) || "Finalize")
//
// so anyone given k could recompute it with any RFC 9497 implementation, and
// equal ids get equal pseudonyms across participants.
//
// Who holds what. A key committee of N members generates k jointly, T-of-N
// (Committee): each member deals a random polynomial of degree T-1 with Deal,
// broadcasts its Feldman commitment and sends one SecretShare to every other
// member over an encrypted channel; each member checks what it received and
// sums it with CombineShares into its KeyShare s_j. A dealer whose share fails
// the check is named in a *DealerError; the caller excludes it everywhere, and
// all members and clients must use the same qualified dealers (at least T of
// them). The commitments are public and give K = k·G and each member's K_j =
// s_j·G (NewPublicKeys); clients must obtain them authenticated by the
// members, since a relay that swaps them could substitute a key it knows.
// Like every Pedersen-style DKG, a dishonest dealer can bias the distribution
// of K by getting itself excluded, but cannot learn k with fewer than T shares.
//
// Evaluating. A participant blinds its ids with Blind: each H(id) is
// multiplied by a fresh secret blind r, giving uniformly random points that
// the server relays to the members together with the participant's Context
// (federation id, participant id). Each member's Evaluator returns s_j·r·H(id)
// with one batched DLEQ proof (RFC 9497 section 2.2) that it used the s_j
// behind K_j; the proof's domain separation includes the Context, so a
// response made for one participant or federation does not verify for
// another. The participant's Finalize checks every proof (a failure names the
// member in a *MemberError), combines any T responses with Lagrange
// coefficients at zero, removes the blind and hashes as RFC 9497's Finalize.
//
// What the relay and coalitions learn. The server sees blinded points
// (uniformly random, independent of the ids) and evaluations (random points
// too without the blinds). A coalition of the server, fewer than T members
// and any participants holds fewer than T shares, which fit every key, so it
// cannot compute pseudonyms offline (with K public this rests on the
// discrete-logarithm-type assumptions behind RFC 9497). What it can do is ask
// the committee to evaluate chosen ids online, as any participant can, and
// that is what the budget bounds. The members learn nothing about the ids.
//
// Budget. Each Evaluator counts, per (federation, participant), the points it
// evaluated, against the participant's declared row count plus a margin for
// retries: Budget(rows) = rows + max(MinMargin, ⌈rows·MarginPercent/100⌉),
// that is rows + max(16, ⌈rows/100⌉). A batch that would exceed it is refused
// with a *BudgetError, and a declaration cannot be raised once made. So a
// coalition can learn pseudonyms of ids of its choosing (to test guesses
// against pseudonyms it sees, say) only up to its participants' budgets, not
// for a whole id space.
//
// Encodings. Commitments, shares, requests and responses have compact binary
// encodings (MarshalBinary and the Decode functions); decoders take a batch
// cap from the caller and refuse truncated, oversized, non-canonical and
// identity inputs.
package oprf
