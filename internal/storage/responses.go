package storage

import (
	"context"
	"time"
)

// DefaultResponseTTL is how long a stored response is kept when the backend
// is given no time to live: both the memory store (memresponses) and the
// embedded one (sqlite) forget a response this long after it was stored.
const DefaultResponseTTL = 24 * time.Hour

// StoredResponse is one Responses API answer kept for GET /v1/responses/{id},
// its input items and continuing the conversation (previous_response_id).
// The backend keeps the JSON as given and never reads it.
type StoredResponse struct {
	// ID is the response's id (resp_…).
	ID string
	// CreatedAt is when it was stored; with the backend's time to live it
	// decides when the response is forgotten.
	CreatedAt time.Time
	// Response is the response object as the client received it.
	Response []byte
	// Input is this turn's input items, each with its id: a JSON array.
	Input []byte
	// Conversation is every item of the conversation up to and including
	// this answer (earlier turns' inputs and outputs, this turn's input,
	// its output items), as Responses API input items: a JSON array the
	// next turn puts in front of its own input.
	Conversation []byte
}

// Size is the bytes a stored response holds (its JSON).
func (r *StoredResponse) Size() int {
	return len(r.ID) + len(r.Response) + len(r.Input) + len(r.Conversation)
}

// Responses is the Responses API's response store. It is apart from Store:
// the memory backend (internal/storage/memresponses) keeps responses only,
// and the embedded store (internal/storage/sqlite) implements both.
type Responses interface {
	// PutResponse keeps r (replacing one with the same id); nil error means
	// it is durable where the backend is.
	PutResponse(ctx context.Context, r StoredResponse) error
	// GetResponse returns the response with that id; ErrNotFound when there
	// is none (never stored, deleted or expired).
	GetResponse(ctx context.Context, id string) (StoredResponse, error)
	// DeleteResponse removes it; ErrNotFound when there is none.
	DeleteResponse(ctx context.Context, id string) error
}
