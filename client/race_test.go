//go:build race

package client

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = true
