package run

import (
	"context"
	"runtime"
	"testing"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/sim"
)

// TestVirtualHeapFlat runs 1,000,000 short requests in virtual time (the
// scheduler, the simulator's engine and the aggregate, as a run uses them)
// and checks that the live heap does not grow with the requests: the
// aggregate keeps histograms, a bounded sample of per-request figures and
// time bins, never something per request. (It grew about 30 bytes a
// request: 24 of per-request figures, and a stall record for most
// requests of a fast server.) The time bins grow with the run's length up
// to their bound (2^17 bins, reached here after about 620,000 requests,
// 21 minutes of virtual time), so the heap is compared from 600,000
// requests on.
func TestVirtualHeapFlat(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("1,000,000 virtual requests (about a minute); skipped with -short and under the race detector")
	}
	const doc = `name: flat
target: {url: "sim://tiny"}
request: {ignore_eos: true}
prompts: {input_tokens: {dist: fixed, value: 16}, output_tokens: {dist: fixed, value: 8}}
scrape: {enabled: false}
load:
  max_duration: 24h
  stages:
    - {name: c64, concurrency: 64, requests: 1000000}
`
	sc, err := scenario.Parse("flat.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := sim.ConfigFromURL(sc.SimTarget())
	if err != nil {
		t.Fatal(err)
	}
	var ms runtime.MemStats
	live := func() float64 {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapAlloc) / (1 << 20)
	}
	var at600k, peak float64
	n := 0
	observe := func(rec results.Record, _ int) {
		if rec.Result == nil {
			return
		}
		if n++; n%200_000 == 0 {
			h := live()
			if n == 600_000 {
				at600k = h
			}
			if n > 600_000 {
				peak = max(peak, h)
			}
			t.Logf("%d requests: live heap %.1f MiB", n, h)
		}
	}
	sum, err := Simulate(context.Background(), sc, cfg, observe)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Overall.Requests.OK != 1_000_000 {
		t.Fatalf("%d ok requests, want 1,000,000", sum.Overall.Requests.OK)
	}
	// At 30 bytes a request the old aggregate grew 11 MiB over these
	// 400,000 requests.
	if peak-at600k > 2 || peak > 64 {
		t.Errorf("live heap went from %.1f MiB at 600,000 requests to %.1f MiB", at600k, peak)
	}
}
