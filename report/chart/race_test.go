//go:build race

package chart

// raceEnabled reports whether the tests run under the race detector. The
// tests that check what a browser shows, or what every drawing holds, run
// in the plain pass only: under it they redraw every plot, several times
// slower, and a browser runs none of this package's code.
const raceEnabled = true
