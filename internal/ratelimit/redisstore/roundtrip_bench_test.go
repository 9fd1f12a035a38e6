package redisstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/internal/state/redisstate"
	"github.com/junction-router/junction/internal/state/redisstate/redistest"
)

// BenchmarkTakeAndLookup asks whether a request's two round trips on a
// cache miss, the rate-limit take and the cache's exact lookup (a GET of a
// missing key), are worth sending together: sequential (what the data
// plane does now: the take, then the plugin stage's lookup), pipelined
// (both in one write, one round trip; on a cluster the client sends each
// to its key's node in parallel) and concurrent (the lookup on another
// goroutine, as an overlap of the take with the plugin stage would be).
// Each iteration runs every variant on a redis-server (single) and on a
// three-node Redis Cluster (cluster), both the benchmark's own without
// persistence, in an order that rotates, and times
// each alone; the figures are the medians (µs).
func BenchmarkTakeAndLookup(b *testing.B) {
	clients := map[string]*redisstate.Client{"single": redistest.StartVolatileServer(b).Client(b), "cluster": redistest.StartCluster(b, 3).Client(b)}
	takes := []ratelimit.Take{{Bucket: ratelimit.Bucket{ID: "model=m", Capacity: 1 << 40, Window: time.Minute}, N: 1}}
	ctx := context.Background()
	type variant struct {
		name string
		run  func(c *redisstate.Client, s *Store, key string) error
	}
	get := func(c *redisstate.Client, key string) error {
		if err := c.Get(ctx, key).Err(); !errors.Is(err, redis.Nil) {
			return err
		}
		return nil
	}
	variants := []variant{
		{"sequential", func(c *redisstate.Client, s *Store, key string) error {
			if _, err := s.run(ctx, s.newCall(time.Now(), takes, false)); err != nil {
				return err
			}
			return get(c, key)
		}},
		{"pipelined", func(c *redisstate.Client, s *Store, key string) error {
			call := s.newCall(time.Now(), takes, false)
			cmds, _ := c.Pipelined(ctx, func(p redis.Pipeliner) error {
				_ = p.Process(ctx, call.command(ctx, false))
				p.Get(ctx, key)
				return nil
			})
			if err := cmds[0].Err(); err != nil {
				return err
			}
			if err := cmds[1].Err(); !errors.Is(err, redis.Nil) {
				return err
			}
			return nil
		}},
		{"concurrent", func(c *redisstate.Client, s *Store, key string) error {
			var wg sync.WaitGroup
			var gerr error
			wg.Add(1)
			go func() { defer wg.Done(); gerr = get(c, key) }()
			_, err := s.run(ctx, s.newCall(time.Now(), takes, false))
			wg.Wait()
			return errors.Join(err, gerr)
		}},
	}
	topos := []string{"single", "cluster"}
	stores := map[string]*Store{}
	for _, t := range topos {
		stores[t] = New(clients[t], true)
		if _, err := stores[t].run(ctx, stores[t].newCall(time.Now(), takes, false)); err != nil { // the script loaded on its node
			b.Fatal(err)
		}
	}
	times := map[string][]float64{}
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range len(variants) * len(topos) {
			k := (i + j) % (len(variants) * len(topos))
			v, t := variants[k%len(variants)], topos[k/len(variants)]
			c := clients[t]
			n++
			key := c.Prefix + "cache:e:absent-" + string(rune('a'+n%26)) + time.Now().Format("150405.000000")
			start := time.Now()
			if err := v.run(c, stores[t], key); err != nil {
				b.Fatal(err)
			}
			times[t+"/"+v.name] = append(times[t+"/"+v.name], float64(time.Since(start))/float64(time.Microsecond))
		}
	}
	b.StopTimer()
	for name, d := range times {
		slices.Sort(d)
		b.ReportMetric(d[len(d)/2], name+"-µs")
	}
}
