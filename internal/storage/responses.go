package storage

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultResponseTTL is how long a stored response is kept when the backend
// is given no time to live: both the memory store (memresponses) and the
// embedded one (sqlite) forget a response this long after it was last
// used (stored, or continued by a later turn).
const DefaultResponseTTL = 24 * time.Hour

// MaxConversationTurns bounds how many stored responses a conversation
// rebuilt from previous_response_id follows (Chain): a longer one is
// refused (ErrChainTooLong) rather than read without end.
const MaxConversationTurns = 1000

// StoredResponse is one Responses API answer kept for GET /v1/responses/{id},
// its input items and continuing the conversation (previous_response_id).
// Each turn keeps only what is its own (its new input items and its
// answer); a conversation is rebuilt by following PreviousID (Chain), so a
// conversation of n turns stores n turns, not n²/2. The backend keeps the
// JSON as given and never reads it.
type StoredResponse struct {
	// ID is the response's id (resp_…).
	ID string
	// PreviousID is the previous_response_id the turn continued ("" for
	// the first turn of a conversation).
	PreviousID string
	// CreatedAt is when it was stored.
	CreatedAt time.Time
	// Response is the response object as the client received it; its
	// output items are this turn's answer.
	Response []byte
	// Input is this turn's own input items, each with its id: a JSON array
	// (the earlier turns' are their responses').
	Input []byte
}

// Size is the bytes a stored response holds (its JSON and ids).
func (r *StoredResponse) Size() int {
	return len(r.ID) + len(r.PreviousID) + len(r.Response) + len(r.Input)
}

// Responses is the Responses API's response store. It is apart from Store:
// the memory backend (internal/storage/memresponses) keeps responses only,
// and the embedded store (internal/storage/sqlite) implements both.
//
// A backend forgets a response its time to live after it was last used:
// stored, or named as the PreviousID of a later stored turn (which renews
// every response of that turn's conversation), so a conversation in use is
// never cut by the expiry of its first turns.
type Responses interface {
	// PutResponse keeps r (replacing one with the same id) and renews the
	// responses its PreviousID chain names. Once it returns nil,
	// GetResponse finds r; the backend says when it is durable.
	PutResponse(ctx context.Context, r StoredResponse) error
	// GetResponse returns the response with that id; ErrNotFound when there
	// is none (never stored, deleted or expired).
	GetResponse(ctx context.Context, id string) (StoredResponse, error)
	// DeleteResponse removes it; ErrNotFound when there is none. The
	// responses that continued it keep their own turns but can no longer
	// be continued or listed whole (Chain fails with ErrChainBroken).
	DeleteResponse(ctx context.Context, id string) error
}

// ErrChainTooLong is Chain's error for a conversation of more than its
// bound of turns.
var ErrChainTooLong = errors.New("the conversation has too many stored turns")

// ChainBrokenError is Chain's error when an earlier turn of the
// conversation is no longer stored (deleted or expired); it wraps
// ErrChainBroken.
type ChainBrokenError struct {
	// ID is the response whose conversation was asked for; Missing is the
	// earlier response that is gone.
	ID, Missing string
}

// ErrChainBroken is what ChainBrokenError wraps.
var ErrChainBroken = errors.New("an earlier turn of the conversation is no longer stored")

func (e *ChainBrokenError) Error() string {
	return fmt.Sprintf("response %s continues %s, which is no longer stored (deleted or expired)", e.ID, e.Missing)
}

// Unwrap makes errors.Is(err, ErrChainBroken) hold.
func (e *ChainBrokenError) Unwrap() error { return ErrChainBroken }

// ChainReader is a Responses backend that reads a whole conversation at
// once (the embedded store, in one query); Chain uses it. ResponseChain
// has Chain's contract.
type ChainReader interface {
	ResponseChain(ctx context.Context, id string, maxTurns int) ([]StoredResponse, error)
}

// Chain returns the response id and every earlier turn of its
// conversation, oldest first, following PreviousID through r, at most
// maxTurns (MaxConversationTurns when not positive). Errors: ErrNotFound
// (wrapped) when id itself is not stored; *ChainBrokenError when an
// earlier turn is gone; ErrChainTooLong past maxTurns.
func Chain(ctx context.Context, r Responses, id string, maxTurns int) ([]StoredResponse, error) {
	if maxTurns <= 0 {
		maxTurns = MaxConversationTurns
	}
	if cr, ok := r.(ChainReader); ok {
		return cr.ResponseChain(ctx, id, maxTurns)
	}
	var chain []StoredResponse
	for next := id; next != ""; {
		if len(chain) == maxTurns {
			return nil, fmt.Errorf("response %s: %w (more than %d)", id, ErrChainTooLong, maxTurns)
		}
		sr, err := r.GetResponse(ctx, next)
		if errors.Is(err, ErrNotFound) && next != id {
			return nil, &ChainBrokenError{ID: id, Missing: next}
		}
		if err != nil {
			return nil, err
		}
		chain = append(chain, sr)
		next = sr.PreviousID
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return chain, nil
}

// RenewWithin is the renewal window of a store with that time to live: a
// turn stored within it of its previous turn's last use takes the
// conversation's time instead of renewing every earlier turn, so renewal
// costs a walk of the conversation at most once a window (a minute, or a
// hundredth of a shorter TTL), and a conversation is kept at least
// ttl − RenewWithin(ttl) after its newest turn.
func RenewWithin(ttl time.Duration) time.Duration {
	return min(time.Minute, ttl/100)
}
