//go:build !race

// The module tests compile every built-in module with wazero, which takes
// seconds per module natively and about thirty under the race detector; so
// they are left out of race builds, and make test runs this package once more
// without -race.

package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/hostapi/plugintest"
	"github.com/junction-router/junction/internal/memstore"
	"github.com/junction-router/junction/plugins/builtin"
)

// backends are real implementations of the host's backends, small enough to
// reason about: a bag-of-words embedder, one in-memory vector store and an
// in-memory cache with similarity lookups, and a word-count tokenizer.
type backends struct {
	mu      sync.Mutex
	entries map[string]cacheEntry // namespace + "\x00" + key
	docs    []doc
	// retrieves are the retrieve queries the host passed on.
	retrieves []hostapi.RetrieveQuery
}

type cacheEntry struct {
	value     []byte
	embedding []float32
	expires   time.Time
}

type doc struct{ id, text string }

var vocab = []string{"weather", "email", "web", "search", "rain", "forecast", "city", "refund", "days", "capital", "france", "paris", "shipping"}

func (b *backends) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, s := range texts {
		v := make([]float32, len(vocab))
		for j, w := range vocab {
			v[j] = float32(strings.Count(strings.ToLower(s), w))
		}
		out[i] = v
	}
	return out, nil
}

func cosine(a, b []float32) float32 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i] * b[i])
		na += float64(a[i] * a[i])
		nb += float64(b[i] * b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return float32(dot / math.Sqrt(na*nb))
}

func (b *backends) Search(ctx context.Context, store string, q []float32, k int) ([]abi.VectorHit, error) {
	if store == "offline" {
		return nil, errors.New("store offline")
	}
	if store != "kb" {
		return nil, hostapi.ErrNoSuchStore
	}
	var hits []abi.VectorHit
	for _, d := range b.docs {
		v, _ := b.Embed(ctx, []string{d.text})
		hits = append(hits, abi.VectorHit{ID: d.id, Score: cosine(q, v[0]), Payload: []byte(d.text)})
	}
	slices.SortStableFunc(hits, func(x, y abi.VectorHit) int {
		switch {
		case x.Score > y.Score:
			return -1
		case x.Score < y.Score:
			return 1
		}
		return 0
	})
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits, nil
}

// Retrieve searches by text the way the router's retriever does: the
// payloads are JSON with the chunk's text and its file's name.
func (b *backends) Retrieve(ctx context.Context, q hostapi.RetrieveQuery) ([]abi.VectorHit, error) {
	vec, _ := b.Embed(ctx, []string{q.Text})
	k := q.K
	if k == 0 {
		k = 5
	}
	hits, err := b.Search(ctx, q.Source, vec[0], k)
	if err != nil {
		return nil, err
	}
	var out []abi.VectorHit
	for _, h := range hits {
		if q.HasMinScore && h.Score < q.MinScore {
			continue
		}
		p, _ := json.Marshal(map[string]any{"text": string(h.Payload), "source": h.ID, "file_id": "file_" + h.ID, "vector_store_id": q.Source, "chunk_index": 0, "attributes": map[string]any{}})
		out = append(out, abi.VectorHit{ID: h.ID, Score: h.Score, Payload: p})
	}
	b.mu.Lock()
	b.retrieves = append(b.retrieves, q)
	b.mu.Unlock()
	return out, nil
}

func (b *backends) Lookup(_ context.Context, ns, key string, emb []float32, threshold float32) (abi.CacheEntry, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.entries[ns+"\x00"+key]; ok && key != "" {
		return abi.CacheEntry{Similarity: 1, Value: e.value}, true, nil
	}
	if len(emb) == 0 {
		return abi.CacheEntry{}, false, nil
	}
	var best abi.CacheEntry
	found := false
	for k, e := range b.entries {
		if !strings.HasPrefix(k, ns+"\x00") || len(e.embedding) == 0 {
			continue
		}
		if s := cosine(emb, e.embedding); s >= threshold && s > best.Similarity {
			best, found = abi.CacheEntry{Similarity: s, Value: e.value}, true
		}
	}
	return best, found, nil
}

func (b *backends) Store(_ context.Context, ns, key string, value []byte, ttl time.Duration, emb []float32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.entries == nil {
		b.entries = map[string]cacheEntry{}
	}
	b.entries[ns+"\x00"+key] = cacheEntry{value: append([]byte(nil), value...), embedding: emb, expires: time.Now().Add(ttl)}
	return nil
}

func (b *backends) CountTokens(s string) int { return len(strings.Fields(s)) }

// One host serves every test: compiling the modules is what costs, so they
// are loaded once, in parallel.
var (
	sharedMemory = memstore.NewMemory(shared)
	shared       = &backends{docs: []doc{{"policy.md", "Refunds are accepted within 30 days."}, {"ship.md", "Shipping takes 5 days."}}}
	hostOnce     sync.Once
	theHost      *hostapi.Host
	theModules   map[string]*hostapi.Module
	hostErr      error
)

func newHost(t testing.TB) *hostapi.Host {
	t.Helper()
	hostOnce.Do(func() {
		be := shared
		theHost, hostErr = hostapi.New(context.Background(), hostapi.Config{
			// Compiled modules persist across test runs on this machine.
			CacheDir: plugintest.CacheDir(),
			Backends: hostapi.Backends{Embedder: be, Vectors: be, Cache: be, Tokens: be, Retriever: be, Memory: sharedMemory},
		})
		if hostErr != nil {
			return
		}
		theModules = map[string]*hostapi.Module{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, typ := range builtin.Types() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wasm, err := builtin.Module(typ)
				var m *hostapi.Module
				if err == nil {
					// Serve loads the built-ins trusted: test what it runs.
					m, err = theHost.LoadTrusted(context.Background(), wasm)
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					hostErr = fmt.Errorf("loading %s: %w", typ, err)
					return
				}
				theModules[typ] = m
			}()
		}
		wg.Wait()
	})
	if hostErr != nil {
		t.Fatal(hostErr)
	}
	return theHost
}

func module(t testing.TB, h *hostapi.Host, typ string) *hostapi.Module {
	t.Helper()
	m, ok := theModules[typ]
	if !ok {
		t.Fatalf("no module for %s", typ)
	}
	return m
}

func bind(t testing.TB, h *hostapi.Host, typ, config string) *hostapi.Binding {
	t.Helper()
	b, err := h.Bind(context.Background(), module(t, h, typ), []byte(config), hostapi.Limits{})
	if err != nil {
		t.Fatalf("binding %s %s: %v", typ, config, err)
	}
	return b
}

// request builds a request record from a body, with the flattened messages
// the host gives.
func request(t testing.TB, mode abi.Mode, body string, headers ...abi.Header) *abi.Request {
	t.Helper()
	var b struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		t.Fatal(err)
	}
	req := &abi.Request{Phase: abi.PhaseRequest, Mode: mode, Decision: "d", Model: "small", Body: []byte(body), Headers: headers}
	for _, m := range b.Messages {
		var s string
		_ = json.Unmarshal(m.Content, &s)
		req.Messages = append(req.Messages, abi.Message{Role: m.Role, Content: s})
	}
	return req
}

func call(t testing.TB, b *hostapi.Binding, req *abi.Request) hostapi.CallResult {
	t.Helper()
	res, err := b.Call(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed {
		t.Fatalf("the plugin failed: %s", res.Error)
	}
	return res
}

// applied is a request after a result's mutations, the way the host applies
// them: the body's fields (canonical JSON) and the headers.
type applied struct {
	Body   string
	Header http.Header
}

func apply(t testing.TB, body string, header http.Header, r abi.Result) (applied, error) {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &fields); err != nil {
		t.Fatal(err)
	}
	var msgs []json.RawMessage
	_ = json.Unmarshal(fields["messages"], &msgs)
	h := header.Clone()
	for i, m := range r.Mutations {
		n := int(m.Index)
		switch m.Op {
		case abi.OpMessageInsert:
			if n > len(msgs) {
				return applied{}, fmt.Errorf("mutation %d inserts at %d of %d", i, n, len(msgs))
			}
			msgs = slices.Insert(msgs, n, json.RawMessage(m.Value))
		case abi.OpMessageReplace:
			if n >= len(msgs) {
				return applied{}, fmt.Errorf("mutation %d replaces %d of %d", i, n, len(msgs))
			}
			msgs[n] = json.RawMessage(m.Value)
		case abi.OpMessageRemove:
			if n >= len(msgs) {
				return applied{}, fmt.Errorf("mutation %d removes %d of %d", i, n, len(msgs))
			}
			msgs = slices.Delete(msgs, n, n+1)
		case abi.OpFieldSet:
			fields[m.Name] = json.RawMessage(m.Value)
		case abi.OpFieldRemove:
			delete(fields, m.Name)
		case abi.OpHeaderAdd:
			if h == nil {
				h = http.Header{}
			}
			h.Add(m.Name, string(m.Value))
		case abi.OpHeaderSet:
			if h == nil {
				h = http.Header{}
			}
			h.Set(m.Name, string(m.Value))
		case abi.OpHeaderRemove:
			h.Del(m.Name)
		case abi.OpToolRemove:
			var tools []json.RawMessage
			_ = json.Unmarshal(fields["tools"], &tools)
			tools = slices.DeleteFunc(tools, func(raw json.RawMessage) bool {
				var x struct {
					Function struct{ Name string } `json:"function"`
				}
				_ = json.Unmarshal(raw, &x)
				return x.Function.Name == m.Name
			})
			if len(tools) == 0 {
				delete(fields, "tools")
			} else {
				fields["tools"], _ = json.Marshal(tools)
			}
		default:
			return applied{}, fmt.Errorf("mutation %d: op %s not expected here", i, abi.OpName(m.Op))
		}
	}
	if _, ok := fields["messages"]; ok || len(msgs) > 0 {
		if msgs == nil {
			msgs = []json.RawMessage{}
		}
		fields["messages"], _ = json.Marshal(msgs)
	}
	var v any
	raw, _ := json.Marshal(fields)
	_ = json.Unmarshal(raw, &v)
	canon, _ := json.Marshal(v)
	return applied{Body: string(canon), Header: h}, nil
}

func TestEveryBuiltinLoads(t *testing.T) {
	h := newHost(t)
	kinds := map[string]bool{abi.KindRead: true, abi.KindPreview: true, abi.KindProbe: true, abi.KindMutation: true}
	for _, typ := range builtin.Types() {
		d := module(t, h, typ).Descriptor()
		if d.Type != typ || d.Version == "" || len(d.Schema) == 0 || len(d.Operations) == 0 {
			t.Errorf("%s: descriptor %+v", typ, d)
		}
		for _, op := range d.Operations {
			if !kinds[op.Kind] || op.Name == "" {
				t.Errorf("%s: operation %+v", typ, op)
			}
		}
		var schema map[string]any
		if err := json.Unmarshal(d.Schema, &schema); err != nil || schema["$schema"] != "https://json-schema.org/draft/2020-12/schema" || schema["additionalProperties"] != false {
			t.Errorf("%s: the schema is not a closed draft 2020-12 object: %v", typ, err)
		}
	}
	// The response phase is what the descriptor lists, not what the module
	// exports: the SDK exports the entry point from every module.
	for _, typ := range builtin.Types() {
		want := typ == "response_cache" || typ == "response_jailbreak" || typ == "hallucination"
		if got := module(t, h, typ).HasResponsePhase(); got != want {
			t.Errorf("%s: HasResponsePhase %v, want %v", typ, got, want)
		}
	}
}

// The plugin references of ../shared/spec/example-config.yaml bind.
func TestExampleConfigurationsBind(t *testing.T) {
	h := newHost(t)
	for typ, config := range map[string]string{
		"fast_response":   `{"message":"I can't help with that request."}`,
		"system_prompt":   `{"system_prompt":"You are a careful mathematician. Show your reasoning.","mode":"insert"}`,
		"header_mutation": `{"add":[{"name":"x-route-family","value":"code"}]}`,
		"request_params":  `{"max_tokens_limit":4096,"blocked_params":["logit_bias"]}`,
		"response_cache":  `{"mode":"exact_then_semantic","semantic":{"similarity_threshold":0.92},"ttl_seconds":600}`,
	} {
		bind(t, h, typ, config)
	}
}

func TestSchemaRefusesWhatTheGuestRefuses(t *testing.T) {
	h := newHost(t)
	for typ, config := range map[string]string{
		"system_prompt":       `{"system_prompt":"x","prompt_mode":"insert"}`,
		"header_mutation":     `{"add":[{"name":"x a","value":"1"}]}`,
		"request_params":      `{"max_tokens_limit":0}`,
		"fast_response":       `{}`,
		"tools":               `{"semantic":{"top_k":0}}`,
		"rag":                 `{"store":"kb","on_failure":"explode"}`,
		"response_cache":      `{"mode":"fuzzy"}`,
		"context_compression": `{"keep_recent_turns":2}`,
		"memory":              `{"top_k":0.5}`,
		"tool_selection":      `{"top_k":0}`,
		"response_jailbreak":  `{"action":"drop"}`,
		"hallucination":       `{"max_claims":100}`,
	} {
		if _, err := h.Bind(context.Background(), module(t, h, typ), []byte(config), hostapi.Limits{}); err == nil {
			t.Errorf("%s accepted %s", typ, config)
		}
	}
}

func TestModesAndBackendCalls(t *testing.T) {
	h := newHost(t)
	b := bind(t, h, "rag", `{"store":"kb","top_k":1}`)
	body := `{"model":"m","messages":[{"role":"user","content":"how many days for a refund?"}]}`

	// Preview: no backend call; supplied_context is injected and removed.
	res := call(t, b, request(t, abi.ModePreview, `{"model":"m","supplied_context":["Refunds: 30 days."],"messages":[{"role":"user","content":"refund?"}]}`))
	if res.BackendCalls != 0 || res.Persisted || res.Skipped {
		t.Fatalf("preview: %+v", res)
	}
	got, err := apply(t, `{"model":"m","supplied_context":["x"],"messages":[{"role":"user","content":"refund?"}]}`, nil, res.Result)
	if err != nil || strings.Contains(got.Body, "supplied_context") || !strings.Contains(got.Body, "Refunds: 30 days.") {
		t.Fatalf("preview body %s (%v)", got.Body, err)
	}
	// Preview without supplied context: skipped, nothing searched.
	res = call(t, b, request(t, abi.ModePreview, body))
	if !res.Skipped || res.BackendCalls != 0 {
		t.Fatalf("preview without context: %+v", res)
	}
	// Probe: one retrieve, without the result cache; nothing persisted.
	shared.mu.Lock()
	shared.retrieves = nil
	shared.mu.Unlock()
	res = call(t, b, request(t, abi.ModeProbe, body))
	if res.BackendCalls != 1 || res.Persisted {
		t.Fatalf("probe: %+v", res)
	}
	got, _ = apply(t, body, nil, res.Result)
	if !strings.Contains(got.Body, "(policy.md) Refunds are accepted within 30 days.") || strings.Contains(got.Body, "Shipping") {
		t.Fatalf("probe injected %s", got.Body)
	}
	if v := value(res.Result, "sources"); v != `["policy.md"]` {
		t.Fatalf("sources = %q", v)
	}
	if v := value(res.Result, "scores"); v != "[1.000]" { // the query and the passage share the vocabulary words refund and days
		t.Fatalf("scores = %q", v)
	}
	// Live: the same retrieve, which the host may answer from its cache;
	// top_k and min_score unset leave the knowledge base's own.
	call(t, bind(t, h, "rag", `{"store":"kb","filters":{"type":"eq","key":"lang","value":"en"}}`), request(t, abi.ModeLive, body))
	shared.mu.Lock()
	qs := shared.retrieves
	shared.mu.Unlock()
	if len(qs) != 2 || !qs[0].Fresh || qs[0].K != 1 || qs[1].Fresh || qs[1].K != 0 || qs[1].HasMinScore ||
		string(qs[1].Filter) != `{"type":"eq","key":"lang","value":"en"}` || qs[1].Text != "how many days for a refund?" {
		t.Fatalf("retrieve queries = %+v", qs)
	}
}

func TestRAGOnFailure(t *testing.T) {
	h := newHost(t)
	body := `{"model":"m","messages":[{"role":"user","content":"refund?"}]}`
	res := call(t, bind(t, h, "rag", `{"store":"offline","on_failure":"block"}`), request(t, abi.ModeLive, body))
	if res.Immediate == nil || res.Immediate.Status != 503 {
		t.Fatalf("block: %+v", res)
	}
	res = call(t, bind(t, h, "rag", `{"store":"offline","on_failure":"skip"}`), request(t, abi.ModeLive, body))
	if !res.Skipped || len(res.Mutations) != 0 {
		t.Fatalf("skip: %+v", res)
	}
	res = call(t, bind(t, h, "rag", `{"store":"offline"}`), request(t, abi.ModeLive, body))
	if res.Skipped || len(res.Mutations) != 0 || !slices.ContainsFunc(res.Values, func(kv abi.KV) bool { return kv.Key == "warning" }) {
		t.Fatalf("warn: %+v", res)
	}
}

func TestToolsSemanticSelection(t *testing.T) {
	h := newHost(t)
	b := bind(t, h, "tools", `{"block":["delete_all"],"semantic":{"top_k":1,"threshold":0.3}}`)
	body := `{"model":"m","messages":[{"role":"user","content":"what's the weather forecast, will it rain in my city?"}],
	 "tools":[{"type":"function","function":{"name":"get_weather","description":"weather forecast for a city"}},
	          {"type":"function","function":{"name":"send_email","description":"send an email"}},
	          {"type":"function","function":{"name":"delete_all","description":"weather deletion"}}]}`
	res := call(t, b, request(t, abi.ModeProbe, body))
	got, err := apply(t, body, nil, res.Result)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Body, "get_weather") || strings.Contains(got.Body, "send_email") || strings.Contains(got.Body, "delete_all") {
		t.Fatalf("probe selected %s", got.Body)
	}
	// Preview: the static policy only, no backend call.
	res = call(t, b, request(t, abi.ModePreview, body))
	got, _ = apply(t, body, nil, res.Result)
	if res.BackendCalls != 0 || !strings.Contains(got.Body, "send_email") || strings.Contains(got.Body, "delete_all") {
		t.Fatalf("preview: %+v %s", res, got.Body)
	}
}

func TestResponseCacheRoundTrip(t *testing.T) {
	h := newHost(t)
	b := bind(t, h, "response_cache", `{"mode":"exact_then_semantic","semantic":{"similarity_threshold":0.8},"ttl_seconds":600}`)
	body := `{"model":"small","messages":[{"role":"user","content":"what is the capital of france"}]}`
	res := call(t, b, request(t, abi.ModeLive, body))
	if res.CacheStatus != "miss" || res.Immediate != nil {
		t.Fatalf("first lookup: %+v", res)
	}
	resp := request(t, abi.ModeLive, body)
	resp.Phase, resp.Status = abi.PhaseResponse, 500
	resp.ResponseBody = []byte(`{"error":{"message":"upstream down"}}`)
	if res = call(t, b, resp); !res.Skipped || res.Persisted {
		t.Fatalf("a 500 was stored: %+v", res)
	}
	resp.Status = 200
	resp.ResponseBody = []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Paris."},"finish_reason":"stop"}]}`)
	// A request that says Cache-Control: no-store is not stored.
	noStore := request(t, abi.ModeLive, body, abi.Header{Name: "Cache-Control", Value: "max-age=0, no-store"})
	noStore.Phase, noStore.Status, noStore.ResponseBody = abi.PhaseResponse, 200, resp.ResponseBody
	if res = call(t, b, noStore); !res.Skipped || res.Persisted || !strings.Contains(res.Detail, "no-store") {
		t.Fatalf("no-store was stored: %+v", res)
	}
	if res = call(t, b, request(t, abi.ModeLive, body)); res.CacheStatus != "miss" {
		t.Fatalf("after no-store: %+v", res)
	}
	if res = call(t, b, resp); res.Skipped || !res.Persisted {
		t.Fatalf("store: %+v", res)
	}
	value := func(res hostapi.CallResult, key string) string {
		for _, kv := range res.Values {
			if kv.Key == key {
				return kv.Value
			}
		}
		return ""
	}
	// Exact hit, streamed or not.
	res = call(t, b, request(t, abi.ModeLive, `{"model":"small","stream":true,"messages":[{"role":"user","content":"what is the capital of france"}]}`))
	if res.CacheStatus != "hit" || res.Immediate == nil || res.Immediate.Content != "Paris." || value(res, "hit") != "exact" || value(res, "similarity") != "1.0000" {
		t.Fatalf("exact hit: %+v", res)
	}
	// Semantic hit: a different wording above the threshold. The test
	// embedder gives both the same vector; the hit still does not claim
	// 1.0000, which is for exact hits.
	res = call(t, b, request(t, abi.ModeLive, `{"model":"small","messages":[{"role":"user","content":"tell me the capital of france"}]}`))
	if res.CacheStatus != "hit" || res.Immediate == nil || res.Immediate.Content != "Paris." || value(res, "hit") != "semantic" || value(res, "similarity") != "0.9999" {
		t.Fatalf("semantic hit: %+v", res)
	}
	// A number makes it another question: other slots, another namespace.
	if res = call(t, b, request(t, abi.ModeLive, `{"model":"small","messages":[{"role":"user","content":"what was the capital of france in 1700"}]}`)); res.CacheStatus != "miss" {
		t.Fatalf("a question with a year hit: %+v", res)
	}
	// Similar enough (0.82 here) but with another content word: other
	// words, another namespace (the guard would refuse it), so the lookup
	// finds no candidate at all.
	res = call(t, b, request(t, abi.ModeLive, `{"model":"small","messages":[{"role":"user","content":"what is the capital city of france"}]}`))
	if res.CacheStatus != "miss" || res.Immediate != nil || res.Detail != "miss (exact_then_semantic)" {
		t.Fatalf("another content word hit: %+v", res)
	}
	// Another decision is another scope.
	other := request(t, abi.ModeLive, body)
	other.Decision = "other"
	if res = call(t, b, other); res.CacheStatus != "miss" {
		t.Fatalf("another decision hit: %+v", res)
	}
	// The bypass header skips the cache.
	if res = call(t, b, request(t, abi.ModeLive, body, abi.Header{Name: "X-Cache-Bypass", Value: "true"})); !res.Skipped || res.Immediate != nil {
		t.Fatalf("bypass: %+v", res)
	}
	// Probe and preview use no result cache.
	if res = call(t, b, request(t, abi.ModeProbe, body)); res.Immediate != nil || res.BackendCalls != 0 {
		t.Fatalf("probe used the cache: %+v", res)
	}
	// Per user: another user misses; a request naming no user is skipped.
	pu := bind(t, h, "response_cache", `{"mode":"exact","scope":{"user":true}}`)
	u1 := `{"model":"small","user":"u1","messages":[{"role":"user","content":"what is the capital of france"}]}`
	store := request(t, abi.ModeLive, u1)
	store.Phase, store.Status, store.ResponseBody = abi.PhaseResponse, 200, resp.ResponseBody
	if res = call(t, pu, store); !res.Persisted {
		t.Fatalf("per-user store: %+v", res)
	}
	if res = call(t, pu, request(t, abi.ModeLive, u1)); res.CacheStatus != "hit" {
		t.Fatalf("same user: %+v", res)
	}
	if res = call(t, pu, request(t, abi.ModeLive, strings.Replace(u1, "u1", "u2", 1))); res.CacheStatus != "miss" {
		t.Fatalf("another user hit: %+v", res)
	}
	if res = call(t, pu, request(t, abi.ModeLive, body)); !res.Skipped || res.Immediate != nil || res.BackendCalls != 0 {
		t.Fatalf("no user: %+v", res)
	}
}

func TestContextCompressionInHost(t *testing.T) {
	h := newHost(t)
	var msgs []string
	msgs = append(msgs, `{"role":"system","content":"be brief"}`)
	for i := 0; i < 10; i++ {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"question %d %s"}`, i, strings.Repeat("word ", 20)),
			fmt.Sprintf(`{"role":"assistant","content":"answer %d %s"}`, i, strings.Repeat("word ", 20)))
	}
	body := `{"model":"m","messages":[` + strings.Join(msgs, ",") + `]}`
	res := call(t, bind(t, h, "context_compression", `{"max_tokens":200,"keep_recent_turns":2}`), request(t, abi.ModePreview, body))
	got, err := apply(t, body, nil, res.Result)
	if err != nil {
		t.Fatal(err)
	}
	var after struct {
		Messages []struct{ Role, Content string }
	}
	_ = json.Unmarshal([]byte(got.Body), &after)
	if after.Messages[0].Role != "system" || !strings.HasPrefix(after.Messages[len(after.Messages)-1].Content, "answer 9") || len(after.Messages) >= 21 {
		t.Fatalf("kept %d messages: %s", len(after.Messages), got.Body)
	}
	if res.BackendCalls != 0 || !slices.ContainsFunc(res.Values, func(kv abi.KV) bool { return kv.Key == "tokens_after" }) {
		t.Fatalf("report: %+v", res)
	}
}

func TestFastResponseInHost(t *testing.T) {
	h := newHost(t)
	res := call(t, bind(t, h, "fast_response", `{"message":"no"}`), request(t, abi.ModeLive, `{"model":"m","messages":[]}`))
	if res.Immediate == nil || res.Immediate.Status != 200 || res.Immediate.Content != "no" {
		t.Fatalf("%+v", res)
	}
}

// value is a report value of a result ("" when absent).
func value(r abi.Result, key string) string {
	for _, kv := range r.Values {
		if kv.Key == key {
			return kv.Value
		}
	}
	return ""
}
