//go:build !unix

package inputfile

import "testing"

// makeFIFO returns "": this system has no named pipes in its file system.
func makeFIFO(*testing.T, string) string { return "" }
