package results

import (
	"maps"
	"math"
	"slices"
	"sort"
	"time"
)

// Interval holds what the counters and histograms of a server did between
// two successive successful scrapes.
type Interval struct {
	From time.Duration `json:"from_ns"` // At of the earlier sample
	To   time.Duration `json:"to_ns"`   // At of the later sample

	// Deltas holds, for each counter meaning known in both samples, its
	// increase over the interval; Rates holds the same divided by the
	// interval's length in seconds (tokens or requests per second).
	Deltas Values `json:"deltas,omitempty"`
	Rates  Values `json:"rates,omitempty"`

	// Histograms holds the observations made during the interval, for
	// server-side quantiles per window (Histogram.Quantile).
	Histograms map[Meaning]Histogram `json:"histograms,omitempty"`

	// AcceptedPerPos holds the accepted draft tokens at each position
	// during the interval (Reading.AcceptedPerPos differenced); nil when
	// the later sample has none.
	AcceptedPerPos []float64 `json:"spec_accepted_per_pos,omitempty"`

	// Resets lists the counter and histogram meanings that went backwards
	// during the interval, in canonical order: the server (or one of its
	// engines) restarted, and the increase counted is the value since the
	// restart, as Prometheus's rate() counts it.
	Resets []Meaning `json:"resets,omitempty"`
}

// Seconds returns the interval's length in seconds.
func (iv Interval) Seconds() float64 { return (iv.To - iv.From).Seconds() }

// Rates turns the cumulative counters and histograms of successive samples
// into per-interval deltas and rates. A counter or histogram absent from the
// earlier sample of a pair and present in the later one counts from zero. Failed samples are skipped, samples
// are taken in At order (the input is not modified), and a pair with no time
// between them yields no interval. A counter that goes down is a reset: the
// increase is its new value.
//
// When both samples of a pair carry the same engines, each engine's counters
// are differenced on their own and the results summed, so one engine's
// restart does not erase the others' progress; otherwise the aggregate
// values are differenced.
func Rates(samples []Sample) []Interval {
	ok := make([]*Sample, 0, len(samples))
	for i := range samples {
		if samples[i].OK {
			ok = append(ok, &samples[i])
		}
	}
	sort.SliceStable(ok, func(i, j int) bool { return ok[i].At < ok[j].At })
	var out []Interval
	for i := 1; i < len(ok); i++ {
		prev, cur := ok[i-1], ok[i]
		if cur.At <= prev.At {
			continue
		}
		out = append(out, interval(prev, cur))
	}
	return out
}

func interval(prev, cur *Sample) Interval {
	iv := Interval{From: prev.At, To: cur.At}
	secs := iv.Seconds()
	reset := map[Meaning]bool{}

	// Per-engine differencing needs the same engines on both pages.
	var engines []string
	if len(cur.Engines) > 1 && sameKeys(prev.Engines, cur.Engines) {
		engines = slices.Sorted(maps.Keys(cur.Engines))
	}

	for _, m := range Meanings() {
		switch m.Behaviour() {
		case Counter:
			d, r, ok := counterDelta(m, prev, cur, engines)
			if !ok {
				continue
			}
			if iv.Deltas == nil {
				iv.Deltas, iv.Rates = Values{}, Values{}
			}
			iv.Deltas[m], iv.Rates[m] = d, d/secs
			if r {
				reset[m] = true
			}
		case Histogrammed:
			h, r, ok := histogramDelta(m, prev, cur, engines)
			if !ok {
				continue
			}
			if iv.Histograms == nil {
				iv.Histograms = map[Meaning]Histogram{}
			}
			iv.Histograms[m] = h
			if r {
				reset[m] = true
			}
		}
	}
	for _, m := range Meanings() {
		if reset[m] {
			iv.Resets = append(iv.Resets, m)
		}
	}
	iv.AcceptedPerPos = perPosDelta(prev.AcceptedPerPos, cur.AcceptedPerPos)
	return iv
}

// perPosDelta differences the per-position counters: a position absent
// before counts from zero, and one that went down was reset.
func perPosDelta(prev, cur []float64) []float64 {
	if len(cur) == 0 {
		return nil
	}
	out := make([]float64, len(cur))
	for i, c := range cur {
		p := 0.0
		if i < len(prev) {
			p = prev[i]
		}
		out[i], _ = sub(c, p)
	}
	return out
}

func counterDelta(m Meaning, prev, cur *Sample, engines []string) (delta float64, reset, ok bool) {
	if len(engines) > 0 {
		all := true
		var psum, csum float64
		for _, e := range engines {
			p, pok := prev.Engines[e].Values[m]
			c, cok := cur.Engines[e].Values[m]
			if !pok || !cok {
				all = false
				break
			}
			psum, csum = psum+p, csum+c
			d, r := sub(c, p)
			delta += d
			reset = reset || r
		}
		// The engines must account for the whole aggregate: series
		// without the engine label count in the aggregate only.
		if all && near(psum, prev.Values[m]) && near(csum, cur.Values[m]) {
			return delta, reset, true
		}
		delta, reset = 0, false
	}
	// A counter the page did not have before is one the server had not
	// created yet (vLLM creates some series at their first event): it
	// started from zero.
	p := prev.Values[m]
	c, cok := cur.Values[m]
	if !cok {
		return 0, false, false
	}
	d, r := sub(c, p)
	return d, r, true
}

func histogramDelta(m Meaning, prev, cur *Sample, engines []string) (delta Histogram, reset, ok bool) {
	if len(engines) > 0 {
		var parts []Histogram
		var pn, cn float64
		for _, e := range engines {
			p, pok := prev.Engines[e].Histograms[m]
			c, cok := cur.Engines[e].Histograms[m]
			if !pok || !cok {
				parts = nil
				break
			}
			pn, cn = pn+p.Count, cn+c.Count
			d, r := c.Sub(p)
			parts = append(parts, d)
			reset = reset || r
		}
		if len(parts) > 0 && near(pn, prev.Histograms[m].Count) && near(cn, cur.Histograms[m].Count) {
			delta = parts[0]
			for _, d := range parts[1:] {
				delta = delta.Plus(d)
			}
			return delta, reset, true
		}
		reset = false
	}
	c, cok := cur.Histograms[m]
	if !cok {
		return Histogram{}, false, false
	}
	p, pok := prev.Histograms[m]
	if !pok {
		return c.clone(), false, true // created since: every observation is new
	}
	d, r := c.Sub(p)
	return d, r, true
}

// sub returns the increase of a counter from p to c; a decrease is a reset.
func sub(c, p float64) (float64, bool) {
	if c < p {
		return c, true
	}
	return c - p, false
}

// near reports whether a and b agree up to rounding: sums of the same
// values taken in another order.
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func sameKeys[V any](a, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	return slices.Equal(slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b)))
}
