package decodelaw

import (
	"math"
	"testing"
)

// TestFitPoints recovers a known law from exact points with one stall
// among them, which the robust refit leaves out; and fits nothing without
// spread of context.
func TestFitPoints(t *testing.T) {
	const a, b = 4e-3, 2e-7 // seconds per token; seconds per token of context
	var ps []Point
	for i := range 12 {
		streams := float64(4 + i%3)
		ctx := 1000 + 3000*float64(i)
		ps = append(ps, Point{Streams: streams, TokensPerSec: streams / (a + b*ctx), Context: ctx})
	}
	ps[5].TokensPerSec /= 10 // a stall
	f := FitPoints(ps)
	if f == nil || !f.Holds || f.Outliers != 1 || math.Abs(f.InterceptMS-4) > 1e-3 || math.Abs(f.SlopeNSPerToken-200) > 1e-2 {
		t.Fatalf("fit %+v: want a = 4 ms, b = 200 ns per token, one outlier", f)
	}
	if got, want := f.PerStream(10000), 1/(a+b*10000); math.Abs(got-want) > 1e-9 {
		t.Errorf("PerStream(10000) = %v, want %v", got, want)
	}
	flat := []Point{{4, 100, 500}, {4, 110, 500}, {4, 90, 500}}
	if f := FitPoints(flat); f != nil {
		t.Errorf("no spread of context: fit %+v, want none", f)
	}
}
