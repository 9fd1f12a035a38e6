// Package nativeapi is the router's native API (global.services.native_api,
// port 8899 by default): it publishes the question answering of model
// deployments, POST /v1/decisions and POST /v1/systemone (the same
// endpoint) and GET /v1/systemone/models, under public model names, behind
// client keys that grant models.
//
// A deployment's public name is its deployment name; a deployment whose
// worker serves several models publishes each as "<deployment>/<model>".
// Requests pass through to a ready replica (internal/inference/worker/client) with
// the model renamed to what the worker serves, and answers come back with
// the public name; a worker's refusal is answered with its status and code.
// The workers' classify, embeddings, rerank and bundle endpoints are never
// published. The package must not start or health-check workers and must
// not log request text or keys.
package nativeapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/junction-router/junction/internal/inference/worker/client"
)

// Deployment is one published deployment.
type Deployment struct {
	// Name is the public model name (the deployment's name).
	Name string
	Pool *client.Pool
}

// Key is one client key and the deployments it may call.
type Key struct {
	// Name identifies the key in configuration errors; never the value.
	Name  string
	Token string
	// Models are the deployment names granted; "*" grants every one.
	Models []string
}

// Defaults of Options.
const (
	DefaultMaxBodyBytes = 8 << 20
	DefaultTimeout      = 30 * time.Second
)

// Options configure the handler.
type Options struct {
	Deployments []Deployment
	// Keys, when non-empty, are required (Authorization: Bearer); without
	// keys every caller may call every published deployment.
	Keys []Key
	// MaxBodyBytes bounds a request body (DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Timeout bounds one request, the worker's answer included
	// (DefaultTimeout); the client's own cancellation ends it sooner.
	Timeout time.Duration
}

type handler struct {
	deps    map[string]*Deployment
	order   []string
	keys    []key
	max     int64
	timeout time.Duration
	mux     *http.ServeMux
}

type key struct {
	digest [sha256.Size]byte
	all    bool
	grants map[string]bool
}

// New returns the native API handler.
func New(o Options) (http.Handler, error) {
	h := &handler{deps: map[string]*Deployment{}, max: o.MaxBodyBytes, timeout: o.Timeout}
	if h.max <= 0 {
		h.max = DefaultMaxBodyBytes
	}
	if h.timeout <= 0 {
		h.timeout = DefaultTimeout
	}
	for i := range o.Deployments {
		d := &o.Deployments[i]
		if d.Name == "" || d.Pool == nil {
			return nil, fmt.Errorf("native API: deployment %d needs a name and a pool", i)
		}
		if _, dup := h.deps[d.Name]; dup {
			return nil, fmt.Errorf("native API: deployment %q is published twice", d.Name)
		}
		h.deps[d.Name] = d
		h.order = append(h.order, d.Name)
	}
	for _, k := range o.Keys {
		if k.Token == "" {
			return nil, fmt.Errorf("native API: key %q is empty", k.Name)
		}
		kk := key{digest: sha256.Sum256([]byte(k.Token)), grants: map[string]bool{}}
		for _, m := range k.Models {
			if m == "*" {
				kk.all = true
			} else if _, ok := h.deps[m]; !ok {
				return nil, fmt.Errorf("native API: key %q grants %q, which is not published", k.Name, m)
			}
			kk.grants[m] = true
		}
		h.keys = append(h.keys, kk)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/decisions", h.decisions)
	mux.HandleFunc("POST /v1/systemone", h.decisions)
	mux.HandleFunc("GET /v1/systemone/models", h.models)
	for _, p := range []string{"/v1/classify", "/v1/embeddings", "/v1/rerank", "/v1/bundle"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotFound, "not_found", r.URL.Path+" is a worker endpoint and is not published by the router; the native API answers POST /v1/decisions, POST /v1/systemone and GET /v1/systemone/models")
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint; the native API answers POST /v1/decisions, POST /v1/systemone and GET /v1/systemone/models")
	})
	h.mux = mux
	return h, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k, ok := h.authorize(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="junction native API"`)
		writeError(w, http.StatusUnauthorized, "unauthorized", "missing or unknown API key: send Authorization: Bearer <key> with a key of global.services.native_api.api_keys")
		return
	}
	h.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyCtx{}, k)))
}

type keyCtx struct{}

// authorize finds the caller's key (nil, true when no key is configured).
// Every key is compared, in constant time over digests, so timing reveals
// neither a key nor which one matched.
func (h *handler) authorize(r *http.Request) (*key, bool) {
	if len(h.keys) == 0 {
		return nil, true
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return nil, false
	}
	d := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	var found *key
	for i := range h.keys {
		if subtle.ConstantTimeCompare(d[:], h.keys[i].digest[:]) == 1 {
			found = &h.keys[i]
		}
	}
	return found, found != nil
}

// granted reports whether the caller may call deployment name.
func granted(r *http.Request, name string) bool {
	k, _ := r.Context().Value(keyCtx{}).(*key)
	return k == nil || k.all || k.grants[name]
}

// resolve maps a public model name to its deployment and the worker model
// (head) it names: "<deployment>" or "<deployment>/<model>".
func (h *handler) resolve(model string) (*Deployment, string) {
	if d, ok := h.deps[model]; ok {
		return d, ""
	}
	if dep, head, ok := strings.Cut(model, "/"); ok && head != "" {
		if d, ok := h.deps[dep]; ok {
			return d, head
		}
	}
	return nil, ""
}

func (h *handler) visible(r *http.Request) []string {
	var out []string
	for _, n := range h.order {
		if granted(r, n) {
			out = append(out, n)
		}
	}
	return out
}

func (h *handler) decisions(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.max))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("the request body is larger than %d bytes (global.services.native_api.max_body_bytes)", h.max))
			return
		}
		writeError(w, http.StatusBadRequest, "invalid_request", "reading the request body: "+err.Error())
		return
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(data, &body); err != nil || body == nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body must be a JSON object with model, state and questions")
		return
	}
	raw, ok := body["model"]
	var model string
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_request", "model is required: name a published model (GET /v1/systemone/models lists those this key may call)")
		return
	}
	if err := json.Unmarshal(raw, &model); err != nil || model == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "model must be a non-empty string")
		return
	}
	d, head := h.resolve(model)
	if d == nil || !granted(r, d.Name) {
		// A model the key may not call looks exactly like one that does
		// not exist: grants are not to be probed.
		writeError(w, http.StatusNotFound, "model_not_found", fmt.Sprintf("model %q is not published to this key; it may call %s", model, list(h.visible(r))))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	ans, err := d.Pool.Forward(ctx, r.URL.Path, head, body)
	if err != nil {
		h.fail(w, d.Name, model, err)
		return
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(ans, &out); err != nil || out == nil {
		writeError(w, http.StatusBadGateway, "worker_error", fmt.Sprintf("deployment %q answered with something other than a JSON object", d.Name))
		return
	}
	out["model"], _ = json.Marshal(model)
	writeJSON(w, http.StatusOK, out)
}

// fail answers a failed call the way the worker answered it, or with what
// went wrong on the way.
func (h *handler) fail(w http.ResponseWriter, dep, model string, err error) {
	var e *client.Error
	if !errors.As(err, &e) {
		writeError(w, http.StatusBadGateway, "worker_error", fmt.Sprintf("deployment %q: %v", dep, err))
		return
	}
	switch {
	case e.Code == "model_not_found":
		writeError(w, http.StatusNotFound, e.Code, fmt.Sprintf("deployment %q serves no model %q (a deployment serving several models publishes each as <deployment>/<model>); GET /v1/systemone/models lists the published names", dep, model))
	case e.Status >= 400 && e.Status < 600:
		code := e.Code
		if code == "" {
			code = "worker_error"
		}
		writeError(w, e.Status, code, e.Err.Error())
	case e.Outcome == client.OutcomeUnavailable:
		writeError(w, http.StatusServiceUnavailable, "not_ready", fmt.Sprintf("deployment %q has no ready replica (the worker is starting or restarting); retry shortly", dep))
	case e.Outcome == client.OutcomeTimeout:
		writeError(w, http.StatusGatewayTimeout, "timeout", fmt.Sprintf("deployment %q did not answer in time", dep))
	default:
		writeError(w, http.StatusBadGateway, "worker_error", e.Error())
	}
}

func (h *handler) models(w http.ResponseWriter, r *http.Request) {
	data := []map[string]any{}
	for _, name := range h.visible(r) {
		d := h.deps[name]
		ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
		entries, served, err := d.Pool.Models(ctx)
		cancel()
		if err != nil {
			data = append(data, map[string]any{"id": name, "object": "model", "deployment": name, "status": "unavailable"})
			continue
		}
		for _, e := range entries {
			id := name
			switch {
			case served == "":
				id = name + "/" + e.ID
			case e.ID != served:
				continue
			}
			var m map[string]any
			if json.Unmarshal(e.Raw, &m) != nil {
				continue
			}
			// Where the worker's files live is the operator's business.
			delete(m, "source")
			m["id"], m["deployment"], m["served_model"] = id, name, e.ID
			data = append(data, m)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(slices.Clone(names), ", ")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"encoding the answer failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
