//go:build !race

package run

// raceEnabled reports whether the tests run under the race detector, which
// slows the client and the in-process simulator unevenly.
const raceEnabled = false
