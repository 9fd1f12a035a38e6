package junction

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/postgres"
	"github.com/junction-router/junction/internal/storage/postgres/pgtest"
	"github.com/junction-router/junction/recipes"
)

// replayConfig routes "urgent" requests to big and the rest to small, both
// decisions keeping decision records (the rest's without the prompt, and
// at most 3).
const replayConfig = `{version: v1,
  providers: {defaults: {default_model: small}, models: [
    {name: small, backend_refs: [{provider: demo}], pricing: {currency: USD, prompt_per_1m: 1, completion_per_1m: 2}},
    {name: big, backend_refs: [{provider: demo}], pricing: {currency: USD, prompt_per_1m: 10, completion_per_1m: 20}}]},
  recipes: [{name: default,
    signals: {keywords: [{name: urgent, keywords: [urgent, asap]}], pii: [{name: contact, types: [EMAIL]}]},
    decisions: [
      {name: urgent, priority: 200, rules: {operator: OR, conditions: [{type: keyword, name: urgent}]}, modelRefs: [{model: big}],
       plugins: [{type: router_replay, configuration: {record_prompt: true}}]},
      {name: rest, rules: {operator: AND, conditions: []}, modelRefs: [{model: small}],
       plugins: [{type: router_replay, configuration: {max_records: 3}}]}]}]}`

func startReplayServer(t *testing.T, global string) *Server {
	t.Helper()
	src := replayConfig
	if global != "" {
		src = strings.TrimSuffix(src, "}") + ", global: " + global + "}"
	}
	doc, err := recipes.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Document: doc, DataDir: t.TempDir(), ListenerAddrs: map[string]string{"public": "127.0.0.1:0"}, DisableExtproc: true,
		ManagementAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", SignalModels: SignalModelsLexical})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Run(context.Background()) }()
	<-s.Ready()
	if s.GatewayAddr() == "" {
		t.Fatalf("not serving: %v", <-errc)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		<-errc
	})
	return s
}

func call(t *testing.T, method, url string, body any, header map[string]string) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func chatBody(text string, stream bool) map[string]any {
	return map[string]any{"model": "MoM", "stream": stream, "messages": []map[string]string{{"role": "user", "content": text}}}
}

// Requests routed through the gateway leave decision records that the
// management API lists, filters, shows and evaluates a candidate against,
// and outcomes submitted on them become router_classification_accuracy.
func TestReplayLoop(t *testing.T) { replayLoop(t, startReplayServer(t, "")) }

// The same loop with the records in PostgreSQL (global.storage.backend).
func TestReplayLoopPostgres(t *testing.T) {
	const env = "JUNCTION_TEST_REPLAY_PG_DSN"
	dsn := pgtest.Schema(t)
	t.Setenv(env, dsn)
	replayLoop(t, startReplayServer(t, `{storage: {backend: postgres, postgres: {dsn_env: `+env+`}}}`))
	pg, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if p, err := pg.ListReplays(context.Background(), storage.ReplayQuery{}, storage.ListOptions{Limit: 100}); err != nil || len(p.Data) < 5 {
		t.Fatalf("the records are not in PostgreSQL: %d %v", len(p.Data), err)
	}
}

func replayLoop(t *testing.T, s *Server) {
	gw, mg := "http://"+s.GatewayAddr(), "http://"+s.ManagementAddr()
	for i, text := range []string{"urgent: fix the build, mail me at jane.doe@example.com", "hello there", "asap please", "what is 2+2", "tell me a joke", "one more"} {
		if st, b := call(t, "POST", gw+"/v1/chat/completions", chatBody(text, i == 2), map[string]string{"X-Request-Id": fmt.Sprintf("req-%d", i)}); st != 200 {
			t.Fatalf("request %d: %d %s", i, st, b)
		}
	}
	var list struct {
		Data []struct {
			ID, RequestID, Decision, Model string
			Status                         int
			HasInput                       bool    `json:"has_input"`
			Cost                           float64 `json:"cost"`
			LatencyMS                      float64 `json:"latency_ms"`
		}
		HasMore bool `json:"has_more"`
	}
	// Records are written behind the requests: wait for them.
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, b := call(t, "GET", mg+"/api/v1/observability/replays?limit=100", nil, nil)
		if st != 200 {
			t.Fatalf("list: %d %s", st, b)
		}
		list.Data = nil
		if err := json.Unmarshal(b, &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Data) >= 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// urgent: 2 records (with the prompt); rest: 4 requests, bounded to 3.
	byDecision := map[string]int{}
	for _, r := range list.Data {
		byDecision[r.Decision]++
		if r.Status != 200 || r.LatencyMS <= 0 || r.Cost <= 0 {
			t.Errorf("record %+v: want status 200, a latency and a cost", r)
		}
		if r.HasInput != (r.Decision == "urgent") {
			t.Errorf("record %+v: the input is recorded only where record_prompt is on", r)
		}
	}
	if byDecision["urgent"] != 2 || byDecision["rest"] != 3 {
		t.Fatalf("records by decision %v, want urgent 2 and rest 3 (max_records)", byDecision)
	}
	st, b := call(t, "GET", mg+"/api/v1/observability/replays?decision=urgent&model=big&limit=1", nil, nil)
	if err := json.Unmarshal(b, &list); st != 200 || err != nil || len(list.Data) != 1 || !list.HasMore || list.Data[0].Decision != "urgent" {
		t.Fatalf("filtered list: %d %s", st, b)
	}
	st, b = call(t, "GET", mg+"/api/v1/observability/replays?request_id=req-0", nil, nil)
	if err := json.Unmarshal(b, &list); st != 200 || err != nil || len(list.Data) != 1 {
		t.Fatalf("by request id: %d %s", st, b)
	}
	urgentID := list.Data[0].ID
	if st, b := call(t, "GET", mg+"/api/v1/observability/replays?since=2200-01-01T00:00:00Z", nil, nil); st != 200 || !strings.Contains(string(b), `"data":[]`) {
		t.Fatalf("since the future: %d %s", st, b)
	}
	if st, _ := call(t, "GET", mg+"/api/v1/observability/replays?since=yesterday", nil, nil); st != 400 {
		t.Fatalf("a bad since: %d", st)
	}

	st, b = call(t, "GET", mg+"/api/v1/observability/replays/"+urgentID, nil, nil)
	if st != 200 {
		t.Fatalf("get: %d %s", st, b)
	}
	var rec struct {
		Decision, Model string
		ReasonCode      string   `json:"reason_code"`
		MatchedRules    []string `json:"matched_rules"`
		Signals         []struct {
			Type, Name string
			Matched    bool
		}
		Usage *struct {
			PromptTokens int64 `json:"prompt_tokens"`
		}
		Input *struct {
			Text     string
			Redacted []string
		}
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Decision != "urgent" || rec.Model != "big" || rec.ReasonCode != "auto_routing" || len(rec.MatchedRules) != 1 || rec.Usage == nil || rec.Input == nil || len(rec.Signals) == 0 {
		t.Fatalf("record: %s", b)
	}
	if strings.Contains(string(b), "jane.doe@example.com") || !strings.Contains(rec.Input.Text, "[EMAIL]") || len(rec.Input.Redacted) != 1 {
		t.Fatalf("the recorded input keeps personal data: %s", b)
	}
	if st, _ := call(t, "GET", mg+"/api/v1/observability/replays/rpl_nope", nil, nil); st != 404 {
		t.Fatalf("an unknown replay: %d", st)
	}

	// A candidate that sends urgent traffic to small: both urgent records
	// change model, cost falls; the rest stays.
	st, b = call(t, "POST", mg+"/api/v1/observability/replays/evaluate", map[string]any{
		"recipe_patch": map[string]any{"recipe": "default", "patch": map[string]any{"decisions": []any{
			map[string]any{"name": "urgent", "priority": 200, "rules": map[string]any{"operator": "OR", "conditions": []any{map[string]any{"type": "keyword", "name": "urgent"}}}, "modelRefs": []any{map[string]any{"model": "small"}}},
			map[string]any{"name": "rest", "rules": map[string]any{"operator": "AND", "conditions": []any{}}, "modelRefs": []any{map[string]any{"model": "small"}}},
		}}},
	}, nil)
	if st != 200 {
		t.Fatalf("evaluate: %d %s", st, b)
	}
	var ev struct {
		Records, Evaluated, Skipped, Changed int
		FromSignals                          int            `json:"from_signals"`
		ModelChanged                         int            `json:"model_changed"`
		BaselineMismatches                   int            `json:"baseline_mismatches"`
		SkippedReasons                       map[string]int `json:"skipped_reasons"`
		Applied                              bool
		ByDecision                           []struct {
			Decision          string
			Requests, Changed int
			CostBefore        float64 `json:"cost_before"`
			CostDelta         float64 `json:"cost_delta"`
		} `json:"by_decision"`
		Changes []struct {
			ReplayID  string `json:"replay_id"`
			FromModel string `json:"from_model"`
			ToModel   string `json:"to_model"`
		}
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	// The rest's records (no input) are routed from their recorded signals.
	if ev.Records != 5 || ev.Evaluated != 5 || ev.FromSignals != 3 || ev.Skipped != 0 || ev.Changed != 2 || ev.ModelChanged != 2 || ev.BaselineMismatches != 0 || ev.Applied {
		t.Fatalf("evaluation: %s", b)
	}
	if len(ev.ByDecision) != 2 || ev.ByDecision[1].Decision != "urgent" || ev.ByDecision[1].Changed != 2 || ev.ByDecision[1].CostDelta >= 0 || ev.ByDecision[1].CostBefore <= 0 ||
		ev.ByDecision[0].Decision != "rest" || ev.ByDecision[0].Changed != 0 || ev.ByDecision[0].Requests != 3 {
		t.Fatalf("by decision: %s", b)
	}
	if len(ev.Changes) != 2 || ev.Changes[0].FromModel != "big" || ev.Changes[0].ToModel != "small" {
		t.Fatalf("changes: %s", b)
	}
	// Nothing was applied: the next urgent request still goes to big.
	if st, b := call(t, "POST", gw+"/v1/chat/completions", chatBody("urgent again", false), nil); st != 200 || !strings.Contains(string(b), "big") {
		t.Fatalf("after the evaluation: %d %s", st, b)
	}
	if st, b := call(t, "POST", mg+"/api/v1/observability/replays/evaluate", map[string]any{"patch": map[string]any{}, "config": map[string]any{}}, nil); st != 400 {
		t.Fatalf("two candidates: %d %s", st, b)
	}

	// Outcomes: idempotent per key, 404 for an unknown replay, 400 for a
	// verdict decision does not take; the accuracy metric follows.
	outcome := map[string]any{"replay_id": urgentID, "target": "decision", "verdict": "correct", "score": 1, "source": "judge"}
	key := map[string]string{"Idempotency-Key": "k-1"}
	st, b = call(t, "POST", mg+"/api/v1/observability/outcomes", outcome, key)
	if st != 201 || !strings.Contains(string(b), `"category":"urgent"`) || !strings.Contains(string(b), `"principal":"anonymous"`) {
		t.Fatalf("outcome: %d %s", st, b)
	}
	first := string(b)
	st, b = call(t, "POST", mg+"/api/v1/observability/outcomes", outcome, key)
	if st != 200 || !strings.Contains(string(b), `"replayed":true`) || first[:40] != string(b)[:40] {
		t.Fatalf("a retry: %d %s", st, b)
	}
	outcome["verdict"] = "incorrect"
	if st, b := call(t, "POST", mg+"/api/v1/observability/outcomes", outcome, key); st != 409 {
		t.Fatalf("the key for another outcome: %d %s", st, b)
	}
	if st, b := call(t, "POST", mg+"/api/v1/observability/outcomes", outcome, nil); st != 201 {
		t.Fatalf("a second verdict: %d %s", st, b)
	}
	if st, _ := call(t, "POST", mg+"/api/v1/observability/outcomes", map[string]any{"replay_id": "rpl_nope", "target": "decision", "verdict": "correct"}, nil); st != 404 {
		t.Fatalf("an unknown replay: %d", st)
	}
	if st, _ := call(t, "POST", mg+"/api/v1/observability/outcomes", map[string]any{"replay_id": urgentID, "target": "decision", "verdict": "meh"}, nil); st != 400 {
		t.Fatalf("a verdict decision does not take: %d", st)
	}
	if st, _ := call(t, "POST", mg+"/api/v1/observability/outcomes", map[string]any{"replay_id": urgentID, "target": "answer", "verdict": "helpful"}, nil); st != 201 {
		t.Fatalf("another target: %d", st)
	}
	_, metrics := call(t, "GET", "http://"+s.MetricsAddr()+"/metrics", nil, nil)
	if !strings.Contains(string(metrics), `router_classification_accuracy{category="urgent"} 0.5`) {
		t.Fatalf("accuracy: %s", grepLines(string(metrics), "router_classification_accuracy"))
	}
	if !strings.Contains(string(metrics), `junction_replay_records_total{result="recorded"} `) {
		t.Fatalf("recorder metrics: %s", grepLines(string(metrics), "junction_replay"))
	}
	_, audit := call(t, "GET", mg+"/api/v1/observability/audit?action=observability.outcome.create", nil, nil)
	if strings.Count(string(audit), `"observability.outcome.create"`) < 4 {
		t.Fatalf("audit: %s", audit)
	}

	// The plugin's preview records nothing and says so.
	st, b = call(t, "POST", mg+"/api/v1/plugins/router_replay/preview", map[string]any{"configuration": map[string]any{}, "request": chatBody("urgent", false)}, nil)
	if st != 200 || !strings.Contains(string(b), `"status":"skipped"`) || !strings.Contains(string(b), "records and sends nothing") || !strings.Contains(string(b), `"persisted":false`) {
		t.Fatalf("preview: %d %s", st, b)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A decision with shadow_dispatch sends a copy to the shadow model (here a
// real HTTP server that answers slowly) after the real answer: the client
// does not wait for it, the answer is the real model's, and the record
// holds both outcomes.
func TestShadowDispatch(t *testing.T) {
	type seen struct {
		body   map[string]any
		header http.Header
	}
	got := make(chan seen, 4)
	shadow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		got <- seen{body, r.Header.Clone()}
		time.Sleep(400 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","model":"shadow","choices":[{"index":0,"message":{"role":"assistant","content":"shadowed"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":500,"total_tokens":1500}}`)
	}))
	defer shadow.Close()
	doc, err := recipes.Parse([]byte(`{version: v1,
  providers: {defaults: {default_model: main}, models: [
    {name: main, backend_refs: [{provider: demo}]},
    {name: shadow, backend_refs: [{base_url: "` + shadow.URL + `/v1"}], pricing: {currency: USD, prompt_per_1m: 1, completion_per_1m: 2}}]},
  recipes: [{name: default, decisions: [{name: all, rules: {operator: AND, conditions: []}, modelRefs: [{model: main}],
    plugins: [{type: router_replay}, {type: shadow_dispatch, configuration: {model: shadow, timeout_ms: 5000}}]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Document: doc, DataDir: t.TempDir(), ListenerAddrs: map[string]string{"public": "127.0.0.1:0"}, DisableExtproc: true,
		ManagementAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", SignalModels: SignalModelsLexical})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Run(context.Background()) }()
	<-s.Ready()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		<-errc
	}()
	gw, mg := "http://"+s.GatewayAddr(), "http://"+s.ManagementAddr()
	for _, stream := range []bool{false, true} {
		start := time.Now()
		st, b := call(t, "POST", gw+"/v1/chat/completions", chatBody("hello", stream), map[string]string{"X-Request-Id": fmt.Sprintf("sh-%v", stream)})
		if d := time.Since(start); st != 200 || d > 300*time.Millisecond {
			t.Fatalf("stream %v: %d after %v (the shadow answers after 400 ms; the client must not wait for it): %s", stream, st, d, b)
		}
		if strings.Contains(string(b), "shadowed") {
			t.Fatalf("the client got the shadow's answer: %s", b)
		}
		select {
		case sn := <-got:
			if sn.body["model"] != "shadow" || sn.body["stream"] != nil || sn.header.Get("X-Request-Id") != fmt.Sprintf("sh-%v-shadow", stream) {
				t.Fatalf("the shadow copy: %v %v", sn.body, sn.header)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no shadow copy arrived")
		}
	}
	var rec struct {
		Model  string
		Shadow *struct {
			Model     string
			Status    int
			LatencyMS float64 `json:"latency_ms"`
			Cost      float64
			Error     string
			Usage     *struct {
				CompletionTokens int64 `json:"completion_tokens"`
			}
		}
	}
	for _, id := range []string{"sh-false", "sh-true"} {
		var b []byte
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			var st int
			st, b = call(t, "GET", mg+"/api/v1/observability/replays?request_id="+id, nil, nil)
			if st == 200 && strings.Contains(string(b), `"has_shadow":true`) {
				break
			}
		}
		var list struct{ Data []struct{ ID string } }
		if err := json.Unmarshal(b, &list); err != nil || len(list.Data) != 1 {
			t.Fatalf("%s: %s", id, b)
		}
		_, b = call(t, "GET", mg+"/api/v1/observability/replays/"+list.Data[0].ID, nil, nil)
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatal(err)
		}
		if sh := rec.Shadow; rec.Model != "main" || sh == nil || sh.Model != "shadow" || sh.Status != 200 || sh.LatencyMS < 400 || sh.Error != "" || sh.Usage == nil || sh.Usage.CompletionTokens != 500 || sh.Cost != 0.002 {
			t.Fatalf("%s: the record: %s", id, b)
		}
	}
}
