package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/junction-router/junction/internal/inference/worker"
)

var (
	contractOnce   sync.Once
	contractRouter routers.Router
	contractErr    error
)

// contract loads and validates the served OpenAPI document once.
func contract(t testing.TB) routers.Router {
	contractOnce.Do(func() {
		doc, err := openapi3.NewLoader().LoadFromData(worker.OpenAPI())
		if err != nil {
			contractErr = err
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			contractErr = err
			return
		}
		doc.Servers = nil // match the test server's address
		contractRouter, contractErr = legacy.NewRouter(doc)
	})
	if contractErr != nil {
		t.Fatalf("openapi.yaml: %v", contractErr)
	}
	return contractRouter
}

// harness is a running worker over real HTTP.
type harness struct {
	t   testing.TB
	srv *worker.Server
	url string
}

func start(t testing.TB, models map[string]worker.Model, opt worker.Options) *harness {
	t.Helper()
	var specs []worker.Spec
	for name := range models {
		specs = append(specs, worker.Spec{Model: name})
	}
	load := func(_ context.Context, s worker.Spec) (worker.Model, error) { return models[s.Model], nil }
	return startWith(t, specs, load, opt, true)
}

func startWith(t testing.TB, specs []worker.Spec, load worker.Loader, opt worker.Options, settle bool) *harness {
	t.Helper()
	srv, err := worker.New(specs, load, opt)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		_ = srv.Close()
	})
	if settle {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if st := srv.WaitSettled(ctx); st != worker.StateReady {
			t.Fatalf("worker did not become ready: %s", st)
		}
	}
	return &harness{t: t, srv: srv, url: hs.URL}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("answer is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

// do sends a request and checks the answer against the OpenAPI document.
func (h *harness) do(method, path string, body any) reply {
	h.t.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			h.t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, h.url+path, bytes.NewReader(raw))
	if err != nil {
		h.t.Fatal(err)
	}
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	r := reply{resp.StatusCode, resp.Header, out}
	h.validate(req, raw, r)
	return r
}

func (h *harness) validate(req *http.Request, raw []byte, r reply) {
	h.t.Helper()
	router := contract(h.t)
	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(raw))
	route, params, err := router.FindRoute(vreq)
	if err != nil {
		if r.status == http.StatusNotFound || r.status == http.StatusMethodNotAllowed {
			return
		}
		h.t.Fatalf("%s %s is not in openapi.yaml: %v", req.Method, req.URL.Path, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
		Options: &openapi3filter.Options{ExcludeRequestBody: true}}
	rin := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: r.status, Header: r.header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	rin.SetBodyBytes(r.body)
	if err := openapi3filter.ValidateResponse(context.Background(), rin); err != nil {
		h.t.Fatalf("%s %s answered %d outside openapi.yaml: %v\n%s", req.Method, req.URL.Path, r.status, err, r.body)
	}
	if strings.HasPrefix(req.URL.Path, "/v1/") && req.Method == http.MethodPost {
		checkServerTiming(h.t, r.header.Get("Server-Timing"))
	}
}

// checkServerTiming requires every phase of the spec with a duration.
func checkServerTiming(t testing.TB, v string) {
	t.Helper()
	for _, p := range []string{"parse", "tokenize", "queue", "forward", "post", "serialize", "total"} {
		if !strings.Contains(v, p+";dur=") {
			t.Fatalf("Server-Timing %q lacks phase %s", v, p)
		}
	}
}

func (h *harness) post(path string, body any) reply { return h.do(http.MethodPost, path, body) }

// validRequest checks a request body against the document (for the examples
// the tests send).
func validRequest(t testing.TB, path string, body any) error {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, "http://x"+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	route, params, err := contract(t).FindRoute(req)
	if err != nil {
		return err
	}
	return openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route})
}
