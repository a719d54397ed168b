//go:build race

package cli

// sweepRace reports whether the tests run under the race detector, which
// slows the simulator's prompt handling more than the timing compared.
const sweepRace = true
