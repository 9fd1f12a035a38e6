//go:build !race

package junction

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestContextCompressionOperations serves context_compression on the
// catch-all decision and drives it through the gateway: the management
// API's health reports the binding, stats count the live runs (one request
// within budget, two compressed) and context recovery finds and removes
// the records of what the compressed ones dropped.
func TestContextCompressionOperations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	cfg := strings.Replace(cacheConfig, `          - type: response_cache
            configuration: {mode: exact, ttl_seconds: 600}`, `          - type: context_compression
            configuration: {max_tokens: 200, keep_recent_turns: 1}`, 1)
	cfg = strings.Replace(cfg, "    response_cache: {backend: BACKEND}\n", "    response_api: {enabled: false}\n", 1)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cs := startCacheServer(t, path, t.TempDir())

	h := cs.call("GET", "/api/v1/plugins/context_compression/health", "", nil)
	if h["status"] != "ok" || h["bindings"] != 1.0 || h["valid_bindings"] != 1.0 || h["stats_available"] != true || h["recovery_state"] != true {
		t.Fatalf("health: %v", h)
	}
	send := func(messages string) {
		resp, err := http.Post(cs.gw+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"MoM","messages":[`+messages+`]}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	}
	send(`{"role":"user","content":"hello"}`)
	long := strings.Repeat("an older turn that no longer matters much ", 30)
	var turns []string
	for i := range 4 {
		turns = append(turns, fmt.Sprintf(`{"role":"user","content":%q},{"role":"assistant","content":%q}`, long, fmt.Sprint("answer ", i)))
	}
	send(strings.Join(turns, ",") + `,{"role":"user","content":"and now?"}`)
	// The newest turn alone is over the budget: compressed, still over.
	send(strings.Join(turns, ",") + fmt.Sprintf(`,{"role":"user","content":%q}`, strings.Repeat("a question far longer than the budget ", 40)))

	s := cs.call("GET", "/api/v1/observability/plugins/context_compression/stats", "", nil)
	if s["runs"] != 3.0 || s["compressed"] != 2.0 || s["within_budget"] != 1.0 || s["failed"] != 0.0 || s["over_budget"] != 1.0 {
		t.Fatalf("stats runs: %v", s)
	}
	before, after := s["tokens_before"].(float64), s["tokens_after"].(float64)
	if before <= after || s["tokens_saved"] != before-after || s["messages_dropped"].(float64) < 6 || s["saved_ratio"].(float64) <= 0.5 {
		t.Fatalf("stats sums: %v", s)
	}
	c := cs.call("GET", "/api/v1/plugins/context_compression/capabilities", "", nil)
	if fmt.Sprint(c["features"]) != "[preview health stats]" {
		t.Fatalf("capabilities: %v", c)
	}

	// Each compressed request left a recovery record of what it dropped,
	// found by its scope and id, removed by the invalidation, audited.
	invalidate := func(body string) float64 {
		t.Helper()
		r := cs.call("POST", "/api/v1/storage/context-recovery/invalidate", "application/json", strings.NewReader(body))
		return r["records"].(float64)
	}
	for body, want := range map[string]float64{
		`{"dry_run":true}`: 2, `{"dry_run":true,"recipe":"default","decision":"general","model":"small"}`: 2,
		`{"dry_run":true,"decision":"urgent"}`: 0, `{"dry_run":true,"model":"big"}`: 0, `{"dry_run":true,"id_prefix":"cr_"}`: 2,
		`{"dry_run":true,"older_than":3600}`: 0, `{"dry_run":true,"older_than":"2000-01-01T00:00:00Z"}`: 0,
	} {
		if n := invalidate(body); n != want {
			t.Fatalf("%s: %v records, want %v", body, n, want)
		}
	}
	if n := invalidate(`{"decision":"general"}`); n != 2 {
		t.Fatalf("invalidated %v records, want 2", n)
	}
	if n := invalidate(`{"dry_run":true}`); n != 0 {
		t.Fatalf("%v records left after the invalidation", n)
	}
	a := cs.call("GET", "/api/v1/observability/audit?action=storage.context_recovery.invalidate", "", nil)
	if es, _ := a["entries"].([]any); len(es) != 9 { // dry runs are audited too
		t.Fatalf("audit: %v", a)
	}
	req, _ := http.NewRequest("POST", cs.mgmt+"/api/v1/storage/context-recovery/invalidate", strings.NewReader(`{"id_prefix":"x"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "cr_") {
		t.Fatalf("a foreign id prefix: %d %s", resp.StatusCode, b)
	}
}
