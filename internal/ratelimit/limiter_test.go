package ratelimit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-router/junction/recipes"
)

func doc(limits ...recipes.RateLimit) *recipes.Document {
	d := &recipes.Document{}
	d.Global.RateLimits = limits
	return d
}

func window(d time.Duration) recipes.Duration { return recipes.Duration{Duration: d} }

// 50 clients at once against a limit of 20: exactly 20 are admitted.
func TestExactUnderConcurrency(t *testing.T) {
	l := New(nil, nil)
	d := doc(recipes.RateLimit{Name: "per-key", Key: recipes.RateLimitKeyAPIKey, Requests: 20, Window: window(time.Hour)})
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := l.Admit(context.Background(), d, &Request{APIKey: "sk-a"})
			var r *Refusal
			switch {
			case err == nil:
				admitted.Add(1)
			case errors.As(err, &r):
				refused.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if admitted.Load() != 20 || refused.Load() != 30 {
		t.Fatalf("admitted %d, refused %d; want 20 and 30", admitted.Load(), refused.Load())
	}
	// Another key has its own bucket.
	if _, err := l.Admit(context.Background(), d, &Request{APIKey: "sk-b"}); err != nil {
		t.Fatal(err)
	}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// The bucket refills evenly over the window; the refusal says how long to
// wait, the admission how much is left and when the limit is whole again.
func TestRefillHeadersAndRefusal(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := New(nil, c.now)
	d := doc(recipes.RateLimit{Name: "rpm", Key: recipes.RateLimitKeyUser, Requests: 2, Window: window(time.Minute)})
	req := &Request{User: "u1"}
	a, err := l.Admit(context.Background(), d, req)
	if err != nil || a.Tightest.Remaining != 1 || a.Tightest.Limit != 2 || a.Tightest.Reset.Unix() != 1_700_000_030 {
		t.Fatalf("first: %+v %v", a.Tightest, err)
	}
	if _, err := l.Admit(context.Background(), d, req); err != nil {
		t.Fatal(err)
	}
	_, err = l.Admit(context.Background(), d, req)
	var r *Refusal
	if !errors.As(err, &r) || r.RetryAfterSeconds() != 30 || r.Limit != 2 || r.Window != time.Minute || r.Name != "rpm" {
		t.Fatalf("third: %v", err)
	}
	got := map[string]string{}
	r.Headers(func(k, v string) { got[k] = v })
	want := map[string]string{HeaderLimit: "2", HeaderRemaining: "0", HeaderReset: "1700000060", HeaderRetryAfter: "30", "Retry-After": "30"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	c.t = c.t.Add(30 * time.Second)
	if _, err := l.Admit(context.Background(), d, req); err != nil {
		t.Fatalf("after 30 s: %v", err)
	}
}

// Tokens are taken as estimated and settled from usage; a failed request
// without usage gives its estimate back.
func TestTokensSettle(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := New(nil, c.now)
	d := doc(recipes.RateLimit{Name: "tpm", Key: recipes.RateLimitKeyModel, Tokens: 1000, Window: window(time.Hour)})
	a, err := l.Admit(context.Background(), d, &Request{Model: "m", Tokens: 600})
	if err != nil || a.Tightest.Remaining != 400 || a.Tightest.Dimension != "tokens" {
		t.Fatalf("%+v %v", a.Tightest, err)
	}
	if _, err := l.Admit(context.Background(), d, &Request{Model: "m", Tokens: 500}); err == nil {
		t.Fatal("500 more admitted with 400 left")
	}
	a.Settle(context.Background(), c.now(), 100, true, false) // it used 100
	b, err := l.Admit(context.Background(), d, &Request{Model: "m", Tokens: 500})
	if err != nil || b.Tightest.Remaining != 400 {
		t.Fatalf("after settling: %+v %v", b.Tightest, err)
	}
	b.Settle(context.Background(), c.now(), 0, false, true)
	if c, err := l.Admit(context.Background(), d, &Request{Model: "m", Tokens: 900}); err != nil || c.Tightest.Remaining != 0 {
		t.Fatalf("after a failed request gave back: %+v %v", c.Tightest, err)
	}
	if _, err := l.Admit(context.Background(), d, &Request{Model: "other", Tokens: 5000}); err == nil {
		t.Fatal("a request larger than the limit was admitted")
	}
}

// The answer reports the limit with the smallest share left; a refused
// request takes nothing from the limits it was under.
func TestTightestAndAllOrNothing(t *testing.T) {
	l := New(nil, nil)
	d := doc(
		recipes.RateLimit{Name: "wide", Key: recipes.RateLimitKeyDecision, Requests: 100, Window: window(time.Hour)},
		recipes.RateLimit{Name: "narrow", Key: "header:X-Team", Requests: 3, Window: window(time.Hour)},
	)
	hdr := func(team string) func(string) string {
		return func(name string) string {
			if name != "X-Team" {
				t.Errorf("asked for header %q", name)
			}
			return team
		}
	}
	for i := range 3 {
		a, err := l.Admit(context.Background(), d, &Request{Decision: "d", Header: hdr("red")})
		if err != nil || a.Tightest.Name != "narrow" || a.Tightest.Remaining != int64(2-i) {
			t.Fatalf("%d: %+v %v", i, a.Tightest, err)
		}
	}
	if _, err := l.Admit(context.Background(), d, &Request{Decision: "d", Header: hdr("red")}); err == nil {
		t.Fatal("the fourth red request was admitted")
	}
	a, err := l.Admit(context.Background(), d, &Request{Decision: "d", Header: hdr("blue")})
	if err != nil || a.Tightest.Name != "narrow" || a.Tightest.Remaining != 2 {
		t.Fatalf("blue: %+v %v", a.Tightest, err)
	}
	// wide: 3 red + 1 blue taken; the refused red took nothing.
	d.Global.RateLimits[1].Requests = 1000
	a, err = l.Admit(context.Background(), d, &Request{Decision: "d", Header: hdr("green")})
	if err != nil || a.Tightest.Name != "wide" || a.Tightest.Remaining != 95 {
		t.Fatalf("wide after 5 admitted: %+v %v", a.Tightest, err)
	}
}

// Full buckets are forgotten, so memory is bounded by the keys of a window.
func TestSweepForgetsFullBuckets(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	s := NewLocal()
	l := New(s, c.now)
	d := doc(recipes.RateLimit{Name: "u", Key: recipes.RateLimitKeyUser, Requests: 5, Window: window(time.Second)})
	for i := range sweepEvery - 1 {
		if _, err := l.Admit(context.Background(), d, &Request{User: string(rune('a' + i%1000))}); err != nil {
			t.Fatal(err)
		}
	}
	if s.Len() != 1000 {
		t.Fatalf("%d buckets", s.Len())
	}
	c.t = c.t.Add(2 * time.Second)
	if _, err := l.Admit(context.Background(), d, &Request{User: "z"}); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 1 {
		t.Fatalf("%d buckets after the sweep, want 1", s.Len())
	}
}

func TestNoLimitsAllocatesNothing(t *testing.T) {
	l := New(nil, nil)
	d := doc()
	req := &Request{APIKey: "k"}
	if n := testing.AllocsPerRun(100, func() { _, _ = l.Admit(context.Background(), d, req) }); n != 0 {
		t.Fatalf("%v allocations per request without limits", n)
	}
}

func BenchmarkAdmit(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		doc  *recipes.Document
	}{
		{"none", doc()},
		{"one", doc(recipes.RateLimit{Name: "k", Key: recipes.RateLimitKeyAPIKey, Requests: 1 << 40, Window: window(time.Minute)})},
		{"three", doc(
			recipes.RateLimit{Name: "k", Key: recipes.RateLimitKeyAPIKey, Requests: 1 << 40, Tokens: 1 << 50, Window: window(time.Minute)},
			recipes.RateLimit{Name: "m", Key: recipes.RateLimitKeyModel, Requests: 1 << 40, Window: window(time.Minute)},
			recipes.RateLimit{Name: "u", Key: recipes.RateLimitKeyUser, Tokens: 1 << 50, Window: window(time.Minute)})},
	} {
		b.Run(c.name, func(b *testing.B) {
			l := New(nil, nil)
			req := &Request{APIKey: "sk-bench", User: "u", Model: "m", Tokens: 100}
			b.ReportAllocs()
			for b.Loop() {
				a, err := l.Admit(ctx, c.doc, req)
				if err != nil {
					b.Fatal(err)
				}
				a.Settle(ctx, time.Now(), 90, true, false)
			}
		})
	}
}
