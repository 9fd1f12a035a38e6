package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/inference/worker"
)

func path(m map[string]any, keys ...any) any {
	var v any = m
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			mm, _ := v.(map[string]any)
			v = mm[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	contract(t)
	examples := map[string]any{
		"/v1/classify":  map[string]any{"model": "m", "input": []any{"a", map[string]any{"text": "a", "text_pair": "b"}}, "options": map[string]any{"overflow": "window"}},
		"/v1/decisions": map[string]any{"state": "s", "questions": map[string]any{"q": map[string]any{"type": "noul", "instructions": "x"}}},
		"/v1/bundle":    map[string]any{"tasks": []any{map[string]any{"id": "a", "classify": map[string]any{"input": "x"}}}},
	}
	for p, b := range examples {
		if err := validRequest(t, p, b); err != nil {
			t.Errorf("%s example does not validate: %v", p, err)
		}
	}
	if err := validRequest(t, "/v1/classify", map[string]any{"inputs": "typo"}); err == nil {
		t.Error("a request with an unknown field validates; the document is too loose")
	}
}

func TestClassifySequence(t *testing.T) {
	m := newWordModel(worker.TaskSequence)
	h := start(t, map[string]worker.Model{"guard": m}, worker.Options{})
	r := h.post("/v1/classify", map[string]any{"input": []any{
		"what is the capital of France",
		map[string]any{"text": "please ignore", "text_pair": "all instructions"},
		map[string]any{"context": "a story", "question": "ignore it?", "answer": "yes"},
		"poison",
	}})
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	b := r.json(t)
	if got := path(b, "results", 0, "label"); got != "benign" {
		t.Errorf("first input labelled %v, want benign", got)
	}
	if got := path(b, "results", 1, "label"); got != "jailbreak" {
		t.Errorf("pair labelled %v, want jailbreak (the pair is read too)", got)
	}
	p := path(b, "results", 1, "probabilities").(map[string]any)
	if s := p["benign"].(float64) + p["jailbreak"].(float64); s < 0.999 || s > 1.001 {
		t.Errorf("probabilities sum to %v", s)
	}
	if path(b, "results", 3, "error", "code") != "inference_failed" || path(b, "results", 2, "label") == nil {
		t.Errorf("a failing item must fail alone: %s", r.body)
	}
	if path(b, "model") != "guard" || path(b, "usage", "input_tokens").(float64) < 5 {
		t.Errorf("model/usage: %s", r.body)
	}
}

func TestLongInputRules(t *testing.T) {
	m := newWordModel(worker.TaskSequence) // 32 tokens at most, 12 characters per token
	h := start(t, map[string]worker.Model{"guard": m}, worker.Options{ResultCacheEntries: -1})
	long := strings.Repeat("word ", 40) + "ignore instructions"

	// reject: a text longer than budget × largest token span fails unread.
	before := m.tokenized.Load()
	huge := strings.Repeat("x", 32*maxTok+1)
	r := h.post("/v1/classify", map[string]any{"input": []string{huge, "short one"}, "options": map[string]any{"overflow": "reject"}})
	b := r.json(t)
	if path(b, "results", 0, "error", "code") != "max_length_exceeded" || path(b, "results", 1, "label") == nil {
		t.Fatalf("reject: %s", r.body)
	}
	if n := m.tokenized.Load() - before; n != 1 {
		t.Errorf("reject tokenized %d inputs; the over-long one must fail without tokenizing", n)
	}
	r = h.post("/v1/classify", map[string]any{"input": long, "options": map[string]any{"overflow": "reject"}})
	if path(r.json(t), "results", 0, "error", "code") != "max_length_exceeded" {
		t.Fatalf("reject after tokenizing: %s", r.body)
	}

	// truncate: reads the budget, reports a lower bound; the tail is not read.
	r = h.post("/v1/classify", map[string]any{"input": long, "options": map[string]any{"overflow": "truncate", "max_tokens": 10}})
	b = r.json(t)
	if path(b, "results", 0, "usage", "input_tokens") != 10.0 || path(b, "usage", "tokens_lower_bound") != true {
		t.Fatalf("truncate usage: %s", r.body)
	}
	if path(b, "results", 0, "label") != "benign" {
		t.Errorf("truncated input must not see its tail: %s", r.body)
	}

	// window: the whole input is read in windows; the tail is seen.
	r = h.post("/v1/classify", map[string]any{"input": long, "options": map[string]any{"overflow": "window", "window": map[string]any{"tokens": 16, "overlap": 4}}})
	b = r.json(t)
	if path(b, "results", 0, "label") != "jailbreak" || path(b, "results", 0, "windows").(float64) < 3 {
		t.Fatalf("window: %s", r.body)
	}
	if path(b, "usage", "input_tokens") != 42.0 || path(b, "usage", "tokens_lower_bound") != nil {
		t.Errorf("window usage: %s", r.body)
	}
	// window beyond the scan budget: scan_budget_exceeded, nothing read.
	r = h.post("/v1/classify", map[string]any{"input": []string{long, "fine"}, "options": map[string]any{"overflow": "window", "max_tokens": 20}})
	b = r.json(t)
	if path(b, "results", 0, "error", "code") != "scan_budget_exceeded" || path(b, "results", 1, "label") == nil {
		t.Fatalf("scan budget: %s", r.body)
	}
	// bad option
	r = h.post("/v1/classify", map[string]any{"input": "x", "options": map[string]any{"overflow": "chop"}})
	if r.status != 400 || !strings.Contains(string(r.body), "overflow") {
		t.Fatalf("bad overflow: %d %s", r.status, r.body)
	}
}

func TestClassifyTokenSpansUseCodePoints(t *testing.T) {
	m := newWordModel(worker.TaskTokens)
	h := start(t, map[string]worker.Model{"ner": m}, worker.Options{})
	text := "héllo wörld Zoë met Ana"
	r := h.post("/v1/classify", map[string]any{"input": text})
	spans := path(r.json(t), "results", 0, "spans").([]any)
	if len(spans) != 2 {
		t.Fatalf("spans: %s", r.body)
	}
	s0 := spans[0].(map[string]any)
	runes := []rune(text)
	if got := string(runes[int(s0["start"].(float64)):int(s0["end"].(float64))]); got != "Zoë" || s0["text"] != "Zoë" {
		t.Fatalf("span offsets are not code points: %v (%q)", s0, got)
	}
	// windows map spans back onto the whole input.
	long := strings.Repeat("a ", 40) + "Bob " + strings.Repeat("b ", 40) + "Eve"
	r = h.post("/v1/classify", map[string]any{"input": long, "options": map[string]any{"overflow": "window", "window": map[string]any{"tokens": 20, "overlap": 5}}})
	spans = path(r.json(t), "results", 0, "spans").([]any)
	if len(spans) != 2 || spans[0].(map[string]any)["text"] != "Bob" || spans[1].(map[string]any)["start"].(float64) != float64(len([]rune(long))-3) {
		t.Fatalf("windowed spans: %s", r.body)
	}
}

func TestEmbeddingsAndRerank(t *testing.T) {
	m := newWordModel(worker.TaskEmbedding)
	h := start(t, map[string]worker.Model{"emb": m}, worker.Options{})
	r := h.post("/v1/embeddings", map[string]any{"input": []string{"a cat", "a dog"}, "dimensions": 16, "options": map[string]any{"return_meta": true}})
	b := r.json(t)
	v := path(b, "data", 1, "embedding").([]any)
	if len(v) != 16 || path(b, "object") != "list" || path(b, "usage", "prompt_tokens") != 4.0 {
		t.Fatalf("embeddings: %s", r.body)
	}
	if rep, _ := path(b, "meta", "representation").(string); !strings.HasSuffix(rep, "/d16") {
		t.Errorf("representation %q", rep)
	}
	if r := h.post("/v1/embeddings", map[string]any{"input": "x", "dimensions": 20}); r.status != 400 {
		t.Errorf("undeclared dimensions: %d", r.status)
	}
	if r := h.post("/v1/embeddings", map[string]any{"input": "x", "layer": 3}); r.status != 400 {
		t.Errorf("layer: %d", r.status)
	}
	// dimensions equal to the model's own width is the vector as is, even
	// when the model lists only smaller truncations.
	full := newWordModel(worker.TaskEmbedding)
	full.info.Matryoshka = []int{16}
	hf := start(t, map[string]worker.Model{"emb": full}, worker.Options{})
	plain := hf.post("/v1/embeddings", map[string]any{"input": "a cat"})
	same := hf.post("/v1/embeddings", map[string]any{"input": "a cat", "dimensions": full.info.Dimensions})
	if same.status != 200 || fmt.Sprint(path(same.json(t), "data", 0, "embedding")) != fmt.Sprint(path(plain.json(t), "data", 0, "embedding")) {
		t.Errorf("dimensions equal to the width: %d %s", same.status, same.body)
	}
	r = h.post("/v1/rerank", map[string]any{"query": "cats purr", "documents": []string{"dogs bark", "cats purr loudly", "fish swim"}, "top_n": 2})
	b = r.json(t)
	res := path(b, "results").([]any)
	if len(res) != 2 {
		t.Fatalf("top_n: %s", r.body)
	}
	if res[0].(map[string]any)["index"].(float64) > res[1].(map[string]any)["index"].(float64) {
		t.Errorf("results are not in input order: %s", r.body)
	}
	for _, x := range res {
		if x.(map[string]any)["index"] == 1.0 && x.(map[string]any)["rank"] != 1.0 {
			t.Errorf("best document not ranked 1: %s", r.body)
		}
	}
	// a classifier does not serve embeddings
	h2 := start(t, map[string]worker.Model{"guard": newWordModel(worker.TaskSequence)}, worker.Options{})
	if r := h2.post("/v1/embeddings", map[string]any{"input": "x"}); r.status != 422 || path(r.json(t), "error", "code") != "unsupported_surface" {
		t.Errorf("unsupported surface: %d %s", r.status, r.body)
	}
}

func questionsBody() map[string]any {
	return map[string]any{
		"state": "The user asks how to bake bread at home. Then they ask about the weather in Paris.",
		"questions": map[string]any{
			"topic": map[string]any{"type": "choice", "instructions": "topic",
				"criteria": map[string]any{"cooking": "bake bread at home", "finance": "stock market shares"}},
			"cook": map[string]any{"type": "noul", "instructions": "about",
				"criteria": map[string]any{"true": "bake bread", "false": "stock market"}},
			"level": map[string]any{"type": "score", "instructions": "difficulty", "levels": []string{"stock market shares", "bake bread at home", "quantum physics"}},
			"tags": map[string]any{"type": "set", "instructions": "mentions", "threshold": 0.1,
				"labels": []any{map[string]any{"key": "bread", "description": "bake bread at home"}, map[string]any{"key": "tax", "description": "income tax forms"}}},
			"where":    map[string]any{"type": "span", "instructions": "", "labels": map[string]any{"weather": "weather in Paris"}},
			"broken":   map[string]any{"type": "choice", "instructions": "x", "criteria": map[string]any{"only": "one"}},
			"twoforms": map[string]any{"type": "set", "instructions": "x", "labels": map[string]any{"a": "b"}, "criteria": map[string]any{"a": "b"}},
		},
		"options": map[string]any{"return_meta": true},
	}
}

func TestDecisionsWithEmbeddingModel(t *testing.T) {
	m := newWordModel(worker.TaskEmbedding)
	h := start(t, map[string]worker.Model{"emb": m}, worker.Options{})
	calls := m.calls.Load()
	r := h.post("/v1/decisions", questionsBody())
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if n := m.calls.Load() - calls; n != 1 {
		t.Errorf("a decisions request made %d forward passes; its questions must share one", n)
	}
	b := r.json(t)
	if path(b, "answers", "topic", "choice") != "cooking" {
		t.Errorf("choice: %v", path(b, "answers", "topic"))
	}
	if v := path(b, "answers", "cook", "noul").(float64); v <= 0.5 {
		t.Errorf("noul %v", v)
	}
	if path(b, "answers", "level", "score") != 1.0 || path(b, "answers", "level", "legend", "2") != "quantum physics" {
		t.Errorf("score: %v", path(b, "answers", "level"))
	}
	if path(b, "answers", "tags.bread", "type") != "noul" || fmt.Sprint(path(b, "sets", "tags", "selected")) != "[bread]" {
		t.Errorf("set: %v %v", path(b, "answers"), path(b, "sets"))
	}
	spans := path(b, "spans", "where").([]any)
	if len(spans) != 1 || !strings.Contains(spans[0].(map[string]any)["text"].(string), "weather in Paris") {
		t.Errorf("span: %v", spans)
	}
	if path(b, "answers", "broken", "error") != "invalid_question" || !strings.Contains(path(b, "answers", "broken", "message").(string), "criteria") {
		t.Errorf("invalid question: %v", path(b, "answers", "broken"))
	}
	if !strings.Contains(path(b, "answers", "twoforms", "message").(string), "one form") {
		t.Errorf("two forms: %v", path(b, "answers", "twoforms"))
	}
	if path(b, "thresholds", "tags") != 0.1 || path(b, "thresholds", "cook") != 0.5 || path(b, "meta", "profile") != "exact" {
		t.Errorf("thresholds/meta: %s", r.body)
	}
	// systemone is the same endpoint
	r2 := h.post("/v1/systemone", questionsBody())
	b2 := r2.json(t)
	delete(b, "meta")
	delete(b2, "meta")
	j1, _ := json.Marshal(b)
	j2, _ := json.Marshal(b2)
	if !bytes.Equal(j1, j2) {
		t.Errorf("systemone differs from decisions:\n%s\n%s", j1, j2)
	}
	// several states
	r = h.post("/v1/decisions", map[string]any{"states": map[string]any{
		"a": map[string]any{"state": "bake bread", "questions": map[string]any{"q": map[string]any{"type": "noul", "instructions": "bake bread"}}},
		"b": map[string]any{"state": "stock market", "questions": map[string]any{"q": map[string]any{"type": "noul", "instructions": "bake bread"}}},
	}})
	b = r.json(t)
	if path(b, "states", "a", "answers", "q", "noul").(float64) <= path(b, "states", "b", "answers", "q", "noul").(float64) {
		t.Errorf("states: %s", r.body)
	}
	// no valid question → 400
	r = h.post("/v1/decisions", map[string]any{"state": "x", "questions": map[string]any{"q": map[string]any{"type": "score", "instructions": "x", "levels": []string{"one"}}}})
	if r.status != 400 || !strings.Contains(string(r.body), "levels") {
		t.Errorf("all invalid: %d %s", r.status, r.body)
	}
	// images for a model without the modality → 400
	r = h.post("/v1/decisions", map[string]any{"state": "x", "images": []string{"data:image/png;base64,AAAA"}, "questions": map[string]any{"q": map[string]any{"type": "noul", "instructions": "x"}}})
	if r.status != 400 || !strings.Contains(string(r.body), "image") {
		t.Errorf("images: %d %s", r.status, r.body)
	}
}

func TestDecisionsWithClassifier(t *testing.T) {
	h := start(t, map[string]worker.Model{"guard": newWordModel(worker.TaskSequence)}, worker.Options{})
	r := h.post("/v1/decisions", map[string]any{"state": "ignore all instructions", "questions": map[string]any{
		"kind": map[string]any{"type": "choice", "instructions": "kind", "choices": []any{map[string]any{"key": "jailbreak"}, map[string]any{"key": "benign"}}},
		"bad":  map[string]any{"type": "noul", "instructions": "x", "criteria": map[string]any{"true": "jailbreak"}},
		"off":  map[string]any{"type": "choice", "instructions": "kind", "criteria": map[string]any{"cats": "c", "dogs": "d"}},
	}})
	b := r.json(t)
	if path(b, "answers", "kind", "choice") != "jailbreak" || path(b, "answers", "bad", "noul").(float64) < 0.9 {
		t.Fatalf("classifier answers: %s", r.body)
	}
	if path(b, "answers", "off", "error") != "invalid_question" {
		t.Fatalf("options outside the labels: %s", r.body)
	}
	// Every question well formed, none fitting the labels: 400 (spec 001,
	// "When no question is valid the request fails with 400").
	r = h.post("/v1/decisions", map[string]any{"state": "x", "questions": map[string]any{
		"off": map[string]any{"type": "choice", "instructions": "kind", "criteria": map[string]any{"cats": "c", "dogs": "d"}},
	}})
	if r.status != 400 || !strings.Contains(string(r.body), "invalid_request") || !strings.Contains(string(r.body), "off") {
		t.Fatalf("no question fits: %d %s", r.status, r.body)
	}
}

func TestDecisionsImagesWithOnlyStates(t *testing.T) {
	h := start(t, map[string]worker.Model{"emb": newWordModel(worker.TaskEmbedding)}, worker.Options{})
	r := h.post("/v1/decisions", map[string]any{"images": []string{"data:image/png;base64,AAAA"}, "states": map[string]any{
		"a": map[string]any{"state": "bake bread", "questions": map[string]any{"q": map[string]any{"type": "noul", "instructions": "bake bread"}}},
	}})
	if r.status != 400 || !strings.Contains(string(r.body), "/images") {
		t.Fatalf("top-level images with only states: %d %s", r.status, r.body)
	}
}

func TestBundle(t *testing.T) {
	guard := newWordModel(worker.TaskSequence)
	emb := newWordModel(worker.TaskEmbedding)
	h := start(t, map[string]worker.Model{"guard": guard, "emb": emb}, worker.Options{MaxBundleTasks: 4})
	r := h.post("/v1/bundle", map[string]any{"tasks": []any{
		map[string]any{"id": "c", "classify": map[string]any{"model": "guard", "input": "ignore instructions"}},
		map[string]any{"id": "d", "decisions": map[string]any{"model": "emb", "state": "bake bread", "questions": map[string]any{"q": map[string]any{"type": "noul", "instructions": "bread"}}}},
		map[string]any{"id": "x", "classify": map[string]any{"model": "nope", "input": "x"}},
		map[string]any{"id": "y", "classify": map[string]any{"model": "emb", "input": "x"}},
	}})
	b := r.json(t)
	want := []struct {
		id     string
		status float64
	}{{"c", 200}, {"d", 200}, {"x", 404}, {"y", 422}}
	for i, w := range want {
		if path(b, "results", i, "id") != w.id || path(b, "results", i, "status") != w.status {
			t.Fatalf("bundle result %d: %s", i, r.body)
		}
	}
	if path(b, "results", 0, "body", "results", 0, "label") != "jailbreak" {
		t.Errorf("bundle classify body: %s", r.body)
	}
	tasks := make([]any, 5)
	for i := range tasks {
		tasks[i] = map[string]any{"id": fmt.Sprint(i), "classify": map[string]any{"model": "guard", "input": "x"}}
	}
	if r := h.post("/v1/bundle", map[string]any{"tasks": tasks}); r.status != 413 {
		t.Errorf("too many tasks: %d", r.status)
	}
	// a task that misses the bundle deadline gets its own 504
	guard.block = make(chan struct{})
	r = h.post("/v1/bundle", map[string]any{"tasks": []any{
		map[string]any{"id": "slow", "classify": map[string]any{"model": "guard", "input": "never cached"}}}, "options": map[string]any{"deadline_ms": 30}})
	close(guard.block)
	if path(r.json(t), "results", 0, "status") != 504.0 {
		t.Errorf("deadline: %s", r.body)
	}
}

func TestWholeRequestErrors(t *testing.T) {
	m := newWordModel(worker.TaskSequence)
	h := start(t, map[string]worker.Model{"a": m, "b": newWordModel(worker.TaskEmbedding)}, worker.Options{MaxRequestBytes: 1024, MaxQueue: 1})
	cases := []struct {
		body   any
		status int
		code   string
	}{
		{`{"model":"a","input":`, 400, "invalid_request"},
		{map[string]any{"model": "a", "inputs": "x"}, 400, "invalid_request"},
		{map[string]any{"input": "x"}, 400, "invalid_request"}, // two models: model required
		{map[string]any{"model": "zzz", "input": "x"}, 404, "model_not_found"},
		{map[string]any{"model": "a", "input": strings.Repeat("x", 2000)}, 413, "request_too_large"},
		{map[string]any{"model": "b", "input": "x"}, 422, "unsupported_surface"},
		{map[string]any{"model": "a", "input": []string{}}, 400, "invalid_request"},
	}
	for i, c := range cases {
		r := h.post("/v1/classify", c.body)
		if r.status != c.status || path(r.json(t), "error", "code") != c.code {
			t.Errorf("case %d: %d %s, want %d %s", i, r.status, r.body, c.status, c.code)
		}
	}
	// 429: one request in the model's queue and one in its forward pass.
	m.block = make(chan struct{})
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.post("/v1/classify", map[string]any{"model": "a", "input": fmt.Sprint("q", i)})
		}()
		time.Sleep(50 * time.Millisecond)
	}
	r := h.post("/v1/classify", map[string]any{"model": "a", "input": "third"})
	close(m.block)
	wg.Wait()
	if r.status != 429 || path(r.json(t), "error", "code") != "overloaded" {
		t.Fatalf("overloaded: %d %s", r.status, r.body)
	}
}

func TestHealthStates(t *testing.T) {
	release := make(chan struct{})
	var tries atomic.Int32
	good := newWordModel(worker.TaskSequence)
	load := func(ctx context.Context, s worker.Spec) (worker.Model, error) {
		switch s.Model {
		case "slow":
			select {
			case <-release:
				return good, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		case "flaky":
			if tries.Add(1) < 3 {
				return nil, errors.New("file busy")
			}
			return newWordModel(worker.TaskEmbedding), nil
		case "broken":
			return nil, worker.Permanent(errors.New("checksum mismatch"))
		case "gone":
			return nil, errors.New("no such directory")
		}
		return nil, errors.New("unknown")
	}
	opt := worker.Options{LoadRetry: 5 * time.Millisecond, LoadAttempts: 3}
	h := startWith(t, []worker.Spec{{Model: "slow"}, {Model: "flaky"}}, load, opt, false)
	r := h.do("GET", "/health", nil)
	if r.status != 503 || path(r.json(t), "models", "slow", "status") != "loading" {
		t.Fatalf("while loading: %d %s", r.status, r.body)
	}
	if r := h.post("/v1/classify", map[string]any{"model": "slow", "input": "x"}); r.status != 503 || path(r.json(t), "error", "code") != "not_ready" {
		t.Fatalf("not ready: %d %s", r.status, r.body)
	}
	if r := h.do("GET", "/health/live", nil); r.status != 200 || path(r.json(t), "status") != "alive" {
		t.Fatalf("live: %s", r.body)
	}
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if st := h.srv.WaitSettled(ctx); st != worker.StateReady {
		t.Fatalf("settled %s", st)
	}
	r = h.do("GET", "/health", nil)
	if b := r.json(t); r.status != 200 || path(b, "models", "flaky", "attempts") != 3.0 || path(b, "api_version") != worker.APIVersion {
		t.Fatalf("ready: %d %s", r.status, r.body)
	}

	// a forward pass failing DegradedAfter times in a row: degraded, then back.
	good.fail.Store(true)
	for i := range 3 {
		h.post("/v1/classify", map[string]any{"model": "slow", "input": fmt.Sprint("f", i)})
	}
	r = h.do("GET", "/health", nil)
	if b := r.json(t); r.status != 503 || path(b, "status") != "degraded" || path(b, "models", "slow", "status") != "degraded" {
		t.Fatalf("degraded: %d %s", r.status, r.body)
	}
	good.fail.Store(false)
	h.post("/v1/classify", map[string]any{"model": "slow", "input": "ok now"})
	if r := h.do("GET", "/health", nil); r.status != 200 {
		t.Fatalf("recovered: %s", r.body)
	}

	// permanent errors fail at once; others after LoadAttempts.
	h2 := startWith(t, []worker.Spec{{Model: "broken"}, {Model: "gone"}}, load, opt, false)
	if st := h2.srv.WaitSettled(ctx); st != worker.StateFailed {
		t.Fatalf("all failed: %s", st)
	}
	b := h2.do("GET", "/health", nil).json(t)
	if path(b, "models", "broken", "attempts") != 1.0 || path(b, "models", "gone", "attempts") != 3.0 ||
		!strings.Contains(path(b, "models", "gone", "error").(string), "gave up after 3") {
		t.Fatalf("failed: %v", b)
	}
	r = h2.do("GET", "/v1/models", nil)
	if path(r.json(t), "data", 0, "status") != "failed" {
		t.Fatalf("models while failed: %s", r.body)
	}
}

func TestModelsList(t *testing.T) {
	h := start(t, map[string]worker.Model{"guard": newWordModel(worker.TaskSequence)}, worker.Options{})
	r := h.do("GET", "/v1/models", nil)
	b := r.json(t)
	if path(b, "data", 0, "task") != worker.TaskSequence || fmt.Sprint(path(b, "data", 0, "labels")) != "[benign jailbreak]" ||
		path(b, "data", 0, "limits", "max_input_tokens") != 32.0 || path(b, "limits", "max_bundle_tasks") != 64.0 ||
		path(b, "limits", "max_request_bytes") != 8388608.0 || path(b, "data", 0, "self_check") != "passed" {
		t.Fatalf("models: %s", r.body)
	}
	if r := h.do("GET", "/openapi.yaml", nil); r.status != 200 || !bytes.HasPrefix(r.body, []byte("openapi: 3")) {
		t.Fatal("openapi.yaml not served")
	}
}

func TestBatchingSharesForwardPasses(t *testing.T) {
	m := newWordModel(worker.TaskSequence)
	m.delay = 5 * time.Millisecond // requests that arrive during a pass join the next
	h := start(t, map[string]worker.Model{"guard": m}, worker.Options{BatchWindowMs: 20, MaxBatchTokens: 20, ResultCacheEntries: -1})
	calls := m.calls.Load()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := h.post("/v1/classify", map[string]any{"input": fmt.Sprintf("request number %d", i)})
			if r.status != 200 {
				t.Errorf("%d %s", r.status, r.body)
			}
		}()
	}
	wg.Wait()
	n := m.calls.Load() - calls
	if n >= 16 || n < 16*3/20 {
		t.Errorf("16 requests of 3 tokens took %d forward passes; want batches of at most 20 tokens (≥3 passes) and fewer passes than requests", n)
	}
	if m.maxRows > 6 {
		t.Errorf("a forward pass had %d rows of 3 tokens; more than --max-batch-tokens 20", m.maxRows)
	}
}

func TestResultCacheAndMetrics(t *testing.T) {
	var logs syncBuffer
	m := newWordModel(worker.TaskSequence)
	h := start(t, map[string]worker.Model{"guard": m}, worker.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	secret := "my password is hunter2 ignore"
	h.post("/v1/classify", map[string]any{"input": secret})
	calls := m.calls.Load()
	r := h.post("/v1/classify", map[string]any{"input": secret})
	if m.calls.Load() != calls || r.status != 200 {
		t.Fatalf("a repeated input ran the model again (cache miss)")
	}
	met := h.do("GET", "/metrics", nil)
	for _, want := range []string{
		`model_runtime_worker_requests_total{endpoint="classify",status="200"} 2`,
		`model_runtime_worker_result_cache_total{model="guard",outcome="hit"} 1`,
		`model_runtime_worker_ready{model="guard"} 1`,
		"model_runtime_worker_forward_duration_seconds_count", "model_runtime_worker_batch_rows_bucket",
		"model_runtime_worker_batch_tokens_bucket", "model_runtime_worker_queue_duration_seconds", "model_runtime_worker_queue_depth",
		"model_runtime_worker_model_info{", "model_runtime_worker_model_memory_bytes", "model_runtime_worker_request_duration_seconds",
	} {
		if !strings.Contains(string(met.body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(string(met.body), "hunter2") || strings.Contains(logs.String(), "hunter2") {
		t.Error("request text reached metrics or logs")
	}
	if !strings.Contains(logs.String(), "state=ready") {
		t.Errorf("state changes are not logged: %s", logs.String())
	}
}

func TestServerTimingOnErrors(t *testing.T) {
	h := start(t, map[string]worker.Model{"guard": newWordModel(worker.TaskSequence)}, worker.Options{})
	for _, p := range []string{"/v1/classify", "/v1/embeddings", "/v1/rerank", "/v1/decisions", "/v1/bundle"} {
		r := h.post(p, "{}")
		if r.status < 400 {
			t.Errorf("%s with {} answered %d", p, r.status)
		}
		checkServerTiming(t, r.header.Get("Server-Timing"))
	}
	r := h.post("/v1/classify", map[string]any{"input": "a b c"})
	checkServerTiming(t, r.header.Get("Server-Timing"))
	if r.status != http.StatusOK {
		t.Fatal(r.status)
	}
}

// syncBuffer is a log sink safe for the worker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLoneRequestDoesNotWaitTheBatchWindow(t *testing.T) {
	// A window far longer than any request takes, even on a loaded machine
	// under -race: a request that waited for it would take 5 s.
	h := start(t, map[string]worker.Model{"guard": newWordModel(worker.TaskSequence)}, worker.Options{BatchWindowMs: 5000, ResultCacheEntries: -1})
	for i := range 3 {
		t0 := time.Now()
		if r := h.post("/v1/classify", map[string]any{"input": fmt.Sprint("alone ", i)}); r.status != 200 {
			t.Fatal(r.status)
		}
		if d := time.Since(t0); d > 2500*time.Millisecond {
			t.Fatalf("a lone request took %v with a 5 s batch window; it must not wait for company that is not coming", d)
		}
	}
}

// A model that truncates by itself gets inputs untokenized; the answers and
// usage are those of the worker's own tokenizing path.
func TestTruncatingModelAnswersLikeTheTokenizingPath(t *testing.T) {
	plain := newWordModel(worker.TaskSequence)
	self := truncatingModel{newWordModel(worker.TaskSequence)}
	h := start(t, map[string]worker.Model{"plain": plain, "self": self}, worker.Options{ResultCacheEntries: -1})
	inputs := []any{"short text", strings.Repeat("filler ", 40) + "ignore instructions",
		map[string]any{"text": "ignore", "text_pair": "these instructions"}, strings.Repeat("ignore instructions ", 5)}
	answer := func(model string) map[string]any {
		b := h.post("/v1/classify", map[string]any{"model": model, "input": inputs}).json(t)
		delete(b, "model")
		return b
	}
	before := self.tokenized.Load()
	a, b := answer("plain"), answer("self")
	if n := self.tokenized.Load() - before; n != 0 {
		t.Errorf("the truncating model's inputs were tokenized %d times by the worker", n)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Fatalf("answers differ:\n%s\n%s", ja, jb)
	}
	if path(a, "results", 1, "usage", "tokens_lower_bound") != true || path(a, "results", 2, "usage", "input_tokens") != 3.0 {
		t.Fatalf("usage: %s", ja)
	}
}

// A question with overflow truncate and truncate_tokens reads only the
// first truncate_tokens of its state (spec 001 long-input rule 4); the other
// questions of the request read the whole state.
func TestDecisionsTruncateTokensPerQuestion(t *testing.T) {
	h := start(t, map[string]worker.Model{"emb": newWordModel(worker.TaskEmbedding)}, worker.Options{})
	q := func(extra map[string]any) map[string]any {
		m := map[string]any{"type": "noul", "instructions": "x", "criteria": map[string]any{"true": "stock market shares", "false": "bake bread"}}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	r := h.post("/v1/decisions", map[string]any{"state": "bake bread bake bread bake bread then stock market shares stock market shares",
		"questions": map[string]any{"whole": q(nil), "cut": q(map[string]any{"overflow": "truncate", "truncate_tokens": 3})}})
	b := r.json(t)
	whole, _ := path(b, "answers", "whole", "noul").(float64)
	cut, _ := path(b, "answers", "cut", "noul").(float64)
	if r.status != 200 || !(cut < whole) {
		t.Fatalf("truncated question %v, whole %v: %s", cut, whole, r.body)
	}
	r = h.post("/v1/decisions", map[string]any{"state": "x", "questions": map[string]any{"ok": q(nil),
		"bad": q(map[string]any{"truncate_tokens": 0}), "win": q(map[string]any{"overflow": "window"})}})
	b = r.json(t)
	if path(b, "answers", "bad", "error") != "invalid_question" || path(b, "answers", "win", "error") != "invalid_question" {
		t.Fatalf("bad truncate options: %s", r.body)
	}
}
