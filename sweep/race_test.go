//go:build race

package sweep

// raceEnabled reports whether the tests run under the race detector, which
// slows virtual-time runs and the plots tenfold: there the tests draw no
// plots they do not read and make fewer runs, checking outcomes only.
const raceEnabled = true
