package embedding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/recipes"
)

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func TestRouterEmbedder(t *testing.T) {
	ctx := context.Background()
	router := signal.HashedEmbedder()
	m, err := FromConfig(ctx, nil, router, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "router:"+router.Method() {
		t.Errorf("Name = %q", m.Name())
	}
	want, _ := router.Embed(ctx, []string{"x"})
	if m.Dimensions() != len(want[0]) || m.Dimensions() == 0 {
		t.Errorf("Dimensions = %d, want %d", m.Dimensions(), len(want[0]))
	}
	texts := make([]string, 150) // more than one batch
	for i := range texts {
		texts[i] = fmt.Sprintf("document number %d about refunds", i)
	}
	vs, err := m.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(vs), len(texts))
	}
	direct, _ := router.Embed(ctx, texts[149:])
	for i, x := range direct[0] {
		if math.Abs(float64(x-vs[149][i])) > 1e-6 {
			t.Fatalf("vector 149 differs from the router's at %d (order lost across batches?)", i)
		}
	}
	if _, err := FromConfig(ctx, nil, nil, nil, nil); err == nil {
		t.Error("no router embedder: no error")
	}
}

// fixedEmbedder answers vectors of its own dimension, not unit length.
type fixedEmbedder struct {
	dims  int
	calls atomic.Int32
	fail  error
}

func (f *fixedEmbedder) Method() string { return "worker:emb" }
func (f *fixedEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	f.calls.Add(1)
	if f.fail != nil {
		return nil, f.fail
	}
	out := make([][]float32, len(texts))
	for i := range texts {
		v := make([]float32, f.dims)
		v[0], v[1] = 3, 4
		out[i] = v
	}
	return out, nil
}

func TestDeploymentEmbedder(t *testing.T) {
	ctx := context.Background()
	dep := &fixedEmbedder{dims: 8}
	find := func(name string) (signal.Embedder, error) {
		if name != "emb" {
			return nil, fmt.Errorf("no deployment %q serves embeddings", name)
		}
		return dep, nil
	}
	m, err := FromConfig(ctx, &recipes.StorageEmbedding{Deployment: "emb"}, signal.HashedEmbedder(), find, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "deployment:emb/worker:emb" || m.Dimensions() != 8 {
		t.Errorf("Name %q Dimensions %d", m.Name(), m.Dimensions())
	}
	vs, err := m.Embed(ctx, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(norm(vs[0])-1) > 1e-6 || math.Abs(float64(vs[0][0])-0.6) > 1e-6 {
		t.Errorf("vector not scaled to unit length: %v", vs[0])
	}
	if _, err := FromConfig(ctx, &recipes.StorageEmbedding{Deployment: "nope"}, nil, find, nil); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown deployment: %v", err)
	}
	// A configured dimension that the model does not give fails every call.
	m, err = FromConfig(ctx, &recipes.StorageEmbedding{Deployment: "emb", Dimensions: 16}, nil, find, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Embed(ctx, []string{"a"}); !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), "8 dimensions") {
		t.Errorf("wrong dimension: %v", err)
	}
	dep.fail = errors.New("replica down")
	if _, err := m.Embed(ctx, []string{"a"}); !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), "replica down") {
		t.Errorf("failing deployment: %v", err)
	}
}

// openAI is an httptest server speaking the OpenAI embeddings shape; each
// vector's first value is the input's length, so order can be checked.
type openAI struct {
	t       *testing.T
	dims    int
	key     string
	mu      sync.Mutex
	batches []int
	asked   []int // dimensions asked
	// answer, when set, replaces the whole answer.
	answer func(w http.ResponseWriter, inputs []string)
}

func (o *openAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, `{"error":{"message":"no such route"}}`, http.StatusNotFound)
		return
	}
	if o.key != "" && r.Header.Get("Authorization") != "Bearer "+o.key {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`))
		return
	}
	var req struct {
		Model          string   `json:"model"`
		Input          []string `json:"input"`
		Dimensions     int      `json:"dimensions"`
		EncodingFormat string   `json:"encoding_format"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" || req.EncodingFormat != "float" {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	o.batches = append(o.batches, len(req.Input))
	o.asked = append(o.asked, req.Dimensions)
	o.mu.Unlock()
	if o.answer != nil {
		o.answer(w, req.Input)
		return
	}
	dims := o.dims
	if req.Dimensions > 0 {
		dims = req.Dimensions
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	data := make([]item, len(req.Input))
	// Answer in reverse order: clients must order by index.
	for i, in := range req.Input {
		v := make([]float32, dims)
		v[0] = float32(len(in))
		v[1] = 1
		data[len(data)-1-i] = item{Object: "embedding", Index: i, Embedding: v}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": 1, "total_tokens": 1}})
}

func TestEndpoint(t *testing.T) {
	ctx := context.Background()
	srv := &openAI{t: t, dims: 12, key: "sk-test-123"}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	env := map[string]string{"EMB_KEY": "sk-test-123"}
	cfg := &recipes.StorageEmbedding{Endpoint: ts.URL + "/v1", Model: "text-embedding-3-small", APIKeyEnv: "EMB_KEY"}
	m, err := FromConfig(ctx, cfg, nil, nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(ts.URL, "http://")
	if m.Name() != "openai:"+host+"/text-embedding-3-small" || m.Dimensions() != 12 {
		t.Errorf("Name %q Dimensions %d", m.Name(), m.Dimensions())
	}
	texts := make([]string, 600)
	for i := range texts {
		texts[i] = strings.Repeat("x", i%50+1)
	}
	vs, err := m.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		// v = (len, 1, 0...) scaled to unit length.
		l := float64(len(texts[i]))
		if want := l / math.Sqrt(l*l+1); math.Abs(float64(v[0])-want) > 1e-5 {
			t.Fatalf("vector %d: first value %v, want %v (out of order?)", i, v[0], want)
		}
	}
	srv.mu.Lock()
	batches := srv.batches
	srv.mu.Unlock()
	if fmt.Sprint(batches) != "[1 256 256 88]" { // the probe, then 600 in batches of 256
		t.Errorf("batches %v, want [1 256 256 88]", batches)
	}

	// The full URL and a bare host name the same endpoint; a configured
	// dimension is asked for and no probe is made.
	srv.batches, srv.asked = nil, nil
	for _, u := range []string{ts.URL + "/v1/embeddings", ts.URL} {
		m, err := NewEndpoint(ctx, EndpointOptions{URL: u, Model: "m", APIKeyEnv: "EMB_KEY", Getenv: func(k string) string { return env[k] }, Dimensions: 4})
		if err != nil {
			t.Fatal(err)
		}
		vs, err := m.Embed(ctx, []string{"abc"})
		if err != nil || len(vs[0]) != 4 {
			t.Fatalf("%s: %v %v", u, vs, err)
		}
	}
	if fmt.Sprint(srv.asked) != "[4 4]" {
		t.Errorf("dimensions asked %v, want [4 4] (no probe)", srv.asked)
	}
}

func TestEndpointErrors(t *testing.T) {
	ctx := context.Background()
	srv := &openAI{dims: 6, key: "right"}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	getenv := func(v string) func(string) string { return func(string) string { return v } }

	// A wrong key: the endpoint's message, never the key.
	_, err := NewEndpoint(ctx, EndpointOptions{URL: ts.URL, Model: "m", APIKeyEnv: "K", Getenv: getenv("wrong-secret")})
	if err == nil || !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), "401") ||
		!strings.Contains(err.Error(), "Incorrect API key provided") || strings.Contains(err.Error(), "wrong-secret") {
		t.Errorf("wrong key: %v", err)
	}
	if _, err := NewEndpoint(ctx, EndpointOptions{URL: ts.URL, Model: "m", APIKeyEnv: "K", Getenv: getenv("")}); err == nil || !strings.Contains(err.Error(), "K is empty") {
		t.Errorf("unset key variable: %v", err)
	}
	if _, err := NewEndpoint(ctx, EndpointOptions{URL: "ftp://x", Model: "m"}); err == nil {
		t.Error("ftp URL accepted")
	}
	if _, err := NewEndpoint(ctx, EndpointOptions{URL: ts.URL}); err == nil {
		t.Error("no model accepted")
	}

	m, err := NewEndpoint(ctx, EndpointOptions{URL: ts.URL, Model: "m", APIKeyEnv: "K", Getenv: getenv("right")})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		answer func(w http.ResponseWriter, inputs []string)
		want   string
	}{
		"server error": {func(w http.ResponseWriter, _ []string) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"message":"The server is overloaded"}}`))
		}, "answered 503: The server is overloaded"},
		"plain text error": {func(w http.ResponseWriter, _ []string) {
			http.Error(w, "bad gateway here", http.StatusBadGateway)
		}, "answered 502: bad gateway here"},
		"wrong count": {func(w http.ResponseWriter, _ []string) {
			_, _ = w.Write([]byte(`{"data":[{"index":0,"embedding":[1,0,0,0,0,0]}]}`))
		}, "1 vectors for 2 inputs"},
		"wrong dimension": {func(w http.ResponseWriter, _ []string) {
			_, _ = w.Write([]byte(`{"data":[{"index":0,"embedding":[1,0,0]},{"index":1,"embedding":[1,0,0]}]}`))
		}, "3 dimensions, the model's is 6"},
		"repeated index": {func(w http.ResponseWriter, _ []string) {
			_, _ = w.Write([]byte(`{"data":[{"index":0,"embedding":[1,0,0,0,0,0]},{"index":0,"embedding":[1,0,0,0,0,0]}]}`))
		}, "bad or repeated index 0"},
		"base64 answer": {func(w http.ResponseWriter, _ []string) {
			_, _ = w.Write([]byte(`{"data":[{"index":0,"embedding":"AAAA"},{"index":1,"embedding":"AAAA"}]}`))
		}, "not an embeddings list"},
		"not finite": {func(w http.ResponseWriter, _ []string) {
			_, _ = w.Write([]byte(`{"data":[{"index":0,"embedding":[1,0,0,0,0,0]},{"index":1,"embedding":[1e39,0,0,0,0,0]}]}`))
		}, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv.answer = tc.answer
			defer func() { srv.answer = nil }()
			_, err := m.Embed(ctx, []string{"a", "b"})
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrModel) {
				t.Errorf("%v does not wrap ErrModel", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestEndpointTimeout(t *testing.T) {
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer ts.Close()
	defer close(release)
	start := time.Now()
	_, err := NewEndpoint(context.Background(), EndpointOptions{URL: ts.URL, Model: "m", TimeoutMS: 100})
	if err == nil || !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), "timeout_ms") || !strings.Contains(err.Error(), "dimensions") {
		t.Errorf("timeout: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	// The caller's context ending is the caller's error, not the model's.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m, err := NewEndpoint(context.Background(), EndpointOptions{URL: ts.URL, Model: "m", Dimensions: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Embed(ctx, []string{"a"}); !errors.Is(err, context.Canceled) || errors.Is(err, ErrModel) {
		t.Errorf("cancelled: %v", err)
	}
}
