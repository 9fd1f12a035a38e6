package mgmt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/junction-router/junction/internal/plugin/native"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/recipes"
)

// env is a management API over a real HTTP server with a configuration file
// in a temporary folder. Every response is validated against the OpenAPI
// document the server itself serves.
type env struct {
	t       testing.TB
	path    string
	cfg     *mgmt.Config
	api     *mgmt.Server
	srv     *httptest.Server
	startup *mgmt.Startup
	router  routers.Router
	token   string
}

// compiler shares model bindings and the plugin runtime across generations,
// as serve does.
func init() {
	// The API browser is HTML; the document says text/html with a string schema.
	openapi3filter.RegisterBodyDecoder("text/html", func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		b, err := io.ReadAll(body)
		return string(b), err
	})
}

var (
	modelsOnce   sync.Once
	sharedModels signal.Models
	modelsErr    error
)

func compiler(t testing.TB) mgmt.CompileFunc {
	plugins := native.Stage()
	modelsOnce.Do(func() {
		sharedModels.Domain, modelsErr = signal.LexicalDomain()
		if modelsErr == nil {
			sharedModels.Jailbreak, modelsErr = signal.LexicalJailbreak()
		}
		sharedModels.Embedder = signal.HashedEmbedder()
	})
	if modelsErr != nil {
		t.Fatal(modelsErr)
	}
	models := sharedModels
	return func(_ context.Context, doc *recipes.Document, hash string) (*engine.Generation, error) {
		return engine.Compile(doc, hash, engine.Options{Plugins: plugins, Models: models})
	}
}

func copyBase(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("testdata/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return writeConfig(t, string(b))
}

func writeConfig(t testing.TB, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "junction.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func newEnv(t testing.TB, path string) *env {
	t.Helper()
	return newEnvWith(t, path, compiler(t))
}

func newEnvWith(t testing.TB, path string, compile mgmt.CompileFunc) *env {
	t.Helper()
	return newEnvOpts(t, path, compile, nil)
}

// newEnvOpts is newEnvWith with a hook that completes the server's options.
func newEnvOpts(t testing.TB, path string, compile mgmt.CompileFunc, with func(*mgmt.Options)) *env {
	t.Helper()
	cfg, err := mgmt.OpenConfig(context.Background(), mgmt.ConfigOptions{Path: path, Compile: compile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cfg.WaitActivations)
	st := mgmt.NewStartup()
	opts := mgmt.Options{Config: cfg, Startup: st, Version: "test"}
	if with != nil {
		with(&opts)
	}
	api, err := mgmt.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	// The served document, loaded as a client would.
	resp, err := http.Get(srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var doc *openapi3.T
	if resp.StatusCode == http.StatusOK {
		doc, err = openapi3.NewLoader().LoadFromData(raw)
		if err != nil {
			t.Fatal(err)
		}
	} else {
		doc = api.OpenAPI() // bearer mode: the test client fetches it with a token later
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the served OpenAPI document is invalid: %v", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, path: path, cfg: cfg, api: api, srv: srv, startup: st, router: router}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t testing.TB) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("answer is not a JSON object: %v: %s", err, r.body)
	}
	return v
}

func (r reply) errCode(t testing.TB) string {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// call sends a request; body is a string (sent as is) or a value (JSON).
func (e *env) call(method, path string, body any, hdr ...string) reply {
	e.t.Helper()
	var raw []byte
	contentType := "application/json"
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
		if !strings.HasPrefix(strings.TrimSpace(b), "{") {
			contentType = "application/yaml"
		}
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		raw = j
	}
	if body == nil {
		contentType = ""
	}
	return e.send(method, path, contentType, raw, hdr...)
}

// send sends raw with a Content-Type (none when empty) and validates the
// answer against the OpenAPI document.
func (e *env) send(method, path, contentType string, raw []byte, hdr ...string) reply {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(raw))
	if err != nil {
		e.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	e.validate(req, raw, resp, b)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// validate checks the answer against the OpenAPI document: the status must
// be documented and the body must match its schema.
func (e *env) validate(req *http.Request, reqBody []byte, resp *http.Response, body []byte) {
	e.t.Helper()
	route, params, err := e.router.FindRoute(req)
	if err != nil {
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			return // an undocumented path answered 404/405: nothing to validate
		}
		e.t.Fatalf("%s %s is not in the OpenAPI document: %v", req.Method, req.URL.Path, err)
	}
	// A request the server accepted must match the document's request schema.
	if resp.StatusCode < 300 {
		r2 := req.Clone(context.Background())
		r2.Body = io.NopCloser(bytes.NewReader(reqBody))
		rin := &openapi3filter.RequestValidationInput{Request: r2, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		if err := openapi3filter.ValidateRequest(context.Background(), rin); err != nil {
			e.t.Fatalf("%s %s was accepted but does not match the OpenAPI request schema: %v", req.Method, req.URL.Path, err)
		}
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status:  resp.StatusCode,
		Header:  resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		e.t.Fatalf("%s %s answered %d, which does not match the OpenAPI document: %v\nbody: %.600s", req.Method, req.URL.Path, resp.StatusCode, err, body)
	}
}

func (e *env) etag() string {
	e.t.Helper()
	r := e.call("GET", "/api/v1/config", nil)
	if r.status != 200 {
		e.t.Fatalf("GET config: %d %s", r.status, r.body)
	}
	return r.header.Get("ETag")
}

func must(t testing.TB, r reply, status int) reply {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	return r
}
