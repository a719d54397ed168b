// Package realtime tells a real-time test whether the machine could keep
// a real-time schedule while it ran: such a test's figures on a machine
// too busy to wake a goroutine on time describe the machine, not the code,
// and the test should skip saying so rather than fail.
//
// It consumes nothing and produces a share: of the 1 ms sleeps taken
// every 20 ms while watching, those that woke more than 1 ms late.
package realtime

import "time"

// Watch starts watching the machine and returns the function that stops
// the watch and reports the share of samples that woke more than 1 ms
// late (0 when none was taken). Call the returned function exactly once.
func Watch() (stop func() float64) {
	done := make(chan struct{})
	result := make(chan float64, 1)
	go func() {
		late, n := 0, 0
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				result <- float64(late) / float64(max(n, 1))
				return
			case <-tick.C:
				t := time.Now()
				time.Sleep(time.Millisecond)
				if time.Since(t) > 2*time.Millisecond {
					late++
				}
				n++
			}
		}
	}()
	return func() float64 { close(done); return <-result }
}

// TooBusy is the share of late wake-ups above which a machine did not
// keep a real-time schedule: a quarter of the samples.
const TooBusy = 0.25
