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
type powerPoint struct {
	occ, watts float64
	from, to   time.Duration
}

// powerModel fits the simulator's power model (sim.Config.IdlePowerW,
// MaxPowerW; sim/power.go) from the runs' GPU telemetry, when they have
// any: for each interval between two successive GPU samples, the GPUs'
// mean power (the energy counter's increase, or the power integrated)
// against the batch occupancy over it, the requests in the engine's
// batch (from the start of the step that prefilled them to their last
// token) time-averaged over max_num_seqs; a least-squares line through
// them gives the power of an idle and of a full batch, divided over the
// GPUs. That is the footing the simulator applies the law on: every
// step's power by the requests it ran, idle power between steps, so that
// the twin's mean power over a stretch is the line at the stretch's
// time-averaged occupancy. (Counting a stream from its first token on
// left out the step that prefilled it, one step in every response, and
// the twin, which counts it, ran 1.5 % hot at 64-token responses.) The
// token term of the simulator's occupancy (a step's tokens over
// max_num_batched_tokens) is left out: it passes the requests' term only
// in steps that prefill long prompts. Each calibration stage's measured
// energy against the line at its occupancy is the twin's in-sample miss
// (PowerFit.StageMiss), which a prediction's band includes.
func (res *Result) powerModel(cfg *sim.Config, runs []*runData) {
	var pts []powerPoint
	gpus := 0
	byRun := make([][]powerPoint, len(runs))
	for i, rd := range runs {
		p, n := powerPoints(rd, batchSpans(rd.reqs, cfg.MaxNumBatchedTokens), cfg.MaxNumSeqs)
		byRun[i] = p
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
	miss, stages := stageMiss(runs, byRun, a, b)
	if stages > 0 {
		res.power.StageMiss, res.power.Stages = roundSig(miss, 4), stages
		res.Notes = append(res.Notes, fmt.Sprintf("power model: the fitted line misses the measured energy of the %d calibration stages by %.2f %% (root mean square); a prediction's band of joules per token includes it",
			stages, 100*miss))
	}
}

// stageMiss is the root mean square of the relative miss of each
// calibration stage's measured energy by the line a + b·occupancy (all
// GPUs), over the GPU intervals that lie within the stage's span (the
// samples' own intervals: one cut at a stage's edge would be read by
// interpolation across a change of load); and how many stages had such
// intervals.
func stageMiss(runs []*runData, pts [][]powerPoint, a, b float64) (float64, int) {
	sq, n := 0.0, 0
	for i, rd := range runs {
		for _, sp := range stageSpans(rd) {
			var got, want float64
			for _, p := range pts[i] {
				if p.from >= sp[0] && p.to <= sp[1] {
					dt := (p.to - p.from).Seconds()
					got += p.watts * dt
					want += (a + b*p.occ) * dt
				}
			}
			if want <= 0 {
				continue
			}
			r := got/want - 1
			sq += r * r
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return math.Sqrt(sq / float64(n)), n
}

// powerPoints returns a run's GPU intervals and the GPUs its telemetry
// saw (0 without telemetry).
func powerPoints(rd *runData, spans []batchSpan, maxNumSeqs int) ([]powerPoint, int) {
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
			out = append(out, powerPoint{occ: inBatch(spans, from, to) / float64(maxNumSeqs), watts: e.AvgPowerW, from: from, to: to})
		}
	}
	return out, gpus
}

// batchSpan is when a request was in the engine's batch.
type batchSpan struct{ from, to time.Duration }

// batchSpans returns when each request with tokens was in the engine's
// batch: from the start of the first step that prefilled it (the end of
// the step before, or its sending when the engine was idle) to its last
// token. A prompt longer than budget (max_num_batched_tokens; 0:
// unknown) took ⌈prompt/budget⌉ steps, ending with its first token's.
func batchSpans(reqs []*request, budget int) []batchSpan {
	var with []*request
	for _, q := range reqs {
		if len(q.chunks) > 0 {
			with = append(with, q)
		}
	}
	if len(with) == 0 {
		return nil
	}
	stepT, stepOf, _ := align(with)
	out := make([]batchSpan, len(with))
	for i, q := range with {
		k := 1
		if l := q.prompt - min(q.cached, q.prompt-1); budget > 0 && l > budget {
			k = (l + budget - 1) / budget
		}
		first := stepOf[i][0] - k + 1
		from := q.sent
		if first > 0 {
			from = max(from, stepT[first-1])
		}
		out[i] = batchSpan{from: min(from, q.chunks[0]), to: q.chunks[len(q.chunks)-1]}
	}
	return out
}

// inBatch is the time-averaged number of requests in the batch over
// [from, to].
func inBatch(spans []batchSpan, from, to time.Duration) float64 {
	sum := 0.0
	for _, s := range spans {
		a, b := max(s.from, from), min(s.to, to)
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
