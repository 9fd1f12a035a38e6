package redisstate

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestRecentConnSkipsTheCheckWhileItAnswers: a connection that read an
// answer within checkAfter hands out a raw connection whose Read (go-redis's
// pool check) runs nothing; once it waited longer, the socket's own, whose
// Read runs the check; a TLS or other connection is not wrapped.
func TestRecentConnSkipsTheCheckWhileItAnswers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			_, _ = c.Write([]byte("+PONG\r\n"))
			defer c.Close()
			time.Sleep(10 * time.Second)
		}
	}()
	conn, err := recentDialer((&net.Dialer{}).DialContext)(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rc, ok := conn.(*recentConn)
	if !ok {
		t.Fatalf("a TCP connection dialled as %T, not a recentConn", conn)
	}
	checks := func() int {
		raw, err := rc.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		ran := 0
		if err := raw.Read(func(uintptr) bool { ran++; return true }); err != nil {
			t.Fatal(err)
		}
		return ran
	}
	if n := checks(); n != 0 {
		t.Errorf("a connection dialled just now was checked (%d)", n)
	}
	rc.read.Store(int64(time.Since(connEpoch) - checkAfter - time.Millisecond))
	if n := checks(); n != 1 {
		t.Errorf("a connection that read nothing for longer than checkAfter: the check ran %d times, want 1", n)
	}
	b := make([]byte, 16)
	if n, err := rc.Read(b); err != nil || string(b[:n]) != "+PONG\r\n" {
		t.Fatalf("read %q %v", b[:n], err)
	}
	if n := checks(); n != 0 {
		t.Errorf("a connection that just read an answer was checked (%d)", n)
	}
	// Control and Write are the socket's.
	raw, _ := rc.SyscallConn()
	ran := false
	if err := raw.Control(func(uintptr) { ran = true }); err != nil || !ran {
		t.Errorf("Control of a recent connection's raw connection did not run (%v)", err)
	}

	other, _ := net.Pipe()
	defer other.Close()
	if c, _ := recentDialer(func(context.Context, string, string) (net.Conn, error) { return other, nil })(context.Background(), "tcp", "x"); c != other {
		t.Errorf("a connection that is not a *net.TCPConn was wrapped: %T", c)
	}
}
