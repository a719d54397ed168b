//go:build unix

package client

import (
	"errors"
	"syscall"
)

// peekOpen reports whether a connection looks open: a peek that does not
// wait finds nothing to read (a closed one reads its end).
func peekOpen(raw syscall.Conn) bool {
	rc, err := raw.SyscallConn()
	if err != nil {
		return true
	}
	ok := true
	var b [1]byte
	_ = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ok = n < 0 || errors.Is(err, syscall.EAGAIN)
		if n == 0 && err == nil {
			ok = false // the end of the stream: closed
		}
		return true
	})
	return ok
}
