package dataplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/translate"
)

// The Responses API's response store: what a front end answers on
// GET/DELETE /v1/responses/{id} and GET /v1/responses/{id}/input_items, and
// how an exchange keeps its answer (store: true) and rebuilds an earlier
// conversation (previous_response_id).

// HeaderShouldRetry tells OpenAI's SDKs whether to retry an error (they
// retry 5xx, 408, 409 and 429 otherwise).
const HeaderShouldRetry = "x-should-retry"

// storeTimeout bounds one response-store call made for a request.
const storeTimeout = 5 * time.Second

// ResponseNotFound is OpenAI's 404 for a response id the store does not have.
func ResponseNotFound(id string) *Error {
	return NewError(http.StatusNotFound, TypeInvalidRequest, "Response with id '"+id+"' not found.")
}

// noRetry is a, marked not to be retried.
func noRetry(a *Answer) *Answer {
	a.Header.Set(HeaderShouldRetry, "false")
	return a
}

// StoredResponse answers the stored-response routes: method GET or DELETE
// on /v1/responses/{id} (sub ""), or GET on …/input_items (sub
// "input_items") with OpenAI's paging query (limit 1–100, default 20; order
// asc or desc, default desc; after, before). h (which may be nil) gets the
// content type. Without a response store the answer is a 404 that says how
// to turn it on, with x-should-retry: false.
func (p *Plane) StoredResponse(ctx context.Context, method, id, sub string, query url.Values, h http.Header) *Answer {
	if p.responses == nil {
		return noRetry(ErrorAnswer(NoResponseStore(), h))
	}
	if id == "" || len(id) > 256 {
		return noRetry(ErrorAnswer(ResponseNotFound(id), h))
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if method == http.MethodDelete {
		if err := p.responses.DeleteResponse(ctx, id); err != nil {
			return p.storeError(err, id, h)
		}
		return jsonAnswer(map[string]any{"id": id, "object": "response", "deleted": true}, h)
	}
	if sub == "" {
		r, err := p.responses.GetResponse(ctx, id)
		if err != nil {
			return p.storeError(err, id, h)
		}
		if h == nil {
			h = make(http.Header, 2)
		}
		h.Set("Content-Type", "application/json")
		return &Answer{Status: http.StatusOK, Header: h, Body: append(append([]byte(nil), r.Response...), '\n')}
	}
	// OpenAI lists every item the response was generated from: the earlier
	// turns' inputs and outputs, then its own input.
	items, e := p.conversation(ctx, id, false)
	if e != nil {
		a := ErrorAnswer(e, h)
		if e.Status/100 == 4 {
			noRetry(a)
		}
		return a
	}
	page, e := pageItems(items, query)
	if e != nil {
		return noRetry(ErrorAnswer(e, h))
	}
	return jsonAnswer(page, h)
}

func (p *Plane) storeError(err error, id string, h http.Header) *Answer {
	if errors.Is(err, storage.ErrNotFound) {
		return noRetry(ErrorAnswer(ResponseNotFound(id), h))
	}
	p.log.Error("response store", "error", err.Error())
	return ErrorAnswer(NewError(http.StatusServiceUnavailable, TypeServer, "the response store failed; try again"), h)
}

// itemList is OpenAI's list of input items.
type itemList struct {
	Object  string            `json:"object"`
	Data    []json.RawMessage `json:"data"`
	FirstID *string           `json:"first_id"`
	LastID  *string           `json:"last_id"`
	HasMore bool              `json:"has_more"`
}

// pageItems pages items (in input order) as OpenAI's input_items does.
func pageItems(items []json.RawMessage, q url.Values) (*itemList, *Error) {
	limit := 20
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			return nil, NewError(http.StatusBadRequest, TypeInvalidRequest, "limit must be an integer from 1 to 100").WithParam("limit")
		}
		limit = n
	}
	order := q.Get("order")
	switch order {
	case "":
		order = "desc"
	case "asc", "desc":
	default:
		return nil, NewError(http.StatusBadRequest, TypeInvalidRequest, "order must be asc or desc").WithParam("order")
	}
	ids := make([]string, len(items))
	for i, it := range items {
		var v struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(it, &v)
		ids[i] = v.ID
	}
	seq := make([]int, len(items)) // indices in the asked order
	for i := range seq {
		seq[i] = i
		if order == "desc" {
			seq[i] = len(items) - 1 - i
		}
	}
	find := func(param, id string) (int, *Error) {
		for k, i := range seq {
			if ids[i] == id {
				return k, nil
			}
		}
		return 0, NewError(http.StatusBadRequest, TypeInvalidRequest, param+" names no input item of this response: "+id).WithParam(param)
	}
	lo, hi := 0, len(seq)
	if a := q.Get("after"); a != "" {
		k, e := find("after", a)
		if e != nil {
			return nil, e
		}
		lo = k + 1
	}
	if b := q.Get("before"); b != "" {
		k, e := find("before", b)
		if e != nil {
			return nil, e
		}
		hi = k
	}
	out := &itemList{Object: "list", Data: []json.RawMessage{}}
	for k := lo; k < hi && len(out.Data) < limit; k++ {
		out.Data = append(out.Data, items[seq[k]])
	}
	out.HasMore = lo+len(out.Data) < hi
	if n := len(out.Data); n > 0 {
		first, last := ids[seq[lo]], ids[seq[lo+n-1]]
		out.FirstID, out.LastID = &first, &last
	}
	return out, nil
}

func jsonAnswer(v any, h http.Header) *Answer {
	b, err := json.Marshal(v)
	if err != nil {
		return ErrorAnswer(NewError(http.StatusInternalServerError, TypeServer, "could not encode the answer"), h)
	}
	if h == nil {
		h = make(http.Header, 2)
	}
	h.Set("Content-Type", "application/json")
	return &Answer{Status: http.StatusOK, Header: h, Body: append(b, '\n')}
}

// conversation rebuilds the conversation that ends with the stored
// response id from its turns (storage.Chain): each turn's input items and
// output items, the last turn's output only withOutput. Errors are answers:
// id not stored (404 for input_items), an earlier turn gone or too many
// turns (400, x-should-retry: false), the store failing (503).
func (p *Plane) conversation(ctx context.Context, id string, withOutput bool) ([]json.RawMessage, *Error) {
	chain, err := storage.Chain(ctx, p.responses, id, storage.MaxConversationTurns)
	var broken *storage.ChainBrokenError
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, ResponseNotFound(id)
	case errors.As(err, &broken):
		return nil, NewError(http.StatusBadRequest, TypeInvalidRequest, "Response with id '"+id+"' continues a conversation whose earlier response '"+broken.Missing+
			"' is no longer stored (deleted or expired, see global.services.response_api.ttl); start again with the whole conversation in input.")
	case errors.Is(err, storage.ErrChainTooLong):
		return nil, NewError(http.StatusBadRequest, TypeInvalidRequest, fmt.Sprintf("Response with id '%s' ends a conversation of more than %d stored turns; start again with the conversation (or a summary of it) in input.", id, storage.MaxConversationTurns))
	case err != nil:
		p.log.Error("response store", "error", err.Error())
		return nil, NewError(http.StatusServiceUnavailable, TypeServer, "the response store failed; try again")
	}
	var items []json.RawMessage
	for i, t := range chain {
		turn, err := translate.TurnItems(t.Input, t.Response, withOutput || i < len(chain)-1)
		if err != nil {
			p.log.Error("response store: a stored turn cannot be read", "id", t.ID, "error", err.Error())
			return nil, NewError(http.StatusInternalServerError, TypeServer, "the stored response "+t.ID+" cannot be read")
		}
		items = append(items, turn...)
	}
	return items, nil
}

// history is the exchange's look-up of previous_response_id (nil without a
// response store): the whole conversation, or OpenAI's 400
// previous_response_not_found (param previous_response_id) when the
// response, or an earlier turn of its conversation, is not stored.
func (x *Exchange) history(ctx context.Context) translate.History {
	if x.plane.responses == nil {
		return nil
	}
	return func(id string) ([]json.RawMessage, error) {
		ctx, cancel := context.WithTimeout(ctx, storeTimeout)
		defer cancel()
		items, e := x.plane.conversation(ctx, id, true)
		if e == nil {
			return items, nil
		}
		if e.Status == http.StatusNotFound {
			e = NewError(http.StatusBadRequest, TypeInvalidRequest, "Previous response with id '"+id+"' not found.")
		}
		if e.Status == http.StatusBadRequest {
			e = e.WithParam("previous_response_id").WithCode("previous_response_not_found")
		}
		return nil, e
	}
}

// keep stores a response given to the client (the response object), once,
// when the request asked for it (store, true by default): this turn's own
// input and answer, linked to the turn it continued. A failure is logged:
// the client has its answer.
func (x *Exchange) keep(response []byte) {
	r := x.responses
	if r == nil || !r.Store || x.kept || response == nil || x.plane.responses == nil {
		return
	}
	x.kept = true
	input, err := r.StoredInput()
	if err != nil {
		x.plane.log.Error("response store: the response cannot be kept", "error", err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(x.storeCtx, storeTimeout)
	defer cancel()
	if err := x.plane.responses.PutResponse(ctx, storage.StoredResponse{ID: r.ID, PreviousID: r.PreviousResponseID, CreatedAt: time.Now(),
		Response: response, Input: input}); err != nil {
		x.plane.log.Error("response store: the response cannot be kept", "id", r.ID, "error", err.Error())
	}
}

// StoredResponsePath splits /v1/responses/{id}[/input_items] (without its
// query) into the id and "" or "input_items".
func StoredResponsePath(path string) (id, sub string) {
	rest := strings.TrimPrefix(path, "/v1/responses/")
	if id, ok := strings.CutSuffix(rest, "/input_items"); ok {
		return id, "input_items"
	}
	return rest, ""
}
