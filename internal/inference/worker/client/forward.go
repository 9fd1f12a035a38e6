package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Forward POSTs a request body (a JSON object) to path on a ready replica,
// with its "model" member set to head, or when head is empty to the model
// that replica serves (left as it is when the replica names none), and
// returns the worker's answer as sent. It is how the router's native API passes
// question-answering requests through; a worker's refusal comes back as an
// *Error carrying its status, code and message, so a caller can answer the
// same.
func (p *Pool) Forward(ctx context.Context, path, head string, body map[string]json.RawMessage) (json.RawMessage, error) {
	var out json.RawMessage
	build := func(r *replica) any {
		b := make(map[string]json.RawMessage, len(body)+1)
		for k, v := range body {
			b[k] = v
		}
		model := head
		if model == "" {
			model = r.Model
		}
		if model != "" {
			b["model"], _ = json.Marshal(model)
		}
		return b
	}
	err := p.call(ctx, path, build, &out, func() error { return nil })
	return out, err
}

// ModelEntry is one model of a worker's GET /v1/models, as the worker sent
// it, with its id.
type ModelEntry struct {
	ID  string
	Raw json.RawMessage
}

// Models returns what a ready replica's GET /v1/models lists (labels, task,
// surfaces, limits of each model), and the model that replica serves for
// requests that name none ("" when it serves several).
func (p *Pool) Models(ctx context.Context) (entries []ModelEntry, served string, err error) {
	r := p.pick(nil)
	if r == nil {
		return nil, "", &Error{Deployment: p.deployment, Outcome: OutcomeUnavailable,
			Err: errors.New("no replica is ready (the worker is starting or restarting; see /startup-status)")}
	}
	fail := func(err error) error {
		return &Error{Deployment: p.deployment, Replica: r.Name, Outcome: OutcomeFailed, Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.BaseURL+"/v1/models", nil)
	if err != nil {
		return nil, "", fail(err)
	}
	resp, err := r.HTTP.Do(req)
	if err != nil {
		return nil, "", &Error{Deployment: p.deployment, Replica: r.Name, Outcome: OutcomeUnavailable, Err: fmt.Errorf("cannot reach the worker: %w", err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, p.maxBytes+1))
	if err != nil {
		return nil, "", fail(fmt.Errorf("reading the model list: %w", err))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", &Error{Deployment: p.deployment, Replica: r.Name, Outcome: OutcomeFailed, Status: resp.StatusCode, Err: errors.New("GET /v1/models failed")}
	}
	var list struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, "", fail(fmt.Errorf("malformed model list: %w", err))
	}
	for _, m := range list.Data {
		var id struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(m, &id); err != nil || id.ID == "" {
			return nil, "", fail(errors.New("malformed model list: an entry has no id"))
		}
		entries = append(entries, ModelEntry{ID: id.ID, Raw: m})
	}
	return entries, r.Model, nil
}
