package extproc_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/extproc/envoytest"
	"github.com/junction-router/junction/internal/ratelimit"
)

// Behind Envoy an admitted request's answer carries the X-RateLimit
// headers, and one over the limit is answered 429 directly (an immediate
// response) with the spec's body and headers.
func TestRateLimitBehindEnvoy(t *testing.T) {
	e := newEnv(t, func(o *envOptions) {
		o.opts.Limiter = ratelimit.New(nil, nil)
		o.edit = func(y string) string {
			return y + "global:\n  rate_limits:\n    - {name: per-user, key: user, requests: 1, window: 1m}\n"
		}
	})
	body := userBody("hello", `"user":"alice"`)
	s := e.open(envoytest.Standard)
	out, err := s.SendRequest(chat(body))
	if err != nil {
		t.Fatal(err)
	}
	if out.Immediate != nil {
		t.Fatalf("first request answered directly: %s", out.Immediate.GetBody())
	}
	resp, err := s.SendResponse(e.answer(out.Upstream, 0))
	if err != nil {
		t.Fatal(err)
	}
	if h := resp.Downstream.Headers; h.Get("x-ratelimit-limit") != "1" || h.Get("x-ratelimit-remaining") != "0" || h.Get("x-ratelimit-reset") == "" {
		t.Errorf("admitted answer headers %v", h)
	}

	out, err = e.open(envoytest.Standard).SendRequest(chat(body))
	if err != nil {
		t.Fatal(err)
	}
	imm := out.Immediate
	if imm == nil || imm.GetStatus().GetCode() != 429 {
		t.Fatalf("second request: %+v", out)
	}
	var eb struct {
		Error struct {
			Type, Code string
			Details    struct {
				Limit      int64  `json:"limit"`
				Window     string `json:"window"`
				RetryAfter int64  `json:"retry_after"`
			}
		}
	}
	if err := json.Unmarshal(imm.GetBody(), &eb); err != nil || eb.Error.Type != "rate_limit_error" || eb.Error.Code != "too_many_requests" ||
		eb.Error.Details.Limit != 1 || eb.Error.Details.Window != "1m0s" || eb.Error.Details.RetryAfter != 60 {
		t.Errorf("429 body %s", imm.GetBody())
	}
	got := map[string]string{}
	for _, h := range imm.GetHeaders().GetSetHeaders() {
		got[strings.ToLower(h.GetHeader().GetKey())] = string(h.GetHeader().GetRawValue()) + h.GetHeader().GetValue()
	}
	for _, k := range []string{"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "x-ratelimit-retry-after", "retry-after"} {
		if got[k] == "" {
			t.Errorf("429 lacks %s: %v", k, got)
		}
	}
	// Another user is counted apart.
	out, err = e.open(envoytest.Standard).SendRequest(chat(userBody("hello", `"user":"bob"`)))
	if err != nil || out.Immediate != nil {
		t.Fatalf("bob: %v %+v", err, out.Immediate)
	}
}
