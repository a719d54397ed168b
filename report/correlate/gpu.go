package correlate

import (
	"math"
	"time"

	"github.com/servebench/servebench/results"
)

// GPU is what the GPU telemetry (results.Reading.GPU samples) showed
// while requests were in flight: the means over the full windows with a
// request in flight of each figure the telemetry has, and the evidence
// the findings rest on. Fractions are 0..1; a figure the telemetry lacks
// is nil.
type GPU struct {
	Windows int      `json:"windows"` // full windows with requests in flight and GPU samples
	GPUs    int      `json:"gpus"`
	PowerW  *float64 `json:"power_w,omitempty"`
	LimitW  *float64 `json:"power_limit_w,omitempty"`
	Util    *float64 `json:"gpu_util,omitempty"`
	SM      *float64 `json:"sm_active,omitempty"`
	DRAM    *float64 `json:"dram_active,omitempty"`
	Capped  *float64 `json:"power_capped,omitempty"` // share of time the power cap held the clocks down
	// NearLimit counts the windows whose mean power was at least 95 % of
	// the limit.
	NearLimit int `json:"windows_near_power_limit"`
	// Sources name the series read for SM and DRAM activity and for
	// utilisation (DCGM_FI_PROF_DRAM_ACTIVE, nvidia-smi utilization.gpu…).
	SMSource, DRAMSource, UtilSource string `json:",omitempty"`
	// InFlight is the mean number of requests in flight over the windows.
	InFlight float64 `json:"in_flight"`
}

// gpuSamples returns the successful GPU samples.
func (c *Correlator) gpuSamples() []results.Sample {
	var out []results.Sample
	for i := range c.samples {
		if s := c.samples[i]; s.OK && s.GPU {
			out = append(out, s)
		}
	}
	return out
}

// fillGPU sets each window's GPU figures: its mean power from the energy
// counter (or power integrated) and the means of the GPU gauges of the
// samples inside it (or, when none, of the nearest one within a window's
// length). NaN where the telemetry has none.
func (c *Correlator) fillGPU(ws []Window) {
	gpu := c.gpuSamples()
	for i := range ws {
		w := &ws[i]
		w.PowerW, w.PowerLimitW, w.GPUUtil, w.SMActive, w.DRAMActive, w.PowerCapped = nan(), nan(), nan(), nan(), nan(), nan()
		if len(gpu) == 0 {
			continue
		}
		if e, ok := results.EnergyOver(gpu, w.From, w.To); ok && e.Coverage >= 0.99 {
			w.PowerW = e.AvgPowerW
		}
		in := inside(gpu, w.From, w.To)
		w.PowerLimitW = meanOf(in, results.GPUPowerLimitW)
		w.GPUUtil = meanOf(in, results.GPUUtil)
		w.SMActive = meanOf(in, results.GPUSMActive)
		w.DRAMActive = meanOf(in, results.GPUDRAMActive)
		w.PowerCapped = meanOf(in, results.GPUPowerCapped)
	}
}

func nan() float64 { return math.NaN() }

// inside returns the samples in [from, to], or the nearest one when none
// is and it lies within the window's length of it.
func inside(s []results.Sample, from, to time.Duration) []results.Sample {
	var out []results.Sample
	nearest, dist := -1, to-from
	for i := range s {
		at := s[i].At
		switch {
		case at >= from && at <= to:
			out = append(out, s[i])
		case at < from && from-at <= dist:
			nearest, dist = i, from-at
		case at > to && at-to <= dist:
			nearest, dist = i, at-to
		}
	}
	if len(out) == 0 && nearest >= 0 {
		out = append(out, s[nearest])
	}
	return out
}

// meanOf is the mean of the samples' values of m, NaN when none has one.
func meanOf(s []results.Sample, m results.Meaning) float64 {
	sum, n := 0.0, 0
	for i := range s {
		if v, ok := s[i].Values[m]; ok {
			sum += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// gpuSummary summarises the GPU figures of the full windows with a
// request in flight; nil without GPU telemetry in any.
func (c *Correlator) gpuSummary(ws []Window) *GPU {
	gpu := c.gpuSamples()
	if len(gpu) == 0 {
		return nil
	}
	g := &GPU{}
	last := gpu[len(gpu)-1]
	g.GPUs = max(len(last.Devices), len(last.Engines), 1)
	g.SMSource, g.DRAMSource, g.UtilSource = last.Matched[results.GPUSMActive], last.Matched[results.GPUDRAMActive], last.Matched[results.GPUUtil]
	var loaded []Window
	for _, w := range ws {
		if w.Full && w.InFlight > 0 {
			loaded = append(loaded, w)
		}
	}
	g.Windows = len(loaded)
	if g.Windows == 0 {
		return g
	}
	mean := func(f func(*Window) float64) *float64 {
		sum, n := 0.0, 0
		for i := range loaded {
			if v := f(&loaded[i]); !math.IsNaN(v) {
				sum += v
				n++
			}
		}
		if n == 0 {
			return nil
		}
		return ptrRound(sum/float64(n), 4)
	}
	g.PowerW = mean(func(w *Window) float64 { return w.PowerW })
	g.LimitW = mean(func(w *Window) float64 { return w.PowerLimitW })
	g.Util = mean(func(w *Window) float64 { return w.GPUUtil })
	g.SM = mean(func(w *Window) float64 { return w.SMActive })
	g.DRAM = mean(func(w *Window) float64 { return w.DRAMActive })
	g.Capped = mean(func(w *Window) float64 { return w.PowerCapped })
	inFlight := 0.0
	for _, w := range loaded {
		inFlight += w.InFlight
		if w.PowerW >= 0.95*w.PowerLimitW { // false when either is NaN
			g.NearLimit++
		}
	}
	g.InFlight = round(inFlight/float64(len(loaded)), 2)
	return g
}
