//go:build !race

package cli

// raceEnabled reports whether the tests run under the race detector, which
// slows the simulator, the client and the plots tenfold.
const raceEnabled = false
