// Package openfiles tells how many files (sockets included) this process
// may open, so that a run or a self-test that needs one socket per stream
// can refuse a stream count the system would not allow, instead of
// stalling on "too many open files".
package openfiles

import "fmt"

// margin is the descriptors a process needs besides its streams: the
// results file, the scraper's connection, the listener, the runtime's own.
const margin = 64

// Check reports an error when need descriptors (plus Margin) exceed the
// limit this process may open. what names the need in the message, for
// example "10,000 streams with the source in this process". On systems
// where the limit is unknown it returns nil.
func Check(need int, what string) error {
	limit, ok := Limit()
	if !ok || need+margin <= limit {
		return nil
	}
	return fmt.Errorf("%s need about %s open files, and this process may open %s (ulimit -n): raise the limit (ulimit -n %d) or use fewer streams",
		what, group(need+margin), group(limit), roundUp(need+margin))
}

// roundUp rounds n up to the next power of two, a limit worth typing.
func roundUp(n int) int {
	p := 1024
	for p < n {
		p *= 2
	}
	return p
}

// group writes n with thousands separators (20,000).
func group(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
