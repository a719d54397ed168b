package compare

import (
	"math"
	"slices"
)

// The significance test of `bench compare` is the Mann-Whitney U test (the
// Wilcoxon rank-sum test), two-sided, on per-request values, with the
// normal approximation, a tie correction and a continuity correction.
//
// Why a rank test rather than a bootstrap confidence interval of each
// percentile:
//   - It is distribution-free: latency distributions are skewed and
//     multi-modal (queueing, preemption), so no normality is assumed.
//   - It is deterministic: the same two runs always give the same p-value,
//     so a CI gate never flips on resampling noise; a bootstrap needs a
//     seed and still jitters near the threshold.
//   - It is cheap, O(n log n), whatever the number of requests, where a
//     bootstrap resamples thousands of times.
//   - A bootstrap of an extreme percentile (p99 from a few hundred
//     requests) has poor coverage: the resampled p99 takes only the few
//     values near the top of the sample.
//
// Its limit: it tests whether one run's values tend to be larger than the
// other's, a shift of the bulk. A regression confined to the tail (p99 up,
// p50 unchanged) may not be called significant; the p99 row still shows
// the change. So a row (a percentile) is called significant only when the
// test finds a shift in the same direction as the row's change: a bulk
// that moved down does not make a noisy p99 that moved up significant. It
// is what benchstat uses, for the same reasons.
//
// Each table tests several metrics (TTFT, ITL, TPOT, E2E) at once; with
// four tests at α = 0.05, two runs of one setting would show some
// "significant" change one time in five. The p-values are therefore
// Holm-adjusted over a table's metrics, which keeps that family-wise rate
// at α without Bonferroni's loss of power.
//
// The samples are per request: one TTFT, TPOT, E2E per request, and for
// ITL the request's mean gap. The gaps of one request share its batch and
// are not independent; testing 100,000 gaps as if they were would call
// every noise significant.

// minTestSamples is the smallest sample on either side for which a p-value
// is reported: below it the two-sided test cannot reach 0.05.
const minTestSamples = 4

// mannWhitney returns the two-sided p-value of the Mann-Whitney U test of
// x against y, or NaN when either has fewer than minTestSamples values or
// every value is tied, and the direction of the shift: +1 when y's values
// tend to be larger than x's, -1 when smaller, 0 for neither. NaN values
// are ignored. x and y are not modified.
func mannWhitney(x, y []float64) (p float64, shift int) {
	type obs struct {
		v     float64
		first bool
	}
	all := make([]obs, 0, len(x)+len(y))
	for _, v := range x {
		if !math.IsNaN(v) {
			all = append(all, obs{v, true})
		}
	}
	n1 := len(all)
	for _, v := range y {
		if !math.IsNaN(v) {
			all = append(all, obs{v, false})
		}
	}
	n2 := len(all) - n1
	if n1 < minTestSamples || n2 < minTestSamples {
		return math.NaN(), 0
	}
	slices.SortFunc(all, func(a, b obs) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	n := float64(len(all))
	var r1, ties float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // mean of ranks i+1 … j
		for k := i; k < j; k++ {
			if all[k].first {
				r1 += rank
			}
		}
		t := float64(j - i)
		ties += t*t*t - t
		i = j
	}
	f1, f2 := float64(n1), float64(n2)
	u := r1 - f1*(f1+1)/2
	mean := f1 * f2 / 2
	variance := f1 * f2 / 12 * ((n + 1) - ties/(n*(n-1)))
	if variance <= 0 {
		return math.NaN(), 0
	}
	// u counts the pairs where x's value is the larger: above its mean, y
	// tends to be smaller.
	switch {
	case u > mean:
		shift = -1
	case u < mean:
		shift = 1
	}
	d := math.Abs(u-mean) - 0.5 // continuity correction
	if d < 0 {
		d = 0
	}
	z := d / math.Sqrt(variance)
	return math.Erfc(z / math.Sqrt2), shift
}

// holm returns Holm-Bonferroni adjusted p-values, in the order of ps:
// sorted ascending, the k-th smallest (from 0) of m becomes
// max over j ≤ k of min(1, (m − j) · p(j)). NaN entries are left out of m
// and stay NaN.
func holm(ps []float64) []float64 {
	idx := make([]int, 0, len(ps))
	for i, p := range ps {
		if !math.IsNaN(p) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case ps[a] < ps[b]:
			return -1
		case ps[a] > ps[b]:
			return 1
		}
		return 0
	})
	out := make([]float64, len(ps))
	for i := range out {
		out[i] = math.NaN()
	}
	m, running := len(idx), 0.0
	for k, i := range idx {
		running = math.Max(running, math.Min(1, float64(m-k)*ps[i]))
		out[i] = running
	}
	return out
}
