package results

import (
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Energy methods: how Energy.Joules was obtained.
const (
	// EnergyCounter: the difference of the GPUs' cumulative energy
	// counters (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION), read linearly
	// between the samples that bracket each end of the span. Preferred.
	EnergyCounter = "energy counter"
	// EnergyPower: the power samples integrated over the span (the
	// trapezoid rule), when no energy counter was read: power between
	// samples is taken to change linearly, so short bursts between them
	// are missed.
	EnergyPower = "power integrated"
)

// Energy is what GPU telemetry says of the energy a span of a run used.
type Energy struct {
	Joules float64 `json:"energy_j"`
	Method string  `json:"method"` // EnergyCounter or EnergyPower
	// Source names the series read ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
	// "nvidia-smi power.draw"), and the sources scraped.
	Source  string   `json:"source"`
	Targets []string `json:"targets"`
	// GPUs is the number of GPUs the telemetry covered (summed over
	// sources).
	GPUs int `json:"gpus"`
	// AvgPowerW is Joules over the span; PeakPowerW the highest power
	// the samples inside the span read, summed over sources (0 when no
	// power gauge was read).
	AvgPowerW  float64 `json:"avg_power_w"`
	PeakPowerW float64 `json:"peak_power_w,omitempty"`
	// Samples is the number of GPU samples inside the span. Coverage is
	// the share of the span the samples bracket; the rest is taken at the
	// power of the nearest interval.
	Samples  int     `json:"samples"`
	Coverage float64 `json:"coverage"`
}

// EnergyOver returns the energy the GPUs of the GPU samples (Reading.GPU)
// used over [from, to], with every source (a DCGM page, a sampler) summed;
// false when no source has two samples with a counter or a power gauge,
// or the span is empty. Each source is read by the counter when all its
// samples have one, else by power (Energy.Method says which, "energy
// counter" winning only when every source has it).
func EnergyOver(samples []Sample, from, to time.Duration) (Energy, bool) {
	if to <= from {
		return Energy{}, false
	}
	byTarget := map[string][]Sample{}
	for _, s := range samples {
		if s.OK && s.GPU {
			byTarget[s.Target] = append(byTarget[s.Target], s)
		}
	}
	var e Energy
	var series []*energySeries
	covered := 0.0
	methods, sources := map[string]bool{}, map[string]bool{}
	for _, t := range slices.Sorted(maps.Keys(byTarget)) {
		es, ok := newEnergySeries(byTarget[t])
		if !ok {
			continue
		}
		series = append(series, es)
		e.Targets = append(e.Targets, t)
		e.Joules += es.at(to) - es.at(from)
		e.GPUs += es.gpus
		methods[es.method], sources[es.source] = true, true
		lo, hi := max(from, es.t[0]), min(to, es.t[len(es.t)-1])
		covered += max(0, (hi - lo).Seconds())
		for _, t := range es.t {
			if t >= from && t <= to {
				e.Samples++
			}
		}
	}
	if len(series) == 0 {
		return Energy{}, false
	}
	e.Method = EnergyCounter
	if methods[EnergyPower] {
		e.Method = EnergyPower
	}
	e.Source = strings.Join(slices.Sorted(maps.Keys(sources)), ", ")
	secs := (to - from).Seconds()
	e.AvgPowerW = e.Joules / secs
	e.Coverage = math.Min(1, covered/secs/float64(len(series)))
	e.PeakPowerW = peakPower(series, from, to)
	return e, true
}

// energySeries is one source's cumulative energy at its sample times.
type energySeries struct {
	t      []time.Duration
	e      []float64 // cumulative joules from the first sample
	p      []float64 // power, NaN where unknown
	method string
	source string
	gpus   int
}

func newEnergySeries(s []Sample) (*energySeries, bool) {
	sort.SliceStable(s, func(i, j int) bool { return s[i].At < s[j].At })
	counter := true
	var kept []Sample
	for _, x := range s {
		if n := len(kept); n > 0 && kept[n-1].At == x.At {
			continue
		}
		_, hasE := x.Values[GPUEnergyJ]
		_, hasP := x.Values[GPUPowerW]
		if !hasE && !hasP {
			continue
		}
		counter = counter && hasE
		kept = append(kept, x)
	}
	if len(kept) < 2 {
		return nil, false
	}
	es := &energySeries{method: EnergyPower}
	last := kept[len(kept)-1]
	es.source = last.Matched[GPUPowerW]
	if counter {
		es.method, es.source = EnergyCounter, last.Matched[GPUEnergyJ]
	}
	for _, x := range kept {
		es.gpus = max(es.gpus, len(x.Devices), len(x.Engines), 1)
		p, ok := x.Values[GPUPowerW]
		if !ok {
			p = math.NaN()
		}
		es.t, es.p = append(es.t, x.At), append(es.p, p)
	}
	es.e = make([]float64, len(kept))
	if counter {
		for i, iv := range Rates(kept) {
			es.e[i+1] = es.e[i] + iv.Deltas[GPUEnergyJ]
		}
		return es, true
	}
	for i := 1; i < len(kept); i++ {
		a, b := es.p[i-1], es.p[i]
		switch {
		case math.IsNaN(a) && math.IsNaN(b):
			return nil, false
		case math.IsNaN(a):
			a = b
		case math.IsNaN(b):
			b = a
		}
		es.e[i] = es.e[i-1] + (a+b)/2*(es.t[i]-es.t[i-1]).Seconds()
	}
	return es, true
}

// at is the cumulative energy at t: linear between samples, and beyond
// them at the mean power of the nearest interval.
func (es *energySeries) at(t time.Duration) float64 {
	n := len(es.t)
	i := sort.Search(n, func(i int) bool { return es.t[i] >= t })
	switch {
	case i == 0:
		i = 1
	case i == n:
		i = n - 1
	}
	t0, t1 := es.t[i-1], es.t[i]
	slope := (es.e[i] - es.e[i-1]) / (t1 - t0).Seconds()
	return es.e[i-1] + slope*(t-t0).Seconds()
}

// power is the source's power at t, linear between its samples; NaN
// where it has none.
func (es *energySeries) power(t time.Duration) float64 {
	n := len(es.t)
	i := sort.Search(n, func(i int) bool { return es.t[i] >= t })
	switch {
	case i < n && es.t[i] == t:
		return es.p[i]
	case i == 0:
		return es.p[0]
	case i == n:
		return es.p[n-1]
	}
	f := float64(t-es.t[i-1]) / float64(es.t[i]-es.t[i-1])
	return es.p[i-1] + f*(es.p[i]-es.p[i-1])
}

// peakPower is the highest summed power at the sample times inside
// [from, to].
func peakPower(series []*energySeries, from, to time.Duration) float64 {
	peak := 0.0
	for _, es := range series {
		for _, t := range es.t {
			if t < from || t > to {
				continue
			}
			sum := 0.0
			for _, o := range series {
				if p := o.power(t); !math.IsNaN(p) {
					sum += p
				}
			}
			peak = max(peak, sum)
		}
	}
	return peak
}
