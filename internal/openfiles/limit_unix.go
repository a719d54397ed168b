//go:build unix

package openfiles

import "syscall"

// Limit is the soft limit on open files (RLIMIT_NOFILE), which the Go
// runtime raises to the hard limit at start-up; ok is false when it cannot
// be read or is unlimited.
func Limit() (n int, ok bool) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0, false
	}
	return int(r.Cur), true
}
