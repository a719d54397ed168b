//go:build race

package cli

// issue20Race reports whether the tests run under the race detector, under
// which no timing bound is asserted.
const issue20Race = true
