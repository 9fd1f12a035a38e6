package h1

import (
	"net"
	"syscall"
)

// Supported: the transport needs connLiveness, which reads the
// socket without blocking.
const Supported = true

// connLiveness returns a check that an idle connection is still open: the
// backend has neither closed it (a keep-alive timeout, a restart) nor sent
// anything unasked. It peeks at the socket without blocking or consuming.
func connLiveness(nc net.Conn) func() bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return func() bool { return false }
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return func() bool { return false }
	}
	var buf [1]byte
	return func() bool {
		alive := false
		err := rc.Read(func(fd uintptr) bool {
			_, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			// EAGAIN: nothing to read, the connection is open and quiet.
			// Otherwise the backend closed it (0 bytes), sent something
			// nobody asked for, or the socket failed: it cannot carry a
			// request.
			alive = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
			return true
		})
		return err == nil && alive
	}
}
