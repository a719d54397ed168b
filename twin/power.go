package twin

import (
	"fmt"
	"math"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/sim"
)

// Power-model fit limits.
const (
	minPowerIntervals = 4   // GPU intervals needed for a fit
	minPowerSpread    = 0.1 // occupancy range (0..1) the intervals must span to tell idle from full power
)

// powerPoint is one interval between two GPU samples: its mean power (all
// GPUs) and the batch occupancy over it.
type powerPoint struct{ occ, watts float64 }

// powerModel fits the simulator's power model (sim.Config.IdlePowerW,
// MaxPowerW; sim/power.go) from the runs' GPU telemetry, when they have
// any: for each interval between two successive GPU samples, the GPUs'
// mean power (the energy counter's increase, or the power integrated)
// against the batch occupancy over it, the streams decoding (first token
// to last) time-averaged over max_num_seqs; a least-squares line through
// them gives the power of an idle and of a full batch, divided over the
// GPUs. Prefill steps and the gaps between steps are folded into the
// line: it is the decode batch's power law, which the simulator applies
// to every step.
func (res *Result) powerModel(cfg *sim.Config, runs []*runData) {
	var pts []powerPoint
	gpus := 0
	for _, rd := range runs {
		p, n := powerPoints(rd, cfg.MaxNumSeqs)
		pts = append(pts, p...)
		gpus = max(gpus, n)
	}
	if gpus == 0 {
		return
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		lo, hi = math.Min(lo, p.occ), math.Max(hi, p.occ)
	}
	if len(pts) < minPowerIntervals || hi-lo < minPowerSpread {
		res.Notes = append(res.Notes, fmt.Sprintf("power model: not fitted: %d GPU intervals spanning batch occupancy %.2f–%.2f; it needs %d spanning %.1f or more (run at several loads, an idle gap included)",
			len(pts), lo, hi, minPowerIntervals, minPowerSpread))
		return
	}
	a, b, cov, resid := line(pts)
	n := float64(gpus)
	idle, full := a/n, (a+b)/n
	if idle <= 0 || full < idle {
		res.Notes = append(res.Notes, fmt.Sprintf("power model: not fitted: the line through %d intervals gives %.0f W idle and %.0f W at a full batch a GPU, which is not a power law", len(pts), idle, full))
		return
	}
	// var(a) and var(a + b), covariance of the two, per GPU.
	vIdle, vFull, cIF := cov[0][0]/(n*n), (cov[0][0]+2*cov[0][1]+cov[1][1])/(n*n), (cov[0][0]+cov[0][1])/(n*n)
	cfg.GPUs, cfg.IdlePowerW, cfg.MaxPowerW = gpus, roundSig(idle, 4), roundSig(full, 4)
	res.Estimates = append(res.Estimates,
		Estimate{Name: "idle_power_w", Value: cfg.IdlePowerW, StdErr: math.Sqrt(vIdle), Unit: "W a GPU", Source: "fitted",
			Note: fmt.Sprintf("%d GPU intervals, batch occupancy %.2f–%.2f", len(pts), lo, hi)},
		Estimate{Name: "max_power_w", Value: cfg.MaxPowerW, StdErr: math.Sqrt(vFull), Unit: "W a GPU", Source: "fitted",
			Note: fmt.Sprintf("extrapolated to a full batch from occupancy up to %.2f", hi)})
	res.power = &sim.PowerFit{Covariance: [][]float64{{roundSig(vIdle, 6), roundSig(cIF, 6)}, {roundSig(cIF, 6), roundSig(vFull, 6)}},
		OccupancyMin: roundSig(lo, 4), OccupancyMax: roundSig(hi, 4), Intervals: len(pts), ResidualW: roundSig(resid/n, 4)}
}

// powerPoints returns a run's GPU intervals and the GPUs its telemetry
// saw (0 without telemetry).
func powerPoints(rd *runData, maxNumSeqs int) ([]powerPoint, int) {
	bySource := map[string][]results.Sample{}
	gpus := 0
	for _, s := range rd.samples {
		if s.GPU {
			bySource[s.Target] = append(bySource[s.Target], s)
			gpus = max(gpus, len(s.Devices), len(s.Engines), 1)
		}
	}
	if len(bySource) != 1 || maxNumSeqs <= 0 {
		return nil, 0 // several sources: their intervals do not line up
	}
	var out []powerPoint
	for _, ss := range bySource {
		for i := 1; i < len(ss); i++ {
			from, to := ss[i-1].At, ss[i].At
			if to <= from {
				continue
			}
			e, ok := results.EnergyOver(ss[i-1:i+1], from, to)
			if !ok {
				continue
			}
			out = append(out, powerPoint{occ: decoding(rd.reqs, from, to) / float64(maxNumSeqs), watts: e.AvgPowerW})
		}
	}
	return out, gpus
}

// decoding is the time-averaged number of streams decoding (first chunk
// to last) over [from, to].
func decoding(reqs []*request, from, to time.Duration) float64 {
	sum := 0.0
	for _, q := range reqs {
		if len(q.chunks) == 0 {
			continue
		}
		a, b := max(q.chunks[0], from), min(q.chunks[len(q.chunks)-1], to)
		if b > a {
			sum += (b - a).Seconds()
		}
	}
	return sum / (to - from).Seconds()
}

// line fits y = a + b·x by least squares and returns the covariance of
// (a, b) from the residuals, and their standard deviation.
func line(pts []powerPoint) (a, b float64, cov [2][2]float64, resid float64) {
	n := float64(len(pts))
	var sx, sy, sxx, sxy float64
	for _, p := range pts {
		sx, sy, sxx, sxy = sx+p.occ, sy+p.watts, sxx+p.occ*p.occ, sxy+p.occ*p.watts
	}
	det := n*sxx - sx*sx
	b = (n*sxy - sx*sy) / det
	a = (sy - b*sx) / n
	var rss float64
	for _, p := range pts {
		r := p.watts - a - b*p.occ
		rss += r * r
	}
	s2 := rss / math.Max(n-2, 1)
	cov = [2][2]float64{{s2 * sxx / det, -s2 * sx / det}, {-s2 * sx / det, s2 * n / det}}
	return a, b, cov, math.Sqrt(s2)
}
