package sweep

import (
	"testing"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// TestSaturation feeds the watch synthetic records of an open-loop stage
// at 20 req/s for 10 s: a server that keeps up, one that falls behind by a
// quarter of the load, and one near capacity whose queue drifts up slowly.
func TestSaturation(t *testing.T) {
	t.Parallel()
	st := &scenario.Stage{RatePerSec: 20, Requests: 200}
	for _, tc := range []struct {
		name    string
		served  float64 // requests/s the server completes
		want    bool
		atLeast time.Duration // not before this much of the stage
	}{
		{"keeps up", 20, false, 0},
		{"falls behind", 15, true, 2 * time.Second},
		{"near capacity", 19.5, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newSaturation(0, st)
			fired := time.Duration(-1)
			for i := range 200 {
				sent := time.Duration(float64(i) / 20 * float64(time.Second))
				// Queue wait grows with the backlog: arrivals minus completions.
				backlog := max(0, float64(i)-tc.served*sent.Seconds())
				wait := time.Duration(backlog / tc.served * float64(time.Second))
				ttft := 5*time.Millisecond + wait + time.Duration(i%7)*time.Millisecond
				r := &results.Result{Stage: 0, Outcome: results.OK, Sent: sent, FirstToken: sent + ttft, End: sent + ttft + 100*time.Millisecond}
				inFlight := 2 + int(backlog) + i%3
				if w.add(results.ResultRecord(r), inFlight) && fired < 0 {
					fired = r.End
				}
			}
			if got := fired >= 0; got != tc.want {
				t.Fatalf("over-saturated = %v (at %v), want %v", got, fired, tc.want)
			}
			if tc.want && fired < tc.atLeast {
				t.Errorf("fired at %v, before the %v window", fired, tc.atLeast)
			}
		})
	}
}
