package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/recipes"
)

func withRateLimits(limits string) envOption {
	return withYAML(func(y string) string {
		return y + "global:\n  rate_limits:\n" + limits
	})
}

// 50 clients at once against 20 requests per key: exactly 20 answers, 30
// refusals with the spec's body and headers; the admitted answers carry
// the X-RateLimit headers.
func TestRateLimitExactOverHTTP(t *testing.T) {
	e := newEnv(t, withLimiter(ratelimit.New(nil, nil)), withRateLimits("    - {name: per-key, key: api_key, requests: 20, window: 1h}\n"))
	type result struct {
		status int
		header http.Header
		body   []byte
	}
	results := make([]result, 50)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, b := e.post("/v1/chat/completions", `{"model":"MoM","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer sk-one")
			results[i] = result{resp.StatusCode, resp.Header, b}
		}()
	}
	close(start)
	wg.Wait()
	ok, refused := 0, 0
	for _, r := range results {
		switch r.status {
		case 200:
			ok++
			if r.header.Get("X-RateLimit-Limit") != "20" || r.header.Get("X-RateLimit-Remaining") == "" || r.header.Get("X-RateLimit-Reset") == "" {
				t.Errorf("admitted answer headers %v", r.header)
			}
		case 429:
			refused++
			var eb struct {
				Error struct {
					Type    string
					Code    string
					Details struct {
						Limit      int64  `json:"limit"`
						Window     string `json:"window"`
						RetryAfter int64  `json:"retry_after"`
					}
				}
			}
			if err := json.Unmarshal(r.body, &eb); err != nil || eb.Error.Type != "rate_limit_error" || eb.Error.Code != "too_many_requests" ||
				eb.Error.Details.Limit != 20 || eb.Error.Details.Window != "1h0m0s" || eb.Error.Details.RetryAfter < 1 {
				t.Errorf("429 body %s", r.body)
			}
			ra := r.header.Get("Retry-After")
			if ra == "" || r.header.Get("X-RateLimit-Retry-After") != ra || r.header.Get("X-RateLimit-Remaining") != "0" || r.header.Get("X-RateLimit-Limit") != "20" {
				t.Errorf("429 headers %v", r.header)
			}
			if reset, _ := strconv.ParseInt(r.header.Get("X-RateLimit-Reset"), 10, 64); reset <= time.Now().Unix() {
				t.Errorf("X-RateLimit-Reset %d is not in the future", reset)
			}
		default:
			t.Errorf("status %d: %s", r.status, r.body)
		}
	}
	if ok != 20 || refused != 30 {
		t.Fatalf("%d answered, %d refused; want 20 and 30", ok, refused)
	}
	if n := e.ups["small"].count(); n != 20 {
		t.Errorf("the backend got %d requests, want 20", n)
	}
	// Another key is counted apart.
	if resp, b := e.post("/v1/chat/completions", `{"model":"MoM","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer sk-two"); resp.StatusCode != 200 {
		t.Fatalf("another key: %d %s", resp.StatusCode, b)
	}
}

// A change of global.rate_limits applies to the next request (live), and
// the buckets outlive the change.
func TestRateLimitChangesLive(t *testing.T) {
	e := newEnv(t, withLimiter(ratelimit.New(nil, nil)), withRateLimits("    - {name: by-model, key: model, requests: 2, window: 1h}\n"))
	send := func() int {
		resp, _ := e.post("/v1/chat/completions", `{"model":"MoM","messages":[{"role":"user","content":"hi"}]}`)
		return resp.StatusCode
	}
	if a, b, c := send(), send(), send(); a != 200 || b != 200 || c != 429 {
		t.Fatalf("statuses %d %d %d, want 200 200 429", a, b, c)
	}
	doc := e.runtime.Current().Document().Clone()
	doc.Global.RateLimits = nil
	gen, err := engine.Compile(doc, recipes.Hash(doc), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.runtime.Activate(gen)
	resp, _ := e.post("/v1/chat/completions", `{"model":"MoM","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("X-RateLimit-Limit") != "" {
		t.Fatalf("without limits: %d %v", resp.StatusCode, resp.Header)
	}
}
