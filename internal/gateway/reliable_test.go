package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/demobackend"
)

// generalDecision is the test configuration's catch-all decision, which the
// tests below give a reliability policy.
const generalDecision = `      - name: general
        priority: 10
        rules: {operator: AND, conditions: []}
        modelRefs:
          - {model: small, use_reasoning: false}
`

// withPolicy replaces the catch-all decision's modelRefs and adds policy
// (YAML lines indented for the decision's fields).
func withPolicy(modelRefs, policy string) envOption {
	return withYAML(func(y string) string {
		if !strings.Contains(y, generalDecision) {
			panic("test configuration changed: no general decision")
		}
		return strings.Replace(y, generalDecision, `      - name: general
        priority: 10
        rules: {operator: AND, conditions: []}
        modelRefs: `+modelRefs+"\n"+policy, 1)
	})
}

// failing answers status n times (with headers h), then hands over to next.
func failing(n int, status int, h map[string]string, next http.Handler) (http.Handler, *atomic.Int32) {
	var calls atomic.Int32
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if int(calls.Add(1)) <= n {
			for k, v := range h {
				w.Header().Set(k, v)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error":{"message":"try again","type":"server_error"}}`))
			return
		}
		next.ServeHTTP(w, r)
	}), &calls
}

func demo() http.Handler { return demobackend.New(demobackend.Options{}) }

func chatBody(stream bool) string {
	return `{"model":"auto","stream":` + map[bool]string{true: "true", false: "false"}[stream] + `,"messages":[{"role":"user","content":"hello there"}]}`
}

func TestRetriesUntilTheBackendAnswers(t *testing.T) {
	e := newEnv(t, withPolicy(`[{model: small}]`, `        reliability: {retry_count: 2, retry_back_off_base: 1ms, retry_back_off_max: 5ms}
`))
	h, calls := failing(2, http.StatusBadGateway, nil, demo())
	e.ups["small"].setHandler(h)
	resp, body := e.post("/v1/chat/completions", chatBody(false))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if calls.Load() != 3 {
		t.Errorf("upstream called %d times, want 3 (two failures, one answer)", calls.Load())
	}
	if got := resp.Header.Get(dataplane.HeaderAttempts); got != "3" {
		t.Errorf("x-junction-attempts = %q, want 3", got)
	}
	if got := resp.Header.Get(dataplane.HeaderFallbackFrom); got != "" {
		t.Errorf("x-junction-fallback-from = %q on a retry of the same model", got)
	}
	if got := e.errors("small", "upstream_5xx"); got != 2 {
		t.Errorf("llm_request_errors_total{small,upstream_5xx} = %v, want 2 (one per failed attempt)", got)
	}
	if got := e.scalar("llm_model_requests_total", map[string]string{"model": "small"}); got != 3 {
		t.Errorf("llm_model_requests_total{small} = %v, want 3 attempts", got)
	}
	var ans struct {
		Meta struct {
			SelectedModel string `json:"selected_model"`
			Attempts      int    `json:"attempts"`
		} `json:"routing_metadata"`
	}
	if err := json.Unmarshal(body, &ans); err != nil || ans.Meta.Attempts != 3 || ans.Meta.SelectedModel != "small" {
		t.Errorf("routing_metadata = %+v (%v), want attempts 3 from small", ans.Meta, err)
	}
}

func TestRetryCountBoundsTheRetries(t *testing.T) {
	e := newEnv(t, withPolicy(`[{model: small}]`, `        reliability: {retry_count: 1, retry_back_off_base: 1ms}
`))
	h, calls := failing(5, http.StatusServiceUnavailable, nil, demo())
	e.ups["small"].setHandler(h)
	resp, body := e.post("/v1/chat/completions", chatBody(false))
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want the last attempt's 503: %s", resp.StatusCode, body)
	}
	if calls.Load() != 2 {
		t.Errorf("upstream called %d times, want 2", calls.Load())
	}
	if got := e.errors("small", "upstream_5xx"); got != 2 {
		t.Errorf("errors = %v, want 2 (both attempts, the relayed one included)", got)
	}
	if !strings.Contains(string(body), "try again") {
		t.Errorf("the client should get the backend's own error body: %s", body)
	}
}

func TestRetryAfterIsHonouredUpToItsMax(t *testing.T) {
	e := newEnv(t, withPolicy(`[{model: small}]`, `        reliability: {retry_count: 1, retry_after_max: 2s, retry_back_off_base: 1ms}
`))
	h, calls := failing(1, http.StatusServiceUnavailable, map[string]string{"Retry-After": "1"}, demo())
	e.ups["small"].setHandler(h)
	start := time.Now()
	resp, body := e.post("/v1/chat/completions", chatBody(false))
	if resp.StatusCode != http.StatusOK || calls.Load() != 2 {
		t.Fatalf("status %d after %d calls: %s", resp.StatusCode, calls.Load(), body)
	}
	if el := time.Since(start); el < time.Second {
		t.Errorf("retried after %s, before the backend's Retry-After of 1s", el)
	}

	// A Retry-After beyond retry_after_max ends the retries on that backend.
	h, calls = failing(1, http.StatusTooManyRequests, map[string]string{"Retry-After": "30"}, demo())
	e.ups["small"].setHandler(h)
	start = time.Now()
	resp, _ = e.post("/v1/chat/completions", chatBody(false))
	if resp.StatusCode != http.StatusTooManyRequests || calls.Load() != 1 || time.Since(start) > 5*time.Second {
		t.Errorf("status %d after %d calls in %s: want the 429 at once", resp.StatusCode, calls.Load(), time.Since(start))
	}
}

func TestFallbackToTheNextModelRewritesTheRequest(t *testing.T) {
	e := newEnv(t, withPolicy(`[{model: small, use_reasoning: false}, {model: big, use_reasoning: true}]`,
		`        fallback: {enabled: true}
`))
	h, _ := failing(100, http.StatusInternalServerError, nil, demo())
	e.ups["small"].setHandler(h)
	resp, body := e.post("/v1/chat/completions", chatBody(false))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if got := resp.Header.Get(dataplane.HeaderSelectedModel); got != "big" {
		t.Errorf("x-selected-model = %q, want big (the model that answered)", got)
	}
	if got := resp.Header.Get(dataplane.HeaderFallbackFrom); got != "small" {
		t.Errorf("x-junction-fallback-from = %q, want small", got)
	}
	if got := resp.Header.Get(dataplane.HeaderAttempts); got != "2" {
		t.Errorf("x-junction-attempts = %q, want 2", got)
	}
	first, second := e.ups["small"].last(t), e.ups["big"].last(t)
	if first.Body["model"] != "small" || second.Body["model"] != "big" {
		t.Errorf("models sent: %v then %v", first.Body["model"], second.Body["model"])
	}
	// Each model gets its own family's reasoning syntax, not the other's.
	if kw, _ := first.Body["chat_template_kwargs"].(map[string]any); kw["enable_thinking"] != false {
		t.Errorf("small (qwen3) got chat_template_kwargs %v", first.Body["chat_template_kwargs"])
	}
	kw, _ := second.Body["chat_template_kwargs"].(map[string]any)
	if kw["thinking"] != true || kw["enable_thinking"] != nil {
		t.Errorf("big (deepseek) got chat_template_kwargs %v, want only thinking: true", second.Body["chat_template_kwargs"])
	}
	if second.Header.Get("X-Team") != "research" || first.Header.Get("X-Team") != "" {
		t.Errorf("extra_headers: big got %q, small %q", second.Header.Get("X-Team"), first.Header.Get("X-Team"))
	}
	if second.Header.Get(dataplane.HeaderSelectedModel) != "big" {
		t.Errorf("upstream x-selected-model = %q", second.Header.Get(dataplane.HeaderSelectedModel))
	}
	if got := e.errors("small", "upstream_5xx"); got != 1 {
		t.Errorf("errors{small} = %v, want 1", got)
	}
	if got := e.errors("big", "upstream_5xx"); got != 0 {
		t.Errorf("errors{big} = %v, want 0", got)
	}
	var ans struct {
		Meta struct {
			SelectedModel string `json:"selected_model"`
			FallbackFrom  string `json:"fallback_from"`
		} `json:"routing_metadata"`
	}
	if err := json.Unmarshal(body, &ans); err != nil || ans.Meta.SelectedModel != "big" || ans.Meta.FallbackFrom != "small" {
		t.Errorf("routing_metadata = %+v (%v)", ans.Meta, err)
	}
}

func TestFallbackStatusesAndExplicitModels(t *testing.T) {
	e := newEnv(t, withPolicy(`[{model: small}, {model: big}]`, `        fallback: {enabled: true, retryable_status_codes: [503]}
`))
	// A 400 is the request's fault: no other model is asked.
	h, _ := failing(100, http.StatusBadRequest, nil, demo())
	e.ups["small"].setHandler(h)
	if resp, _ := e.post("/v1/chat/completions", chatBody(false)); resp.StatusCode != http.StatusBadRequest || e.ups["big"].count() != 0 {
		t.Errorf("status %d, big called %d times: a 400 must not fail over", resp.StatusCode, e.ups["big"].count())
	}
	// A client that named its model gets that model or its error.
	h, _ = failing(100, http.StatusServiceUnavailable, nil, demo())
	e.ups["small"].setHandler(h)
	resp, _ := e.post("/v1/chat/completions", `{"model":"small","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != http.StatusServiceUnavailable || e.ups["big"].count() != 0 {
		t.Errorf("status %d, big called %d times: an explicit model must not fail over to another", resp.StatusCode, e.ups["big"].count())
	}
	resp, _ = e.post("/v1/chat/completions", chatBody(false))
	if resp.StatusCode != http.StatusOK || resp.Header.Get(dataplane.HeaderSelectedModel) != "big" {
		t.Errorf("status %d from %q: a 503 fails over", resp.StatusCode, resp.Header.Get(dataplane.HeaderSelectedModel))
	}
}

func TestFirstByteTimeoutFailsOver(t *testing.T) {
	e := newEnv(t, withPolicy(`[{model: small}, {model: big}]`, `        reliability: {first_byte_timeout: 200ms}
        fallback: {enabled: true}
`))
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	e.ups["small"].setHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	start := time.Now()
	resp, body := e.post("/v1/chat/completions", chatBody(false))
	if resp.StatusCode != http.StatusOK || resp.Header.Get(dataplane.HeaderSelectedModel) != "big" {
		t.Fatalf("status %d from %q: %s", resp.StatusCode, resp.Header.Get(dataplane.HeaderSelectedModel), body)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("took %s; the first-byte timeout is 200ms", el)
	}
	if got := e.errors("small", "timeout"); got != 1 {
		t.Errorf("errors{small,timeout} = %v, want 1", got)
	}
}

func TestPerTryTimeoutAnswers504(t *testing.T) {
	e := newEnv(t, withPolicy(`[{model: small}]`, `        reliability: {per_try_timeout: 150ms, retry_count: 1, retry_back_off_base: 1ms}
`))
	var calls atomic.Int32
	e.ups["small"].setHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		<-r.Context().Done()
	}))
	resp, body := e.post("/v1/chat/completions", chatBody(false))
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if calls.Load() != 2 {
		t.Errorf("calls = %d, want 2 (a timed-out try is retried under 5xx)", calls.Load())
	}
	if eb := decodeError(t, body); !strings.Contains(eb.Error.Message, "150ms") {
		t.Errorf("message %q should name the per-try timeout", eb.Error.Message)
	}
	if got := e.errors("small", "timeout"); got != 2 {
		t.Errorf("errors{small,timeout} = %v, want 2", got)
	}
}

func TestFallbackOverBackendRefsAndPassiveHealth(t *testing.T) {
	dead := closedURL(t)
	e := newEnv(t, withYAML(func(y string) string {
		y = strings.Replace(y, `        - {base_url: "{{small}}/v1", provider: openai}`,
			`        - {base_url: "`+dead+`/v1", provider: openai}
        - {base_url: "{{small}}/v1", provider: openai}`, 1)
		return strings.Replace(y, generalDecision, generalDecision+`        fallback: {enabled: true}
`, 1)
	}))
	for i := 0; i < DefaultFailureThreshold; i++ {
		resp, body := e.post("/v1/chat/completions", chatBody(false))
		if resp.StatusCode != http.StatusOK || resp.Header.Get(dataplane.HeaderAttempts) != "2" {
			t.Fatalf("request %d: status %d, attempts %q: %s", i, resp.StatusCode, resp.Header.Get(dataplane.HeaderAttempts), body)
		}
		if resp.Header.Get(dataplane.HeaderFallbackFrom) != "" {
			t.Errorf("another backend of the same model is not a model fallback")
		}
	}
	// The dead backend failed DefaultFailureThreshold times: it is ejected
	// and skipped for its cool-down.
	resp, _ := e.post("/v1/chat/completions", chatBody(false))
	if resp.StatusCode != http.StatusOK || resp.Header.Get(dataplane.HeaderAttempts) != "1" {
		t.Errorf("after ejection: status %d, attempts %q, want 1", resp.StatusCode, resp.Header.Get(dataplane.HeaderAttempts))
	}
	if got := e.errors("small", "upstream_5xx"); got != DefaultFailureThreshold {
		t.Errorf("errors{small,upstream_5xx} = %v, want %d (one per connection failure)", got, DefaultFailureThreshold)
	}
	// The ejection is visible in the metrics and the status snapshot.
	deadKey := dead + "/v1"
	if got := e.scalar("junction_upstream_backend_ejected", map[string]string{"backend": deadKey}); got != 1 {
		t.Errorf("junction_upstream_backend_ejected{%s} = %v, want 1", deadKey, got)
	}
	if got := e.scalar("junction_upstream_backend_ejections_total", map[string]string{"backend": deadKey}); got != 1 {
		t.Errorf("junction_upstream_backend_ejections_total = %v, want 1", got)
	}
	if got := e.scalar("junction_upstream_backend_ejected", map[string]string{"backend": e.ups["small"].srv.URL + "/v1"}); got != 0 {
		t.Errorf("the healthy backend reads ejected = %v", got)
	}
	found := false
	for _, b := range e.server.ups.Health().Snapshot() {
		if b.Backend == deadKey {
			found = b.Ejected && b.ConsecutiveFailures == DefaultFailureThreshold && b.Ejections == 1
		}
	}
	if !found {
		t.Errorf("snapshot %+v does not report %s ejected", e.server.ups.Health().Snapshot(), deadKey)
	}
}

func TestPreferredEndpointIsTriedFirst(t *testing.T) {
	e := newEnv(t, withYAML(func(y string) string {
		y = strings.Replace(y, `        - {base_url: "{{small}}/v1", provider: openai}`,
			`        - {base_url: "{{coder}}/v1", provider: openai}
        - {base_url: "{{small}}/v1", provider: openai}`, 1)
		return strings.Replace(y, generalDecision, generalDecision+`        preferred_endpoints: ["{{small}}/v1"]
`, 1)
	}))
	resp, body := e.post("/v1/chat/completions", chatBody(false))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if e.ups["small"].count() != 1 || e.ups["coder"].count() != 0 {
		t.Errorf("preferred backend got %d requests, the first backend_ref %d", e.ups["small"].count(), e.ups["coder"].count())
	}
}

func TestStreamFailsOverBeforeItsFirstByte(t *testing.T) {
	e := newEnv(t, withPolicy(`[{model: small}, {model: big}]`, `        fallback: {enabled: true}
`))
	// small sends its status line, then dies before the first event.
	e.ups["small"].setHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	stream := e.client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:    "auto",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello there")},
	})
	var text strings.Builder
	for stream.Next() {
		for _, c := range stream.Current().Choices {
			text.WriteString(c.Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if text.Len() == 0 || e.ups["big"].count() != 1 {
		t.Errorf("text %q, big called %d times: the stream should come whole from big", text.String(), e.ups["big"].count())
	}
	if got := e.errors("small", "upstream_5xx"); got != 1 {
		t.Errorf("errors{small} = %v, want 1", got)
	}
}

func TestStreamBrokenAfterItsFirstByteEndsWithAnError(t *testing.T) {
	e := newEnv(t, withPolicy(`[{model: small}, {model: big}]`, `        reliability: {retry_count: 2, retry_back_off_base: 1ms}
        fallback: {enabled: true}
`))
	e.ups["small"].setHandler(demobackend.New(demobackend.Options{FailAfterChunks: 2}))
	stream := e.client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:    "auto",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello there")},
	})
	chunks := 0
	for stream.Next() {
		chunks++
	}
	err := stream.Err()
	if err == nil || !strings.Contains(err.Error(), "broke off") {
		t.Fatalf("after %d chunks: err = %v, want the gateway's error event", chunks, err)
	}
	if chunks == 0 {
		t.Error("the chunks before the break should reach the client")
	}
	if e.ups["small"].count() != 1 || e.ups["big"].count() != 0 {
		t.Errorf("small called %d, big %d times: a stream that began is neither retried nor failed over", e.ups["small"].count(), e.ups["big"].count())
	}
}

func TestTotalTimeoutEndsAStream(t *testing.T) {
	e := newEnv(t, withPolicy(`[{model: small}]`, `        reliability: {total_timeout: 300ms}
`))
	e.ups["small"].setHandler(demobackend.New(demobackend.Options{ChunkDelay: 100 * time.Millisecond}))
	start := time.Now()
	stream := e.client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:    "auto",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello there")},
	})
	for stream.Next() {
	}
	err := stream.Err()
	if err == nil || !strings.Contains(err.Error(), "total_timeout of 300ms") {
		t.Fatalf("err = %v, want the stream ended by the total timeout", err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("stream ran %s past a 300ms total timeout", el)
	}
	if got := e.errors("small", "timeout"); got != 1 {
		t.Errorf("errors{small,timeout} = %v, want 1", got)
	}
}
