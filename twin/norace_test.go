//go:build !race

package twin

// raceEnabled reports whether the tests run under the race detector, which
// slows virtual-time runs tenfold and the HTTP path more than the timing a
// real-time test compares.
const raceEnabled = false
