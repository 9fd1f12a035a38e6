package redisstate

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Deferrable is a command a request must send before it may have any
// effect, whose answer is a verdict: whether the request proceeds. The rate
// limiter's take is one (internal/ratelimit/redisstore).
type Deferrable interface {
	// Queue adds the command to p, a pipeline that carries it beside a
	// read.
	Queue(ctx context.Context, p redis.Pipeliner)
	// Carried reads the queued command's answer once p ran (its error, a
	// Redis that did not answer, included) and returns the verdict. It may
	// send more itself (a script Redis no longer holds, say).
	Carried(ctx context.Context) bool
	// Send sends the command alone and returns the verdict.
	Send(ctx context.Context) bool
}

// Deferred holds a Deferrable back so that the request's first read from
// Redis carries it in the same pipeline: one write and one wait for both,
// instead of a round trip each. A request's reads are given it as their
// context (it is the request's context carrying itself); a store that
// reads on the request path finds it there (DeferredFrom) and sends its
// reads with it (Deferred.Pipelined); whatever must not happen before the
// verdict (an effect, the end of the request phase) sends it alone first
// (Send).
// It is sent once, always under the request's context (the one Defer was
// given), wherever it goes, so its deadline is what it would be alone. Safe
// for concurrent use.
//
// A Deferred is itself that context carrying it (Value finds it as
// DeferredFrom looks for it): the request's reads can be handed the
// Deferred as their context, with no context of its own, and a store can
// hold it in the same allocation as its command (Client.DeferIn).
type Deferred struct {
	context.Context // the request's (Defer's ctx)
	c               *Client
	cmd             Deferrable

	mu   sync.Mutex
	sent bool
	pass bool
}

// Defer holds cmd back for the request whose context ctx is; it is sent on
// c.
func (c *Client) Defer(ctx context.Context, cmd Deferrable) *Deferred {
	d := new(Deferred)
	c.DeferIn(d, ctx, cmd)
	return d
}

// DeferIn is Defer into d, a zero Deferred the caller holds (beside cmd,
// say, so that both are one allocation); d must not be copied after.
func (c *Client) DeferIn(d *Deferred, ctx context.Context, cmd Deferrable) {
	d.Context, d.c, d.cmd = ctx, c, cmd
}

// Value is d for the key DeferredFrom looks for, and otherwise the
// request's context's value.
func (d *Deferred) Value(key any) any {
	if key == (deferredKey{}) {
		return d
	}
	return d.Context.Value(key)
}

type deferredKey struct{}

// DeferredFrom is the Deferred ctx carries, nil if none.
func DeferredFrom(ctx context.Context) *Deferred {
	d, _ := ctx.Value(deferredKey{}).(*Deferred)
	return d
}

// Send sends d alone unless it was sent, and returns its verdict (true for
// a nil d). When the request's context ended before d was sent, nothing is
// sent (the request is over: its client went away): the verdict is false
// and err is the context's.
func (d *Deferred) Send() (pass bool, err error) {
	if d == nil {
		return true, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.sent {
		if err := d.Context.Err(); err != nil {
			return false, err
		}
		d.pass, d.sent = d.cmd.Send(d.Context), true
	}
	return d.pass, nil
}

// Sent reports whether d was sent (false for a nil d).
func (d *Deferred) Sent() bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sent
}

// Pipelined runs queue's commands in one pipeline on c and returns d's
// verdict (true for a nil d). An unsent d of c goes first in the same
// pipeline, which then runs under d's context (the request's, with the
// take's deadline), and its answer is read before this returns; otherwise
// (a nil d, one already sent, one of another client: sent alone first)
// the pipeline runs under ctx bounded by timeout, so a carried read makes
// no deadline of its own. When the verdict refuses the request, what
// queue read is to be discarded (and nothing is sent for it once d was
// already refused). err is the pipeline's; each command's own error is on
// it (redis.Nil for a missing key), so callers read their commands.
func (d *Deferred) Pipelined(ctx context.Context, c *Client, timeout time.Duration, queue func(p redis.Pipeliner)) (pass bool, err error) {
	if d != nil {
		d.mu.Lock()
		if !d.sent && d.c == c && d.Context.Err() == nil {
			defer d.mu.Unlock()
			p := c.pipeline()
			defer c.release(p)
			d.cmd.Queue(d.Context, p)
			queue(p)
			_, err = p.Exec(d.Context)
			d.pass, d.sent = d.cmd.Carried(d.Context), true
			return d.pass, err
		}
		d.mu.Unlock()
		if pass, _ := d.Send(); !pass {
			return false, nil
		}
	}
	ctx, cancel := Bound(ctx, timeout)
	defer cancel()
	_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error { queue(p); return nil })
	return true, err
}
