//go:build !linux

package gateway

import "net"

// h1Supported is false here: without a non-blocking peek at the socket a
// pooled connection the backend closed cannot be told apart before a request
// is written on it, so net/http's Transport serves every backend.
const h1Supported = false

func connLiveness(net.Conn) func() bool { return func() bool { return false } }
