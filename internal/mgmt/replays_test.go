package mgmt_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/storage"
)

func TestReplayRoutesRefuseHostileInput(t *testing.T) {
	e := newStorageEnv(t, baseConfig(t), nil, 0)
	rec := `{"id":"x","recipe":"default","decision":"rest","model":"small","status":200,"latency_ms":5,"signals":[],"input":{"text":"hello","user_texts":["hello"],"all_texts":["hello"]}}`
	rs := []storage.Replay{{Recipe: "default", Decision: "rest", Model: "small", Status: 200, RequestID: "r1", Record: []byte(rec)},
		{Recipe: "default", Model: "small", Status: 403, RequestID: "r2", Record: []byte(`{"recipe":"default","status":403,"signals":[]}`)}}
	if err := e.store.PutReplays(context.Background(), rs, nil); err != nil {
		t.Fatal(err)
	}
	ok := func(r reply, what string) {
		t.Helper()
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", what, r.status, r.body)
		}
	}
	ok(e.call("GET", "/api/v1/observability/replays?decision=-", nil), "no decision")
	if r := e.call("GET", "/api/v1/observability/replays?decision=-", nil); !strings.Contains(string(r.body), rs[1].ID) || strings.Contains(string(r.body), rs[0].ID) {
		t.Fatalf("decision -: %s", r.body)
	}
	if r := e.call("GET", "/api/v1/observability/replays/"+rs[0].ID, nil); r.status != 200 || !strings.Contains(string(r.body), `"text":"hello"`) {
		t.Fatalf("get: %d %s", r.status, r.body)
	}
	for _, q := range []string{"limit=0", "limit=101", "order=sideways", "since=soon", "until=99999999999", "since=1800-01-01T00:00:00Z", "after=" + strings.Repeat("a", 200)} {
		if r := e.call("GET", "/api/v1/observability/replays?"+q, nil); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", q, r.status, r.body)
		}
	}
	for _, id := range []string{"rpl_nope", "..%2F..%2Fetc", strings.Repeat("x", 300)} {
		if r := e.call("GET", "/api/v1/observability/replays/"+id, nil); r.status != http.StatusNotFound {
			t.Errorf("get %q: %d", id, r.status)
		}
	}

	for body, want := range map[string]int{
		`{}`:                       400,
		`{"patch":{},"config":{}}`: 400,
		`{"patch":[1]}`:            400,
		`{"patch":"x"}`:            400,
		`{"recipe_patch":{"recipe":"nope","patch":{}}}`:                                                    404,
		`{"recipe_patch":{"recipe":"default","patch":[]}}`:                                                 400,
		`{"patch":{},"window":{"limit":100001}}`:                                                           400,
		`{"patch":{},"window":{"since":"bad"}}`:                                                            400,
		`{"patch":{},"changes_limit":5000}`:                                                                400,
		`{"patch":{},"surprise":1}`:                                                                        400,
		`{"config":{"version":"v1","recipes":"x"}}`:                                                        400,
		`{"patch":{"recipes":[{"name":"default","decisions":[{"name":"d","rules":{"operator":"XOR"}}]}]}}`: 400,
		`{"patch":{}}`: 200,
		`{"recipe_patch":{"recipe":"default","patch":{"description":"x"}},"window":{"decision":"rest","since":"2020-01-01T00:00:00Z","limit":5}}`: 200,
	} {
		if r := e.call("POST", "/api/v1/observability/replays/evaluate", body); r.status != want {
			t.Errorf("evaluate %s: %d, want %d: %s", body, r.status, want, r.body)
		}
	}
	r := e.call("POST", "/api/v1/observability/replays/evaluate", `{"patch":{}}`)
	if v := r.json(t); v["records"] != float64(2) || v["evaluated"] != float64(2) || v["from_signals"] != float64(1) || v["applied"] != false {
		t.Fatalf("evaluate the active configuration: %s", r.body)
	}

	long := strings.Repeat("k", 256)
	for body, want := range map[string]int{
		`{"replay_id":"` + rs[0].ID + `","target":"decision"}`:                                      400,
		`{"replay_id":"","target":"decision","verdict":"correct"}`:                                  400,
		`{"replay_id":"` + rs[0].ID + `","target":"decision","verdict":"maybe"}`:                    400,
		`{"replay_id":"` + rs[0].ID + `","target":"` + long + long + `","verdict":"x"}`:             400,
		`{"replay_id":"` + rs[0].ID + `","target":"decision","verdict":"correct","score":"high"}`:   400,
		`{"replay_id":"` + rs[0].ID + `","target":"decision","verdict":"correct","extra":true}`:     400,
		`{"replay_id":"rpl_nope","target":"decision","verdict":"correct"}`:                          404,
		`{"replay_id":"` + rs[0].ID + `","target":"decision","verdict":"correct","source":"judge"}`: 201,
	} {
		if r := e.call("POST", "/api/v1/observability/outcomes", body); r.status != want {
			t.Errorf("outcome %s: %d, want %d: %s", body[:min(len(body), 80)], r.status, want, r.body)
		}
	}
	if r := e.call("POST", "/api/v1/observability/outcomes", `{"replay_id":"`+rs[0].ID+`","target":"decision","verdict":"correct"}`, "Idempotency-Key", long); r.status != 400 {
		t.Errorf("a 256-byte Idempotency-Key: %d", r.status)
	}
}

// Replays need data.read (the input's texts secret_view as well), an
// evaluation config.read besides, outcomes learning.ingest; an outcome's
// principal is the token's, whatever source says.
func TestReplayPermissions(t *testing.T) {
	t.Setenv("JUNCTION_TEST_READER", "reader-token-1")
	t.Setenv("JUNCTION_TEST_JUDGE", "judge-token-2")
	t.Setenv("JUNCTION_TEST_ADMIN", "admin-token-3")
	cfg := strings.Replace(baseConfig(t), "    api: {batch_classification: {max_batch_size: 4}}", `    api: {batch_classification: {max_batch_size: 4}}
    management_api:
      auth:
        mode: bearer
        roles:
          - {name: reader, permissions: [data.read]}
          - {name: judge, permissions: [learning.ingest]}
          - {name: admin, permissions: [data.read, config.read, secret_view, learning.ingest, audit.read]}
        tokens:
          - {name: rita, roles: [reader], env: JUNCTION_TEST_READER}
          - {name: jude, roles: [judge], env: JUNCTION_TEST_JUDGE}
          - {name: ada, roles: [admin], env: JUNCTION_TEST_ADMIN}`, 1)
	e := newStorageEnv(t, cfg, nil, 0)
	rp := storage.Replay{Recipe: "default", Decision: "rest", Model: "small", Status: 200,
		Record: []byte(`{"recipe":"default","decision":"rest","model":"small","status":200,"signals":[],"input":{"text":"my secret plan","user_texts":["my secret plan"],"all_texts":["my secret plan"]}}`)}
	if err := e.store.PutReplays(context.Background(), []storage.Replay{rp}, nil); err != nil {
		t.Fatal(err)
	}
	var id string
	_ = e.store.ScanReplays(context.Background(), storage.ReplayQuery{}, 1, func(r storage.Replay) error { id = r.ID; return nil })
	outcome := map[string]any{"replay_id": id, "target": "decision", "verdict": "correct", "source": "ada-pretending"}

	if r := e.call("GET", "/api/v1/observability/replays", nil); r.status != 401 {
		t.Fatalf("no token: %d", r.status)
	}
	e.token = "reader-token-1"
	if r := e.call("GET", "/api/v1/observability/replays/"+id, nil); r.status != 200 || strings.Contains(string(r.body), "secret plan") {
		t.Fatalf("reader (no secret_view): %d %s", r.status, r.body)
	}
	if r := e.call("POST", "/api/v1/observability/replays/evaluate", map[string]any{"patch": map[string]any{}}); r.status != 403 {
		t.Fatalf("reader evaluates without config.read: %d %s", r.status, r.body)
	}
	if r := e.call("POST", "/api/v1/observability/outcomes", outcome); r.status != 403 {
		t.Fatalf("reader submits an outcome: %d", r.status)
	}
	e.token = "judge-token-2"
	if r := e.call("GET", "/api/v1/observability/replays", nil); r.status != 403 {
		t.Fatalf("judge lists: %d", r.status)
	}
	r := e.call("POST", "/api/v1/observability/outcomes", outcome)
	if r.status != 201 || r.json(t)["principal"] != "jude" || r.json(t)["source"] != "ada-pretending" {
		t.Fatalf("judge's outcome: %d %s", r.status, r.body)
	}
	e.token = "admin-token-3"
	if r := e.call("GET", "/api/v1/observability/replays/"+id, nil); r.status != 200 || !strings.Contains(string(r.body), "my secret plan") {
		t.Fatalf("admin (secret_view): %d %s", r.status, r.body)
	}
	if r := e.call("POST", "/api/v1/observability/replays/evaluate", map[string]any{"patch": map[string]any{}}); r.status != 200 {
		t.Fatalf("admin evaluates: %d %s", r.status, r.body)
	}
	a := e.call("GET", "/api/v1/observability/audit?action=observability.outcome.create", nil).json(t)
	entries, _ := a["entries"].([]any)
	if len(entries) != 1 || entries[0].(map[string]any)["principal"] != "jude" {
		t.Fatalf("audit: %v", a)
	}
}
