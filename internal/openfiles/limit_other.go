//go:build !unix

package openfiles

// Limit is unknown on this system.
func Limit() (n int, ok bool) { return 0, false }
