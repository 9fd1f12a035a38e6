package redisstate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/junction-router/junction/internal/state/redisstate"
	"github.com/junction-router/junction/internal/state/redisstate/redistest"
)

// incr is a Deferrable that increments a counter: its verdict is whether
// the count stayed within limit.
type incr struct {
	c             *redisstate.Client
	key           string
	limit         int64
	cmd           *redis.IntCmd
	queued, alone int
}

func (d *incr) Queue(ctx context.Context, p redis.Pipeliner) { d.queued++; d.cmd = p.Incr(ctx, d.key) }
func (d *incr) Carried(context.Context) bool                 { return d.cmd.Err() == nil && d.cmd.Val() <= d.limit }
func (d *incr) Send(ctx context.Context) bool {
	d.alone++
	n, err := d.c.Incr(ctx, d.key).Result()
	return err == nil && n <= d.limit
}

// A Deferred goes once: carried by a read on its client (in the same
// pipeline, the read's answer there too), alone before a read on another
// client or when asked, never after the request's context ended; a refused
// verdict sends no read.
func TestDeferredGoesOnce(t *testing.T) {
	srv := redistest.StartVolatileServer(t)
	c := srv.Client(t)
	ctx := context.Background()
	if err := c.Set(ctx, c.Prefix+"k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	get := func(into **redis.StringCmd) func(p redis.Pipeliner) {
		return func(p redis.Pipeliner) { *into = p.Get(ctx, c.Prefix+"k") }
	}

	cmd := &incr{c: c, key: c.Prefix + "n", limit: 1}
	d := c.Defer(ctx, cmd)
	if redisstate.DeferredFrom(d) != d || redisstate.DeferredFrom(ctx) != nil {
		t.Fatal("DeferredFrom does not find the Deferred in itself, or finds one in the request's context")
	}
	var g *redis.StringCmd
	pass, err := d.Pipelined(ctx, c, time.Second, get(&g))
	if !pass || err != nil || g.Val() != "v" || cmd.queued != 1 || cmd.alone != 0 || !d.Sent() {
		t.Fatalf("carried: pass %v, err %v, read %q, queued %d, alone %d", pass, err, g.Val(), cmd.queued, cmd.alone)
	}
	if pass, _ := d.Send(); !pass || cmd.alone != 0 {
		t.Fatalf("a second Send: pass %v, sent alone %d times", pass, cmd.alone)
	}
	g = nil
	if pass, _ := d.Pipelined(ctx, c, time.Second, get(&g)); !pass || g == nil || g.Val() != "v" || cmd.queued != 1 {
		t.Fatalf("a read after the verdict: pass %v, read %v, queued %d", pass, g, cmd.queued)
	}

	// Refused (the count is past the limit now): a read on another client
	// sends it alone first and then reads nothing.
	other := srv.Client(t)
	refused := &incr{c: c, key: c.Prefix + "n", limit: 1}
	d = c.Defer(ctx, refused)
	g = nil
	if pass, _ := d.Pipelined(ctx, other, time.Second, get(&g)); pass || g != nil || refused.alone != 1 || refused.queued != 0 {
		t.Fatalf("another client, refused: pass %v, read %v, alone %d, queued %d", pass, g, refused.alone, refused.queued)
	}

	// The request's context ended: nothing is sent.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	late := &incr{c: c, key: c.Prefix + "n", limit: 100}
	d = c.Defer(cctx, late)
	if pass, err := d.Send(); pass || !errors.Is(err, context.Canceled) || late.alone != 0 || d.Sent() {
		t.Fatalf("after the context ended: pass %v, err %v, sent alone %d", pass, err, late.alone)
	}
	if pass, _ := d.Pipelined(ctx, c, time.Second, get(&g)); pass || late.queued != 0 {
		t.Fatalf("a read after the context ended: pass %v, queued %d", pass, late.queued)
	}
	if n, _ := c.Get(ctx, c.Prefix+"n").Int(); n != 2 {
		t.Fatalf("the counter is %d, want 2 (one carried, one alone)", n)
	}
	var none *redisstate.Deferred
	if pass, err := none.Send(); !pass || err != nil || none.Sent() {
		t.Fatal("a nil Deferred does not pass")
	}
}

// TestDeferredIsItsContext: a Deferred is the context Defer was given,
// carrying itself: DeferredFrom finds it, the request's values and its end
// are the request's, and a context made from it carries it too.
func TestDeferredIsItsContext(t *testing.T) {
	c := redistest.StartVolatileServer(t).Client(t)
	type key struct{}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	var d redisstate.Deferred
	c.DeferIn(&d, ctx, &incr{c: c, key: c.Prefix + "n", limit: 1})
	if redisstate.DeferredFrom(&d) != &d || d.Value(key{}) != "v" {
		t.Fatalf("DeferredFrom(d) %p, want %p; the request's value %v", redisstate.DeferredFrom(&d), &d, d.Value(key{}))
	}
	child, stop := context.WithTimeout(&d, time.Minute)
	defer stop()
	if redisstate.DeferredFrom(child) != &d {
		t.Fatal("a context made from the Deferred does not carry it")
	}
	cancel()
	<-child.Done()
	if d.Err() != context.Canceled {
		t.Fatalf("the Deferred's context after the request's ended: %v", d.Err())
	}
	if pass, err := d.Send(); pass || err != context.Canceled {
		t.Fatalf("Send after the request ended: %v %v, want false and its error", pass, err)
	}
}
