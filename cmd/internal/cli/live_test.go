package cli

import (
	"context"
	"testing"
	"time"

	"github.com/servebench/servebench/live"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
)

// TestRunLiveMetrics runs a short scenario on the simulator with a
// registry for live metrics and checks, once it ended, that they count
// what the summary counts: every request by outcome (warmup included) and
// the measured requests' TTFT.
func TestRunLiveMetrics(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Parse("live.yaml", []byte(`name: live
target: {url: "sim://tiny?seed=3"}
scrape: {enabled: false}
load:
  stages:
    - {name: closed, concurrency: 4, requests: 16, warmup: {requests: 2}}
    - {name: open, rate: 50, requests: 10}
`))
	if err != nil {
		t.Fatal(err)
	}
	lm, err := listenLive("127.0.0.1:0", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	reg := lm.reg
	// Gathered while the run writes, as Prometheus scrapes it (the race
	// detector watches this in CI's -race pass).
	done := make(chan struct{})
	gathered := make(chan int)
	go func() {
		n := 0
		defer func() { gathered <- n }()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if _, err := reg.Gather(); err == nil {
					n++
				}
			}
		}
	}()
	sum, err := run.Run(context.Background(), sc, run.Options{Dir: t.TempDir(), Observer: lm})
	close(done)
	if n := <-gathered; n == 0 {
		t.Error("the registry was never gathered during the run")
	}
	if err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var requests, ttft float64
	stages := map[string]bool{}
	for _, f := range fams {
		for _, m := range f.Metric {
			switch f.GetName() {
			case live.MetricRequests:
				requests += m.Counter.GetValue()
				for _, l := range m.Label {
					if l.GetName() == "stage" {
						stages[l.GetValue()] = true
					}
				}
			case live.MetricTTFT:
				ttft += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	r := sum.Overall.Requests
	if want := float64(r.Scheduled + r.Warmup); requests != want {
		t.Errorf("%s sums to %v, want %v (scheduled and warmup)", live.MetricRequests, requests, want)
	}
	if want := float64(sum.Overall.TTFT.Count); ttft != want {
		t.Errorf("%s counts %v, want the summary's %v", live.MetricTTFT, ttft, want)
	}
	if !stages["closed"] || !stages["open"] {
		t.Errorf("stages %v, want the scenario's names", stages)
	}
}
