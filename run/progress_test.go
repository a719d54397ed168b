package run

import (
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/load"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// TestProgressLine: the status line names the running stage, how far it
// is by its bound and the time left, the TTFT of first tokens that arrived
// since the previous line (streams still running included), and the
// errors by class.
func TestProgressLine(t *testing.T) {
	start := time.Now()
	stages := []scenario.Stage{
		{Name: "warm", Concurrency: 1, Requests: 10},
		{Name: "c8", Concurrency: 8, Requests: 100},
		{Name: "open", RatePerSec: 5, Duration: scenario.Duration(40 * time.Second)},
	}
	c := counters{Counters: load.Counters{Stage: 1, StageStarted: 2 * time.Second, Scheduled: 60, StageBefore: 10, InFlight: 3}, Elapsed: 10 * time.Second}
	firstN, firstSum := int64(4), 4*80*time.Millisecond
	p := newProgress(start, stages, liveSource{
		counters: func() counters { return c },
		firsts:   func() (int64, time.Duration) { return firstN, firstSum },
	})
	p.add(&results.Result{Outcome: results.Failed, ErrorClass: "timeout"})
	p.add(&results.Result{Outcome: results.Failed, ErrorClass: "http_5xx"})
	p.add(&results.Result{Outcome: results.Failed, ErrorClass: "timeout"})
	line := p.line(start.Add(10 * time.Second))
	for _, want := range []string{`stage 2/3 "c8" 50% ETA 8s`, "in-flight 3", "TTFT now 80ms", "errors 3 (http_5xx 1, timeout 2)"} {
		if !strings.Contains(line, want) {
			t.Errorf("line lacks %q:\n%s", want, line)
		}
	}
	// Two first tokens since, at 200 ms each: the live figure follows them.
	firstN, firstSum = 6, firstSum+400*time.Millisecond
	c = counters{Counters: load.Counters{Stage: 2, StageStarted: 30 * time.Second}, Elapsed: 40 * time.Second}
	line = p.line(start.Add(40 * time.Second))
	for _, want := range []string{`stage 3/3 "open" 25% ETA 30s`, "TTFT now 200ms"} {
		if !strings.Contains(line, want) {
			t.Errorf("line lacks %q:\n%s", want, line)
		}
	}
	// No first token since: no live figure; past the stages: no stage.
	c = counters{Counters: load.Counters{Stage: 3}, Elapsed: 80 * time.Second}
	line = p.line(start.Add(80 * time.Second))
	if !strings.Contains(line, "TTFT now -") || strings.Contains(line, "stage") {
		t.Errorf("after the stages: %s", line)
	}
}
