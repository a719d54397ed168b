//go:build !unix

package client

import "syscall"

// peekOpen cannot peek without waiting here: a connection is taken as
// open, and a request sent on one the server closed is retried once on a
// new connection (see Do).
func peekOpen(syscall.Conn) bool { return true }
