// Package redistest gives the tests of shared stores a Redis of their own:
// a client under a fresh key prefix, its keys deleted when the test ends.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/junction-router/junction/internal/state/redisstate"
)

// TestAddress is the Redis the tests of shared stores use.
const TestAddress = "127.0.0.1:6379"

// New is a client of the test Redis under a key prefix of its own,
// whose keys are deleted when t ends. Without a Redis it skips, unless the
// environment variable CI is set, where it fails (CI never skips silently).
func New(t testing.TB) *redisstate.Client {
	t.Helper()
	c, err := redisstate.New(redisstate.Config{Address: TestAddress, KeyPrefix: freshPrefix()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(context.Background()); err != nil {
		c.Close()
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and %v", err)
		}
		t.Skipf("no Redis to test against: %v", err)
	}
	t.Cleanup(func() { deleteAll(c) })
	return c
}

func freshPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "junction-test:" + hex.EncodeToString(b[:]) + ":"
}

// deleteAll deletes the keys under c's prefix (on every node of a
// cluster: one DEL a key, pipelined) and closes c.
func deleteAll(c *redisstate.Client) {
	ctx := context.Background()
	_ = c.ScanKeys(ctx, c.Prefix+"*", 1000, func(keys []string) error {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.Del(ctx, k)
			}
			return nil
		})
		return err
	})
	c.Close()
}
