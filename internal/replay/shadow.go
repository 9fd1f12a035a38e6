package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/junction-router/junction/engine/cost"
	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/demobackend"
	"github.com/junction-router/junction/internal/replay/replayconfig"
	"github.com/junction-router/junction/recipes"
)

// Shadow copies: a decision with shadow_dispatch (and router_replay, whose
// record holds both outcomes) sends a sampled copy of each recorded
// request to the shadow model once the real request is over. The copy is
// the forwarded chat request with the model replaced and streaming off;
// its answer is read, metered (status, latency, usage, cost) and dropped.
// The record is written once the shadow answered or timed out, so the two
// outcomes land side by side.

// MaxShadows bounds the shadow calls in flight; past it a recorded
// request's shadow is not sent (its record says so).
const MaxShadows = 16

// maxShadowAnswer bounds the shadow answer read.
const maxShadowAnswer = 16 << 20

// shadowTransport sends demo-provider copies to the in-process demo
// backend, the rest over the network.
type shadowTransport struct {
	demo, net http.RoundTripper
}

func (t shadowTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if "http://"+r.URL.Host == dataplane.DemoBase {
		return t.demo.RoundTrip(r)
	}
	return t.net.RoundTrip(r)
}

func defaultShadowClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = MaxShadows
	return &http.Client{Transport: shadowTransport{demo: demobackend.NewRoundTripper(demobackend.Options{}), net: tr},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// shadowConfig is the decision's shadow_dispatch configuration.
func (r *Recorder) shadowConfig(refs []recipes.PluginRef) (replayconfig.Shadow, bool) {
	for _, ref := range refs {
		if ref.Type != replayconfig.TypeShadow {
			continue
		}
		key := "shadow\x00" + string(ref.Configuration)
		if v, ok := r.configs.Load(key); ok {
			c, ok := v.(replayconfig.Shadow)
			return c, ok
		}
		c, err := replayconfig.ParseShadow(ref.Configuration)
		if err != nil {
			r.configs.Store(key, err)
			return replayconfig.Shadow{}, false
		}
		r.configs.Store(key, c)
		return c, true
	}
	return replayconfig.Shadow{}, false
}

// dispatch sends the copy and says how it went.
func (r *Recorder) dispatch(build func(string) (*dataplane.ShadowRequest, error), c replayconfig.Shadow) *Shadow {
	out := &Shadow{Model: c.Model}
	sr, err := build(c.Model)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sr.URL.String(), bytes.NewReader(sr.Body))
	if err != nil {
		out.Error = err.Error()
		return out
	}
	req.Header = sr.Header
	start := time.Now()
	resp, err := r.shadow.Do(req)
	if err != nil {
		out.LatencyMS = ms(time.Since(start))
		out.Error = "no answer: " + err.Error()
		if errors.Is(err, context.DeadlineExceeded) {
			out.Error = fmt.Sprintf("timeout after %v (timeout_ms)", c.Timeout())
		}
		return out
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxShadowAnswer+1))
	resp.Body.Close()
	out.LatencyMS, out.Status = ms(time.Since(start)), resp.StatusCode
	switch {
	case err != nil:
		out.Error = "reading the answer: " + err.Error()
		return out
	case len(body) > maxShadowAnswer:
		out.Error = "the answer is larger than 16 MiB"
		return out
	case resp.StatusCode >= 400:
		out.Error = fmt.Sprintf("the shadow model answered %d", resp.StatusCode)
		return out
	}
	if a := dataplane.ParseAnswer(body); a.Usage != nil {
		u := *a.Usage
		out.Usage = &Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CachedTokens: u.CachedTokens()}
		if amount, currency, ok := cost.Of(sr.Model.Pricing, u); ok {
			out.Cost, out.Currency = &amount, currency
		}
	}
	return out
}
