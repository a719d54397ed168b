package twin

import (
	"errors"
	"math"
	"slices"
)

// Coefficient names: the simulator's settings the fit estimates, in the
// order of the design matrix's columns.
const (
	StepOverhead = "step_overhead_us"
	PerSeq       = "per_seq_us"
	PerKVToken   = "per_kv_token_ns"
	PerPrefill   = "per_prefill_token_us"
)

// Coefficients lists the fitted settings in column order.
var Coefficients = []string{StepOverhead, PerSeq, PerKVToken, PerPrefill}

// trimSigmas is how many robust standard deviations a residual may be
// from the fit before its segment is set aside as an outlier (a stalled
// client, a burst split in two).
const trimSigmas = 4.0

// linearFit is the result of the weighted, trimmed least squares.
type linearFit struct {
	beta  []float64   // per column; NaN for a column left out
	cov   [][]float64 // HC1 covariance of beta (rows and columns of left-out ones are 0)
	used  []bool      // columns estimated
	n     int         // segments used
	trim  int         // segments set aside as outliers
	relSD float64     // robust relative scatter of one step's duration
}

// design returns segment s's row: steps, sequences, thousands of context
// tokens, prefill tokens.
func design(s segment) []float64 { return []float64{s.k, s.seqs, s.ctx / 1000, s.prefill} }

// fitSegments fits duration = row · beta over segs, weighting a segment
// of k steps by 1/k, using the columns in use (nil: all). It drops a
// column the data cannot tell apart from the others (no variation of its
// own) and trims outliers twice.
func fitSegments(segs []segment, use []bool) (*linearFit, error) {
	if len(segs) == 0 {
		return nil, errors.New("no step could be timed")
	}
	if use == nil {
		use = []bool{true, true, true, true}
	}
	use = slices.Clone(use)
	keep := make([]bool, len(segs))
	for i := range keep {
		keep[i] = true
	}
	var f *linearFit
	for round := 0; round < 3; round++ {
		var err error
		f, err = wls(segs, keep, use)
		if err != nil {
			return nil, err
		}
		// Robust scale of the standardized residuals.
		var rs []float64
		for i, s := range segs {
			if keep[i] {
				rs = append(rs, math.Abs(resid(s, f.beta))/math.Sqrt(s.k))
			}
		}
		slices.Sort(rs)
		mad := rs[len(rs)/2] * 1.4826
		if mad == 0 {
			break
		}
		changed := false
		for i, s := range segs {
			out := math.Abs(resid(s, f.beta))/math.Sqrt(s.k) > trimSigmas*mad
			if keep[i] == out {
				keep[i] = !out
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	f.trim = 0
	for _, k := range keep {
		if !k {
			f.trim++
		}
	}
	// Relative scatter per step: squared relative residual times steps.
	var rel []float64
	for i, s := range segs {
		if !keep[i] {
			continue
		}
		pred := dot(design(s), f.beta)
		if pred > 0 {
			r := resid(s, f.beta) / pred
			rel = append(rel, r*r*s.k)
		}
	}
	if len(rel) > 0 {
		slices.Sort(rel)
		f.relSD = math.Sqrt(rel[len(rel)/2] / 0.4549) // the median of χ²(1)
	}
	return f, nil
}

func resid(s segment, beta []float64) float64 { return s.durUS - dot(design(s), beta) }

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		if !math.IsNaN(b[i]) {
			s += a[i] * b[i]
		}
	}
	return s
}

// wls solves the weighted least squares on the kept segments and the
// columns in use; a column whose information is almost all explained by
// the others (less than 1e-6 of its own) is dropped and the fit redone.
func wls(segs []segment, keep, use []bool) (*linearFit, error) {
	p := len(use)
	for {
		var cols []int
		for j, u := range use {
			if u {
				cols = append(cols, j)
			}
		}
		if len(cols) == 0 {
			return nil, errors.New("no coefficient can be estimated")
		}
		m := len(cols)
		xtx := newMat(m)
		xty := make([]float64, m)
		n := 0
		for i, s := range segs {
			if !keep[i] {
				continue
			}
			n++
			row := design(s)
			w := 1 / s.k
			for a, ca := range cols {
				xty[a] += w * row[ca] * s.durUS
				for b, cb := range cols {
					xtx[a][b] += w * row[ca] * row[cb]
				}
			}
		}
		if n <= m {
			return nil, errors.New("too few timed steps to fit the cost model")
		}
		// A column with no variation of its own: its diagonal of the
		// inverse explodes. Drop the worst and try again.
		inv, ok := invert(xtx)
		worst, worstRatio := -1, 0.0
		for a := range cols {
			if !ok {
				break
			}
			ratio := inv[a][a] * xtx[a][a] // the variance inflation factor
			if ratio > 1e6 && ratio > worstRatio {
				worst, worstRatio = a, ratio
			}
		}
		if !ok || worst >= 0 {
			if !ok {
				worst = m - 1
				for a := range cols {
					if xtx[a][a] == 0 {
						worst = a
					}
				}
			}
			use[cols[worst]] = false
			continue
		}
		beta := make([]float64, p)
		for j := range beta {
			beta[j] = math.NaN()
		}
		for a, ca := range cols {
			for b := range cols {
				if math.IsNaN(beta[ca]) {
					beta[ca] = 0
				}
				beta[ca] += inv[a][b] * xty[b]
			}
		}
		// HC1: (X'WX)⁻¹ X'W diag(e²) W X (X'WX)⁻¹ · n/(n−m).
		meat := newMat(m)
		for i, s := range segs {
			if !keep[i] {
				continue
			}
			row := design(s)
			w := 1 / s.k
			e := resid(s, beta)
			for a, ca := range cols {
				for b, cb := range cols {
					meat[a][b] += w * w * e * e * row[ca] * row[cb]
				}
			}
		}
		sand := mul(mul(inv, meat), inv)
		scale := float64(n) / float64(n-m)
		cov := newMat(p)
		for a, ca := range cols {
			for b, cb := range cols {
				cov[ca][cb] = sand[a][b] * scale
			}
		}
		return &linearFit{beta: beta, cov: cov, used: slices.Clone(use), n: n}, nil
	}
}
