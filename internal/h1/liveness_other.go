//go:build !linux

package h1

import "net"

// Supported is false here: without a non-blocking peek at the socket a
// pooled connection the backend closed cannot be told apart before a request
// is written on it, so callers use net/http's Transport.
const Supported = false

func connLiveness(net.Conn) func() bool { return func() bool { return false } }
