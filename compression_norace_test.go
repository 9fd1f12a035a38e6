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
// within budget, one compressed) and context recovery says there is
// nothing to invalidate.
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
	if h["status"] != "ok" || h["bindings"] != 1.0 || h["valid_bindings"] != 1.0 || h["stats_available"] != true || h["recovery_state"] != false {
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

	req, _ := http.NewRequest("POST", cs.mgmt+"/api/v1/storage/context-recovery/invalidate", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 501 || !strings.Contains(string(b), "NOT_IMPLEMENTED") || !strings.Contains(string(b), "keeps nothing of what it drops") {
		t.Fatalf("context recovery: %d %s", resp.StatusCode, b)
	}
}
