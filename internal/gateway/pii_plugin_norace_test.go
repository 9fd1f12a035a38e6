//go:build !race

package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/plugintest"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/wasm"
	"github.com/junction-router/junction/plugins/builtin"
)

// TestPIISpansReachPlugins serves a request with personal data through the
// gateway: the pii signal detects an e-mail address and two phone numbers,
// and the pii_redact example module, run in the wasm host, masks exactly
// those byte ranges (read through the pii_spans host function) in what the
// upstream receives: in a string content and in text parts, after a
// system_prompt plugin (the built-in module, as serve runs it) has inserted a message before them, with
// multi-byte text around them. The system message is not scanned (only
// user messages are), so it keeps its address. Left out of race builds like
// the other wasm tests: wazero compiles slowly under the race detector.
func TestPIISpansReachPlugins(t *testing.T) {
	ctx := context.Background()
	host, err := hostapi.New(ctx, hostapi.Config{CacheDir: plugintest.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close(context.Background()) })
	var reg hostapi.Registry
	if err := reg.Register("pii_redact", plugintest.Build(t, "../../examples/plugins/piiredact")); err != nil {
		t.Fatal(err)
	}
	if err := builtin.Register(&reg, "system_prompt"); err != nil {
		t.Fatal(err)
	}
	mods, err := wasm.Load(ctx, host, &reg, hostapi.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	runner := plugin.New(mods)
	e := newEnv(t, func(c *envConfig) { c.plugins = runner }, withYAML(func(y string) string {
		y = strings.Replace(y, "- {name: contact, types: [EMAIL], threshold: 0.5, action: block}",
			"- {name: contact, types: [EMAIL, PHONE], threshold: 0.5}", 1)
		return strings.Replace(y, "    decisions:\n", `    decisions:
      - name: private
        priority: 300
        rules: {operator: OR, conditions: [{type: pii, name: contact}]}
        modelRefs: [{model: small}]
        plugins:
          - {type: system_prompt, configuration: {system_prompt: "Mail help@example.com for help."}}
          - {type: pii_redact, configuration: {signals: [contact]}, on_error: fail}
`, 1)
	}))

	resp, body := e.post("/v1/chat/completions", `{"model":"MoM","messages":[
		{"role":"user","content":[
			{"type":"text","text":"Grüße! Call +1 415 555 0100 today"},
			{"type":"image_url","image_url":{"url":"https://example.com/ann@example.org.png"}},
			{"type":"text","text":"or write to bob@example.com — thanks"}]},
		{"role":"assistant","content":"Noted."},
		{"role":"user","content":"I’m at +44 20 7946 0958, ok?"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if got := resp.Header.Get("x-junction-plugins"); !strings.Contains(got, "pii_redact=applied") {
		t.Fatalf("plugins %q: %s", got, body)
	}
	msgs, _ := e.ups["small"].last(t).Body["messages"].([]any)
	if len(msgs) != 4 {
		t.Fatalf("upstream messages: %v", msgs)
	}
	content := func(i int) any { return msgs[i].(map[string]any)["content"] }
	if content(0) != "Mail help@example.com for help." {
		t.Errorf("system message %q: the system prompt is not a user message and is not masked", content(0))
	}
	parts, _ := content(1).([]any)
	if len(parts) != 3 {
		t.Fatalf("parts: %v", content(1))
	}
	text := func(k int) any { return parts[k].(map[string]any)["text"] }
	if text(0) != "Grüße! Call [PHONE] today" || text(2) != "or write to [EMAIL] — thanks" {
		t.Errorf("text parts: %q, %q", text(0), text(2))
	}
	if url := parts[1].(map[string]any)["image_url"].(map[string]any)["url"]; url != "https://example.com/ann@example.org.png" {
		t.Errorf("the image part changed: %v", url)
	}
	if content(2) != "Noted." || content(3) != "I’m at [PHONE], ok?" {
		t.Errorf("messages 2 and 3: %q, %q", content(2), content(3))
	}
}
