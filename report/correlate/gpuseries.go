package correlate

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/servebench/servebench/results"
)

// GPUSeries is one GPU's telemetry over the run, on the run's clock: its
// power and utilisation as its source gave them, for a timeline panel per
// figure with one line per GPU.
type GPUSeries struct {
	Source string // the page or sampler it was read from (Sample.Target)
	Key    string // the GPU's index as the telemetry keys it
	UUID   string // empty when the telemetry does not say
	// Power is the GPU's mean power over each interval between two of
	// its source's samples (at the interval's middle) from the energy
	// counter when both samples have it, else the power gauge at each
	// sample; watts.
	Power []GPUPoint
	// Util is its utilisation gauge at each sample, 0..1.
	Util []GPUPoint
}

// GPUPoint is one value of a series at a time on the run's clock.
type GPUPoint struct {
	At time.Duration
	V  float64
}

// GPUSeries returns each GPU's series, ordered by source and then by
// index (numerically); nil without GPU telemetry.
func (c *Correlator) GPUSeries() []GPUSeries {
	bySource := map[string][]results.Sample{}
	for _, s := range c.gpuSamples() {
		bySource[s.Target] = append(bySource[s.Target], s)
	}
	var out []GPUSeries
	for _, src := range slices.Sorted(maps.Keys(bySource)) {
		ss := bySource[src]
		slices.SortStableFunc(ss, func(a, b results.Sample) int { return cmp.Compare(a.At, b.At) })
		keys := map[string]bool{}
		for i := range ss {
			for k := range gpuValues(&ss[i]) {
				keys[k] = true
			}
		}
		for _, k := range slices.SortedFunc(maps.Keys(keys), byIndex) {
			out = append(out, oneGPU(src, k, ss))
		}
	}
	return out
}

// gpuValues returns a GPU sample's values per GPU: its Engines, or, when
// it has none (a page of one GPU), its aggregate under that GPU's key.
func gpuValues(s *results.Sample) map[string]results.Values {
	out := map[string]results.Values{}
	for k, e := range s.Engines {
		out[k] = e.Values
	}
	if len(out) == 0 && len(s.Values) > 0 {
		key := "0"
		if len(s.Devices) == 1 {
			for k := range s.Devices {
				key = k
			}
		}
		out[key] = s.Values
	}
	return out
}

// oneGPU builds GPU key's series from its source's samples ss (by time).
func oneGPU(src, key string, ss []results.Sample) GPUSeries {
	g := GPUSeries{Source: src, Key: key}
	var prev results.Values
	var prevAt time.Duration
	for i := range ss {
		v, ok := gpuValues(&ss[i])[key]
		if !ok {
			prev = nil
			continue
		}
		if d, ok := ss[i].Devices[key]; ok && d.UUID != "" {
			g.UUID = d.UUID
		}
		at := ss[i].At
		e1, okE1 := v[results.GPUEnergyJ]
		e0, okE0 := prev[results.GPUEnergyJ]
		switch p, okP := v[results.GPUPowerW]; {
		case okE1 && okE0 && at > prevAt && e1 >= e0:
			g.Power = append(g.Power, GPUPoint{At: (prevAt + at) / 2, V: (e1 - e0) / (at - prevAt).Seconds()})
		case okP && !okE1:
			g.Power = append(g.Power, GPUPoint{At: at, V: p})
		}
		if u, ok := v[results.GPUUtil]; ok {
			g.Util = append(g.Util, GPUPoint{At: at, V: u})
		}
		prev, prevAt = v, at
	}
	return g
}

// byIndex orders GPU keys as numbers when both are, else as text.
func byIndex(a, b string) int {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return cmp.Compare(x, y)
	}
	return cmp.Compare(a, b)
}
