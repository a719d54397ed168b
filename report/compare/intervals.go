package compare

import (
	"fmt"
	"math"
	"slices"

	"github.com/servebench/servebench/internal/stats"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
)

// sideConf is each side's confidence when a change's interval combines
// two per-side intervals: 97.5 % each, so the pair holds both truths with
// at least 95 %.
const sideConf = 0.975

// interval is the 95 % interval of a row's relative change (new − base) /
// base: with repeats on both sides, Welch's interval over the runs' own
// figures (run-to-run noise); else, with a history of the base's
// workload, the change ± the spread the history shows; else the
// difference of each side's own interval of the figure (sampling error
// only). NaN when there is none.
func (cp *comparer) interval(scope string, bst, nst *report.Stage, metric, stat string, base, change float64) (lo, hi float64) {
	nan := math.NaN()
	if base == 0 {
		return nan, nan
	}
	if cp.hist != nil {
		if lo, hi, ok := cp.hist.interval(scope, metric, stat, change, max(len(cp.bRuns), 1), max(len(cp.nRuns), 1)); ok {
			return lo, hi
		}
	}
	if cp.between() {
		bv, nv := runValues(cp.bRuns, scope, metric, stat), runValues(cp.nRuns, scope, metric, stat)
		d, half, ok := welch(bv, nv)
		if !ok {
			return nan, nan
		}
		// A positive figure cannot fall by more than all of it.
		mb := mean(bv)
		return max((d-half)/mb, -1), (d + half) / mb
	}
	bl, bh, ok1 := sideInterval(cp.base, bst, metric, stat)
	nl, nh, ok2 := sideInterval(cp.cand, nst, metric, stat)
	if !ok1 || !ok2 {
		return nan, nan
	}
	return (nl - bh) / base, (nh - bl) / base
}

// sideInterval is one run's interval of a figure at sideConf.
func sideInterval(a *report.Aggregate, st *report.Stage, metric, stat string) (lo, hi float64, ok bool) {
	if stat != "" {
		return a.StatInterval(st.Index, metric, stat, sideConf)
	}
	switch metric {
	case "output_tokens_per_s":
		return a.RateInterval(st, sideConf)
	case "error_rate":
		v, n, ok := st.Figure(metric)
		if !ok {
			return 0, 0, false
		}
		lo, hi := stats.Wilson(v, n, sideConf)
		return lo, hi, true
	}
	return 0, 0, false
}

// runValues is a figure in each run of one side, for a scope ("overall"
// or a stage name); runs without it are left out.
func runValues(runs []*report.Summary, scope, metric, stat string) []float64 {
	var out []float64
	for _, s := range runs {
		st := &s.Overall
		if scope != "overall" {
			i := slices.IndexFunc(s.Stages, func(x report.Stage) bool { return x.Name == scope })
			if i < 0 {
				continue
			}
			st = &s.Stages[i]
		}
		if stat != "" {
			if d := st.Dist(metric); d != nil {
				if v, ok := d.Stat(stat); ok {
					out = append(out, v)
				}
			}
			continue
		}
		if v, _, ok := st.Figure(metric); ok {
			out = append(out, v)
		}
	}
	return out
}

// welch is the difference of the means of b and n and the half-width of
// its 95 % interval by Welch's t (unequal variances).
func welch(b, n []float64) (diff, half float64, ok bool) {
	if len(b) < 2 || len(n) < 2 {
		return 0, 0, false
	}
	vb, vn := variance(b)/float64(len(b)), variance(n)/float64(len(n))
	se := math.Sqrt(vb + vn)
	diff = mean(n) - mean(b)
	if se == 0 {
		return diff, 0, true
	}
	df := (vb + vn) * (vb + vn) / (vb*vb/float64(len(b)-1) + vn*vn/float64(len(n)-1))
	return diff, stats.TQuantile(0.975, df) * se, true
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func variance(xs []float64) float64 {
	m := mean(xs)
	var s float64
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s / float64(len(xs)-1)
}

// workloadDiffs says how two runs' workloads differ: what they asked of
// the server (API, prompt and output lengths, dataset, shared prefix, each
// stage's shape), not what the server did.
func workloadDiffs(b, n *report.Workload) []string {
	if b == nil || n == nil {
		return nil
	}
	var out []string
	diff := func(what, x, y string) {
		if x != y {
			out = append(out, fmt.Sprintf("%s %s against %s", what, orNone(x), orNone(y)))
		}
	}
	diff("API", b.API, n.API)
	diff("input tokens", distText(b.InputTokens), distText(n.InputTokens))
	diff("output tokens", distText(b.OutputTokens), distText(n.OutputTokens))
	diff("dataset", b.Dataset, n.Dataset)
	diff("shared prefix tokens", fmt.Sprint(b.SharedPrefixTokens), fmt.Sprint(n.SharedPrefixTokens))
	if len(b.Stages) != len(n.Stages) {
		return append(out, fmt.Sprintf("%d stages against %d", len(b.Stages), len(n.Stages)))
	}
	for i := range b.Stages {
		x, y := b.Stages[i], n.Stages[i]
		x.Index, y.Index, x.Name, y.Name = 0, 0, "", ""
		diff(fmt.Sprintf("stage %d (%s)", i, b.Stages[i].Name), x.String(), y.String())
	}
	return out
}

func distText(d *results.SpecDist) string {
	if d == nil {
		return ""
	}
	return d.String()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
