package extproc_test

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"

	"github.com/junction-router/junction/internal/extproc/envoytest"
)

// TestBufferedFlow is the deployment of examples/envoy: buffered request and
// response bodies. Junction routes on the body, Envoy re-picks the route on
// x-selected-model, the answer gains routing headers and routing_metadata,
// and the metrics are those of the gateway.
func TestBufferedFlow(t *testing.T) {
	t.Setenv("EXTPROC_TEST_BIG_KEY", "sk-upstream-big")
	e := newEnv(t)
	s := e.open(envoytest.Standard)
	out, err := s.SendRequest(chat(userBody("please prove that 1+1=2", `"temperature":0.5`),
		"accept-encoding", "gzip, br", "proxy-authorization", "Basic abc", "authorization", "Bearer client", "x-custom", "kept"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Immediate != nil {
		t.Fatalf("answered directly: %s", out.Immediate.GetBody())
	}
	up := out.Upstream
	if !out.ClearRouteCache {
		t.Error("the route cache must be cleared so Envoy routes on x-selected-model")
	}
	wantBody := `{"chat_template_kwargs":{"thinking":true},"messages":[{"role":"system","content":"Be careful."},{"role":"user","content":"please prove that 1+1=2"}],"model":"big","temperature":0.5}`
	if string(up.Body) != wantBody {
		t.Errorf("upstream body\n got %s\nwant %s", up.Body, wantBody)
	}
	for k, want := range map[string]string{
		":path":                "/v1/chat/completions",
		"x-selected-model":     "big",
		"x-routing-confidence": "1",
		"x-request-id":         "req-42",
		"x-cache-status":       "miss",
		"x-team":               "research",
		"authorization":        "Bearer sk-upstream-big",
		"content-type":         "application/json",
		"accept":               "application/json",
		"content-length":       strconv.Itoa(len(wantBody)),
		"x-custom":             "kept",
	} {
		if got := up.Headers.Values(k); len(got) != 1 || got[0] != want {
			t.Errorf("upstream %s = %q, want %q", k, got, want)
		}
	}
	for _, k := range []string{"accept-encoding", "proxy-authorization"} {
		if up.Headers.Has(k) {
			t.Errorf("%s must not reach the backend", k)
		}
	}
	if len(s.Rejected) > 0 || len(s.Ignored) > 0 {
		t.Errorf("mutations Envoy would refuse %v or ignore %v", s.Rejected, s.Ignored)
	}

	resp, err := s.SendResponse(e.answer(up, 0))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Override != nil {
		t.Errorf("a buffered JSON answer needs no mode override: %v", resp.Override)
	}
	down := resp.Downstream
	var answer struct {
		Choices []struct {
			Message struct{ Content string }
		}
		Usage struct {
			PromptTokens     int64 `json:"prompt_tokens"`
			CompletionTokens int64 `json:"completion_tokens"`
		} `json:"usage"`
		RoutingMetadata struct {
			SelectedModel  string  `json:"selected_model"`
			Confidence     float64 `json:"confidence"`
			SecurityChecks struct {
				PIIDetected bool `json:"pii_detected"`
			} `json:"security_checks"`
		} `json:"routing_metadata"`
	}
	if err := json.Unmarshal(down.Body, &answer); err != nil {
		t.Fatalf("answer %s: %v", down.Body, err)
	}
	if answer.RoutingMetadata.SelectedModel != "big" || !strings.Contains(answer.Choices[0].Message.Content, "[demo:big]") {
		t.Errorf("answer %s", down.Body)
	}
	if down.Headers.Get("content-length") != strconv.Itoa(len(down.Body)) {
		t.Errorf("content-length %s for %d bytes", down.Headers.Get("content-length"), len(down.Body))
	}
	for k, want := range map[string]string{
		"x-selected-model": "big", "x-junction-decision": "hard_math", "x-junction-reason-code": "auto_routing",
		"x-junction-plugins": "system_prompt=applied", "x-security-checks": "pii:false,jailbreak:false",
		"x-request-id": "req-42", "x-cache-status": "miss", "x-tools-selected": "0",
	} {
		if got := down.Headers.Get(k); got != want {
			t.Errorf("answer %s = %q, want %q", k, got, want)
		}
	}
	for _, k := range []string{"x-processing-time", "x-classification-time"} {
		if _, err := strconv.ParseFloat(down.Headers.Get(k), 64); err != nil {
			t.Errorf("%s = %q", k, down.Headers.Get(k))
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the request to be recorded", func() bool {
		return e.scalar("router_requests_total", map[string]string{"endpoint": "/v1/chat/completions", "category": "hard_math", "status": "200"}) == 1
	})
	prompt, completion := answer.Usage.PromptTokens, answer.Usage.CompletionTokens
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"llm_model_requests_total", map[string]string{"model": "big"}, 1},
		{"llm_routing_reason_codes_total", map[string]string{"model": "big", "reason_code": "auto_routing"}, 1},
		{"llm_reasoning_decisions_total", map[string]string{"category": "hard_math", "model": "big", "enabled": "true", "effort": "high"}, 1},
		{"llm_model_prompt_tokens_total", map[string]string{"model": "big"}, float64(prompt)},
		{"llm_model_completion_tokens_total", map[string]string{"model": "big"}, float64(completion)},
		{"llm_model_ttft_seconds", map[string]string{"model": "big"}, 1},
		{"llm_model_tpot_seconds", map[string]string{"model": "big"}, 1},
		{"router_request_duration_seconds", map[string]string{"endpoint": "/v1/chat/completions"}, 1},
	} {
		if got := e.scalar(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	wantCost := (float64(prompt)*1.00 + float64(completion)*4.00) / 1e6
	if got := e.scalar("llm_model_cost_total", map[string]string{"model": "big", "currency": "USD"}); math.Abs(got-wantCost) > 1e-12 {
		t.Errorf("cost %v, want %v", got, wantCost)
	}
}

func TestPathAndPluginHeaders(t *testing.T) {
	e := newEnv(t)
	s := e.open(envoytest.Standard)
	out, err := s.SendRequest(chat(userBody("write python"), "x-debug", "1"))
	if err != nil {
		t.Fatal(err)
	}
	up := out.Upstream
	if up.Headers.Get(":path") != "/openai/v1/chat/completions" || up.Headers.Get("x-selected-model") != "coder" {
		t.Errorf("path %q model %q", up.Headers.Get(":path"), up.Headers.Get("x-selected-model"))
	}
	if up.Headers.Get("x-route-family") != "code" || up.Headers.Has("x-debug") {
		t.Errorf("header_mutation plugin: %v", up.Headers)
	}
	if !strings.Contains(string(up.Body), `"reasoning_effort":"low"`) {
		t.Errorf("body %s", up.Body)
	}
	s.Abort()
}

// TestRequestBodyModes: every request body mode Envoy offers gives the
// backend the same body; the modes that hold the headers until the body is
// seen also route (header mutations, clear_route_cache).
func TestRequestBodyModes(t *testing.T) {
	e := newEnv(t)
	req := chat(userBody("please prove it", `"stream":false`))
	var pieces [][]byte
	for b := req.Body; len(b) > 0; {
		n := min(7, len(b))
		pieces = append(pieces, b[:n])
		b = b[n:]
	}
	for _, c := range []struct {
		name   string
		cfg    envoytest.Config
		routes bool
	}{
		{"buffered", envoytest.Standard, true},
		{"buffered, no protocol_config", envoytest.Config{RequestBody: envoytest.Buffered, ResponseBody: envoytest.Buffered, AllowModeOverride: true, NoProtocolConfig: true}, true},
		{"buffered partial", envoytest.Config{RequestBody: envoytest.Partial, ResponseBody: envoytest.Buffered, AllowModeOverride: true}, true},
		{"streamed, waiting for the headers' answer", envoytest.Config{RequestBody: envoytest.Streamed, ResponseBody: envoytest.Buffered, AllowModeOverride: true}, false},
		{"streamed, no protocol_config", envoytest.Config{RequestBody: envoytest.Streamed, ResponseBody: envoytest.Buffered, AllowModeOverride: true, NoProtocolConfig: true}, false},
		{"streamed, body sent without waiting", envoytest.Config{RequestBody: envoytest.Streamed, ResponseBody: envoytest.Buffered, SendBodyWithoutWaiting: true}, true},
		{"full duplex", envoytest.Config{RequestBody: envoytest.FullDuplex, ResponseBody: envoytest.Buffered, Trailers: true, AllowModeOverride: true}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := e.open(c.cfg)
			r := req
			if c.cfg.RequestBody != envoytest.Buffered && c.cfg.RequestBody != envoytest.Partial {
				r.Pieces = pieces
			}
			out, err := s.SendRequest(r)
			if err != nil {
				t.Fatal(err)
			}
			if out.Immediate != nil {
				t.Fatalf("answered: %s", out.Immediate.GetBody())
			}
			up := out.Upstream
			if !strings.Contains(string(up.Body), `"model":"big"`) || !strings.Contains(string(up.Body), `Be careful.`) {
				t.Errorf("body %s", up.Body)
			}
			routed := up.Headers.Get("x-selected-model") == "big" && out.ClearRouteCache
			if routed != c.routes {
				t.Errorf("routed on headers: %v, want %v (headers %v)", routed, c.routes, up.Headers)
			}
			if cl := up.Headers.Get("content-length"); cl != "" && cl != strconv.Itoa(len(up.Body)) {
				t.Errorf("content-length %s for %d bytes", cl, len(up.Body))
			}
			if len(s.Rejected) > 0 {
				t.Errorf("rejected mutations %v", s.Rejected)
			}
			resp, err := s.SendResponse(e.answer(up, 0))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(resp.Downstream.Body), `"routing_metadata"`) {
				t.Errorf("answer %s", resp.Downstream.Body)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSSEResponse: an event stream is switched to STREAMED with a mode
// override; TTFT is observed on the first chunk; the usage event Junction
// asked for is dropped again; every piece reaches the client as the gateway
// would relay it.
func TestSSEResponse(t *testing.T) {
	for _, c := range []struct {
		name  string
		cfg   envoytest.Config
		extra []string
	}{
		{"buffered config, override to streamed", envoytest.Standard, nil},
		{"client asked for usage", envoytest.Standard, []string{`"stream_options":{"include_usage":true}`}},
		{"full duplex answer", envoytest.Config{RequestBody: envoytest.Buffered, ResponseBody: envoytest.FullDuplex, Trailers: true}, nil},
		{"no protocol_config", envoytest.Config{RequestBody: envoytest.Buffered, ResponseBody: envoytest.Buffered, AllowModeOverride: true, NoProtocolConfig: true}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, func(o *envOptions) { o.backend.ChunkDelay = time.Millisecond })
			s := e.open(c.cfg)
			extra := append([]string{`"stream":true`}, c.extra...)
			out, err := s.SendRequest(chat(userBody("hello there", extra...)))
			if err != nil {
				t.Fatal(err)
			}
			up := out.Upstream
			if !strings.Contains(string(up.Body), `"stream_options":{"include_usage":true}`) {
				t.Fatalf("usage not asked for: %s", up.Body)
			}
			upstream := e.answer(up, 0)
			full := upstream.Body
			upstream = e.answer(up, 13) // pieces that cut events anywhere
			resp, err := s.SendResponse(upstream)
			if err != nil {
				t.Fatal(err)
			}
			clientAskedUsage := c.extra != nil
			wantOverride := c.cfg.ResponseBody == envoytest.Buffered
			if (resp.Override != nil) != wantOverride || (wantOverride && resp.Override.ResponseBodyMode != filterv3.ProcessingMode_STREAMED) {
				t.Errorf("override %v", resp.Override)
			}
			down := resp.Downstream
			if len(down.Pieces) < 2 {
				t.Errorf("the answer was not streamed: %d pieces", len(down.Pieces))
			}
			if got := string(down.Body); clientAskedUsage {
				if got != string(full) {
					t.Errorf("relayed\n%q\nwant\n%q", got, full)
				}
			} else {
				if strings.Contains(got, `"usage"`) || !strings.HasSuffix(got, "data: [DONE]\n\n") {
					t.Errorf("relayed %q", got)
				}
				if want := strings.Replace(string(full), usageEvent(t, full), "", 1); got != want {
					t.Errorf("relayed\n%q\nwant\n%q", got, want)
				}
			}
			if down.Headers.Get("cache-control") != "no-cache" || down.Headers.Get("x-selected-model") != "small" {
				t.Errorf("headers %v", down.Headers)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the stream to be recorded", func() bool {
				return e.scalar("router_requests_total", map[string]string{"status": "200"}) == 1
			})
			if v := e.scalar("llm_model_ttft_seconds", map[string]string{"model": "small"}); v != 1 {
				t.Errorf("ttft observations %v", v)
			}
			if v := e.scalar("llm_model_completion_tokens_total", map[string]string{"model": "small"}); v == 0 {
				t.Error("usage not recorded")
			}
			if v := e.scalar("llm_model_tpot_seconds", map[string]string{"model": "small"}); v != 1 {
				t.Errorf("tpot observations %v", v)
			}
		})
	}
}

// usageEvent returns the usage-only event of an SSE body.
func usageEvent(t *testing.T, body []byte) string {
	t.Helper()
	for _, ev := range strings.SplitAfter(string(body), "\n\n") {
		if strings.Contains(ev, `"usage"`) && strings.Contains(ev, `"choices":[]`) {
			return ev
		}
	}
	t.Fatalf("no usage event in %q", body)
	return ""
}

func TestSSEWithoutDoneGetsDone(t *testing.T) {
	e := newEnv(t)
	s := e.open(envoytest.Standard)
	out, err := s.SendRequest(chat(userBody("hi", `"stream":true`, `"stream_options":{"include_usage":true}`)))
	if err != nil {
		t.Fatal(err)
	}
	_ = out
	body := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":1,\"total_tokens\":3}}"
	resp, err := s.SendResponse(envoytest.Response{Status: 200, Headers: envoytest.H("content-type", "text/event-stream"),
		Pieces: [][]byte{[]byte(body[:20]), []byte(body[20:])}, EmptyEnd: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(resp.Downstream.Body); got != body+"\n\ndata: [DONE]\n\n" {
		t.Errorf("relayed %q", got)
	}
	s.Close()
	eventually(t, "usage", func() bool {
		return e.scalar("llm_model_prompt_tokens_total", map[string]string{"model": "small"}) == 2
	})
}
