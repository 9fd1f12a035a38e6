package gateway

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/plugin/native"
)

// BenchmarkGatewayOverhead sends the same chat request to a fast in-process
// upstream directly and through the gateway (routing, rewrite, forwarding,
// metrics); the difference of the two ns/op is the gateway's overhead per
// request on loopback.
func BenchmarkGatewayOverhead(b *testing.B) {
	answer := []byte(`{"id":"c","object":"chat.completion","created":1,"model":"small","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	defer upstream.Close()

	cfg := strings.NewReplacer("{{up}}", upstream.URL).Replace(`
version: v1
providers:
  defaults: {default_model: small}
  reasoning_families:
    qwen3: {type: chat_template_kwargs, parameter: enable_thinking}
  models:
    - name: small
      reasoning_family: qwen3
      pricing: {prompt_per_1m: 0.1, completion_per_1m: 0.4}
      backend_refs: [{base_url: "{{up}}/v1", provider: openai}]
` + benchRecipes["keyword"])
	o, _ := benchOptions(b, cfg, UpstreamOptions{})
	o.Plugins = native.Stage()
	gw := httptest.NewServer(New(o))
	defer gw.Close()

	body := []byte(`{"model":"MoM","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"What is the capital of France? Answer briefly."}],"max_tokens":64,"temperature":0.2}`)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	run := func(b *testing.B, url string) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			resp, err := client.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	}
	b.Run("direct", func(b *testing.B) { run(b, upstream.URL+"/v1/chat/completions") })
	b.Run("gateway", func(b *testing.B) { run(b, gw.URL+"/v1/chat/completions") })
}
