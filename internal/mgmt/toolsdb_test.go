package mgmt_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/extmodel/extmodeltest"
)

func writeTools(t *testing.T, path string, names ...string) {
	t.Helper()
	var tools []string
	for _, n := range names {
		tools = append(tools, fmt.Sprintf(`{"type": "function", "function": {"name": %q, "description": %q}}`, n, strings.ReplaceAll(n, "_", " ")))
	}
	if err := os.WriteFile(path, []byte("["+strings.Join(tools, ",\n")+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestToolSelectionToolsDBPath: tool_selection's tools_db_path (spec 001
// "Tools selection") is read by the host when the configuration is parsed
// and handed to the plugin as tools_db: a probe selects from the file's
// tools; an applied configuration reads the file again; validation refuses
// a missing or malformed file and a configuration with both, at the
// plugin's JSON pointer.
func TestToolSelectionToolsDBPath(t *testing.T) {
	toolsFile := filepath.Join(t.TempDir(), "tools_db.json")
	writeTools(t, toolsFile, "get_weather", "send_email")
	decisions := strings.Replace(guardDecisions, `similarity_threshold: "0.05"}`, fmt.Sprintf(`similarity_threshold: "0.05", tools_db_path: %q}`, toolsFile), 1)
	e := newGuardEnvWith(t, extmodeltest.New(t, extmodeltest.Answer{Content: "no"}), decisions)

	probe := func(prompt string) string {
		req := map[string]any{"model": "MoM", "messages": []any{map[string]any{"role": "user", "content": prompt}}}
		p := must(t, e.call("POST", "/api/v1/plugins/tool_selection/preview", map[string]any{"mode": "probe", "binding": map[string]any{"recipe": "default", "decision": "picked"}, "request": req}), 200).json(t)
		if report(t, p)["status"] == "error" {
			t.Fatalf("probe: %v", p)
		}
		return fmt.Sprint(p["request"])
	}
	if body := probe("weather forecast in Oslo"); !strings.Contains(body, "get_weather") || strings.Contains(body, "send_email") {
		t.Fatalf("probe over the file's tools: %s", body)
	}
	// The persisted document keeps the path, not the tools.
	cur := must(t, e.call("GET", "/api/v1/config", nil), 200)
	if !strings.Contains(string(cur.body), "tools_db_path") || strings.Contains(string(cur.body), "get_weather") {
		t.Fatalf("persisted document: %s", cur.body)
	}

	// An applied configuration reads the file again.
	writeTools(t, toolsFile, "book_flight", "send_email")
	must(t, e.call("PATCH", "/api/v1/config", map[string]any{"providers": map[string]any{"defaults": map[string]any{"default_model": "big"}}}, "If-Match", e.etag()), 200)
	if body := probe("book a flight to Oslo"); !strings.Contains(body, "book_flight") || strings.Contains(body, "get_weather") {
		t.Fatalf("probe after the reload: %s", body)
	}

	// Validation refuses what cannot be used, naming the path.
	base := string(must(t, e.call("GET", "/api/v1/config", nil), 200).body)
	ptr := "/recipes/0/decisions/"
	for name, c := range map[string]struct {
		edit func(string) string
		want string
	}{
		"missing": {func(s string) string { return strings.Replace(s, toolsFile, toolsFile+".gone", 1) }, "cannot be read"},
		"malformed": {func(s string) string {
			bad := filepath.Join(t.TempDir(), "bad.json")
			_ = os.WriteFile(bad, []byte(`[{"type": "function", "function": {}}]`), 0o644)
			return strings.Replace(s, toolsFile, bad, 1)
		}, "[0] must be a tool object with function.name"},
		"both": {func(s string) string {
			return strings.Replace(s, `"tools_db_path":`, `"tools_db":[{"type":"function","function":{"name":"x"}}],"tools_db_path":`, 1)
		}, "not both"},
	} {
		v := must(t, e.call("POST", "/api/v1/config/validate", c.edit(base)), 200).json(t)
		reasons := fmt.Sprint(v["reasons"])
		if v["valid"] != false || !strings.Contains(reasons, ptr) || !strings.Contains(reasons, "/configuration/tools_db_path") || !strings.Contains(reasons, c.want) {
			t.Errorf("%s: %v", name, v)
		}
	}
}
