package dataplane

import (
	"context"
	"encoding/json"
	"errors"
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
	r, err := p.responses.GetResponse(ctx, id)
	if err != nil {
		return p.storeError(err, id, h)
	}
	if sub == "" {
		if h == nil {
			h = make(http.Header, 2)
		}
		h.Set("Content-Type", "application/json")
		return &Answer{Status: http.StatusOK, Header: h, Body: append(append([]byte(nil), r.Response...), '\n')}
	}
	var items []json.RawMessage
	if err := json.Unmarshal(r.Input, &items); err != nil {
		return ErrorAnswer(NewError(http.StatusInternalServerError, TypeServer, "the stored input items of "+id+" cannot be read"), h)
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

// history is the exchange's look-up of previous_response_id (nil without a
// response store).
func (x *Exchange) history(ctx context.Context) translate.History {
	if x.plane.responses == nil {
		return nil
	}
	return func(id string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, storeTimeout)
		defer cancel()
		r, err := x.plane.responses.GetResponse(ctx, id)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, NewError(http.StatusNotFound, TypeInvalidRequest, "Previous response with id '"+id+"' not found.").
				WithParam("previous_response_id").WithCode("previous_response_not_found")
		}
		if err != nil {
			x.plane.log.Error("response store", "error", err.Error())
			return nil, NewError(http.StatusServiceUnavailable, TypeServer, "the response store failed reading previous_response_id; try again")
		}
		return r.Conversation, nil
	}
}

// keep stores a response given to the client (the response object), once,
// when the request asked for it (store, true by default). A failure is
// logged: the client has its answer.
func (x *Exchange) keep(response []byte) {
	r := x.responses
	if r == nil || !r.Store || x.kept || response == nil || x.plane.responses == nil {
		return
	}
	x.kept = true
	input, conv, err := r.Stored(response)
	if err != nil {
		x.plane.log.Error("response store: the response cannot be kept", "error", err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(x.storeCtx, storeTimeout)
	defer cancel()
	if err := x.plane.responses.PutResponse(ctx, storage.StoredResponse{ID: r.ID, CreatedAt: time.Now(),
		Response: response, Input: input, Conversation: conv}); err != nil {
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
