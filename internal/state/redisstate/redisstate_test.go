package redisstate_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/state/redisstate"
	"github.com/junction-router/junction/internal/state/redisstate/redistest"
)

func TestNewSaysWhatIsWrong(t *testing.T) {
	for _, tc := range []struct {
		c    redisstate.Config
		want string
	}{
		{redisstate.Config{}, "address is empty"},
		{redisstate.Config{Address: "x:1", PasswordEnv: "JUNCTION_TEST_SURELY_UNSET"}, "JUNCTION_TEST_SURELY_UNSET, which is not set"},
		{redisstate.Config{Address: "x:1", TLS: redisstate.TLS{CAFile: "/ca.pem"}}, "enabled is false"},
		{redisstate.Config{Address: "x:1", TLS: redisstate.TLS{Enabled: true, CertFile: "/c.pem"}}, "go together"},
		{redisstate.Config{Address: "x:1", TLS: redisstate.TLS{Enabled: true, CAFile: "/nonexistent/ca.pem"}}, "ca_file"},
	} {
		_, err := redisstate.New(tc.c, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
}

func TestPasswordFromTheEnvironment(t *testing.T) {
	t.Setenv("JUNCTION_TEST_REDIS_PASSWORD", "s3cret")
	c, err := redisstate.New(redisstate.Config{Address: "127.0.0.1:1", PasswordEnv: "JUNCTION_TEST_REDIS_PASSWORD"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Options().Password != "s3cret" || c.Prefix != redisstate.DefaultKeyPrefix {
		t.Fatalf("password %q, prefix %q", c.Options().Password, c.Prefix)
	}
}

func TestPingAndFailed(t *testing.T) {
	c := redistest.New(t)
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	down, err := redisstate.New(redisstate.Config{Address: addr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	if err := down.Ping(context.Background()); err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("ping of a closed port: %v", err)
	}
	down.Failed("cache", "lookup", errors.New("boom"))
	down.Failed("cache", "lookup", errors.New("boom"))
	if n := down.Errors("cache", "lookup"); n != 2 {
		t.Fatalf("errors counted: %v", n)
	}
}
