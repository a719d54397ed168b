//go:build !race

package report_test

// e2eRace reports whether the tests run under the race detector, under
// which the real-time runs are not judged.
const e2eRace = false
