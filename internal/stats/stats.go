// Package stats computes how sure a figure is: distribution-free
// confidence intervals for percentiles (from order statistics), intervals
// for means (Student's t) and for rates measured window by window (batch
// means). It consumes samples and produces estimates with their bounds, or
// says that the samples are too few for an interval at the asked
// confidence. It is a leaf (standard library only): package report puts
// the intervals on every figure it prints, and package load stops a stage
// once a figure is known to a chosen precision.
package stats

import (
	"math"
	"slices"
)

// Interval is an estimate and its confidence bounds. OK is false when the
// samples were too few for an interval at the asked confidence: then only
// Estimate may be set.
type Interval struct {
	Estimate float64
	Lo, Hi   float64
	OK       bool
}

// Margin is the interval's larger half-width relative to the estimate
// (0.05: ±5 %), +Inf without an interval or with a zero estimate.
func (iv Interval) Margin() float64 {
	if !iv.OK || iv.Estimate == 0 {
		return math.Inf(1)
	}
	return max(iv.Hi-iv.Estimate, iv.Estimate-iv.Lo) / math.Abs(iv.Estimate)
}

// QuantileRanks returns the 1-based ranks lo < hi of the order statistics
// X(lo), X(hi) of n samples that bound the q-quantile with probability at
// least conf, whatever the (continuous) distribution: the equal-tailed
// interval of the two one-sided bounds at (1+conf)/2 each (QuantileBound).
// ok is false when either bound falls outside 1..n (too few samples: the
// p99 of 100 values has no upper bound among them).
func QuantileRanks(n int, q, conf float64) (lo, hi int, ok bool) {
	tail := (1 + conf) / 2
	lo, okLo := QuantileBound(n, q, tail, false)
	hi, okHi := QuantileBound(n, q, tail, true)
	return lo, hi, okLo && okHi
}

// QuantileBound returns the 1-based rank of the order statistic of n
// samples that is a one-sided conf bound of the q-quantile: with upper, the
// smallest u with P(X(u) ≥ ξq) = P(K ≤ u−1) ≥ conf; else the largest l
// with P(X(l) ≤ ξq) = P(K ≥ l) ≥ conf, for K ~ Binomial(n, q). ok is false
// when that rank falls outside 1..n.
func QuantileBound(n int, q, conf float64, upper bool) (rank int, ok bool) {
	if n < 1 || !(q > 0 && q < 1) || !(conf > 0 && conf < 1) {
		return 0, false
	}
	start, pmf := binomial(n, q)
	if upper {
		// The smallest k with P(K ≤ k) ≥ conf: u = k + 1.
		var sum float64
		for i, p := range pmf {
			if sum += p; sum >= conf {
				k := start + i
				return k + 1, k+1 <= n
			}
		}
		return n + 1, false
	}
	// The largest k with P(K ≥ k) ≥ conf: l = k.
	var sum float64
	for i := len(pmf) - 1; i >= 0; i-- {
		if sum += pmf[i]; sum >= conf {
			k := start + i
			return k, k >= 1
		}
	}
	return 0, false
}

// binomial returns the probabilities of Binomial(n, q) over the values k =
// start, start+1, … that hold all but a negligible mass (40 standard
// deviations either side of the mode, within 0..n), by the ratio
// recurrence from the mode: O(√n) work rather than O(n).
func binomial(n int, q float64) (start int, pmf []float64) {
	mode := min(int(math.Floor(float64(n+1)*q)), n)
	sd := math.Sqrt(float64(n) * q * (1 - q))
	lo := max(0, mode-int(40*sd)-10)
	hi := min(n, mode+int(40*sd)+10)
	pmf = make([]float64, hi-lo+1)
	lg := lgamma(float64(n)+1) - lgamma(float64(mode)+1) - lgamma(float64(n-mode)+1)
	pmf[mode-lo] = math.Exp(lg + float64(mode)*math.Log(q) + float64(n-mode)*math.Log1p(-q))
	r := q / (1 - q)
	for k := mode; k < hi; k++ {
		pmf[k+1-lo] = pmf[k-lo] * float64(n-k) / float64(k+1) * r
	}
	for k := mode; k > lo; k-- {
		pmf[k-1-lo] = pmf[k-lo] * float64(k) / float64(n-k+1) / r
	}
	return lo, pmf
}

func lgamma(x float64) float64 {
	v, _ := math.Lgamma(x)
	return v
}

// Quantile returns the q-quantile of sorted samples (the order statistic
// of rank ⌈q·n⌉) and its distribution-free interval at conf.
func Quantile(sorted []float64, q, conf float64) Interval {
	n := len(sorted)
	if n == 0 {
		return Interval{}
	}
	iv := Interval{Estimate: sorted[min(max(int(math.Ceil(q*float64(n)))-1, 0), n-1)]}
	lo, hi, ok := QuantileRanks(n, q, conf)
	if ok {
		iv.Lo, iv.Hi, iv.OK = sorted[lo-1], sorted[hi-1], true
	}
	return iv
}

// QuantileUnsorted is Quantile for samples in any order; it reorders xs
// (partial selections, linear time) rather than sorting them.
func QuantileUnsorted(xs []float64, q, conf float64) Interval {
	n := len(xs)
	if n == 0 {
		return Interval{}
	}
	iv := Interval{Estimate: selectK(xs, min(max(int(math.Ceil(q*float64(n)))-1, 0), n-1))}
	lo, hi, ok := QuantileRanks(n, q, conf)
	if ok {
		iv.Lo, iv.Hi, iv.OK = selectK(xs, lo-1), selectK(xs, hi-1), true
	}
	return iv
}

// Mean returns the mean of xs and its Student-t interval at conf; no
// interval from fewer than two samples or without spread.
func Mean(xs []float64, conf float64) Interval {
	n := len(xs)
	if n == 0 {
		return Interval{}
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	m := sum / float64(n)
	iv := Interval{Estimate: m}
	if n < 2 {
		return iv
	}
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	se := math.Sqrt(ss / float64(n-1) / float64(n))
	h := TQuantile(1-(1-conf)/2, float64(n-1)) * se
	iv.Lo, iv.Hi, iv.OK = m-h, m+h, true
	return iv
}

// selectK returns the k-th smallest (0-based) of xs, reordering xs
// (Hoare's selection, expected linear time).
func selectK(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		// Median of three as the pivot, against sorted inputs.
		mid := lo + (hi-lo)/2
		if xs[mid] < xs[lo] {
			xs[mid], xs[lo] = xs[lo], xs[mid]
		}
		if xs[hi] < xs[lo] {
			xs[hi], xs[lo] = xs[lo], xs[hi]
		}
		if xs[hi] < xs[mid] {
			xs[hi], xs[mid] = xs[mid], xs[hi]
		}
		p := xs[mid]
		i, j := lo, hi
		for i <= j {
			for xs[i] < p {
				i++
			}
			for xs[j] > p {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}

// Sorted returns a sorted copy of xs.
func Sorted(xs []float64) []float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s
}

// normalQuantile is the p-quantile of the standard normal distribution
// (Acklam's rational approximation refined by one Halley step: relative
// error below 1e-15).
func normalQuantile(p float64) float64 {
	switch {
	case p <= 0:
		return math.Inf(-1)
	case p >= 1:
		return math.Inf(1)
	}
	a := [...]float64{-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00}
	b := [...]float64{-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01, -1.328068155288572e+01}
	c := [...]float64{-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00}
	d := [...]float64{7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00}
	var x float64
	switch {
	case p < 0.02425:
		q := math.Sqrt(-2 * math.Log(p))
		x = (((((c[0]*q+c[1])*q+c[2])*q+c[3])*q+c[4])*q + c[5]) / ((((d[0]*q+d[1])*q+d[2])*q+d[3])*q + 1)
	case p > 1-0.02425:
		q := math.Sqrt(-2 * math.Log1p(-p))
		x = -(((((c[0]*q+c[1])*q+c[2])*q+c[3])*q+c[4])*q + c[5]) / ((((d[0]*q+d[1])*q+d[2])*q+d[3])*q + 1)
	default:
		q := p - 0.5
		r := q * q
		x = (((((a[0]*r+a[1])*r+a[2])*r+a[3])*r+a[4])*r + a[5]) * q / (((((b[0]*r+b[1])*r+b[2])*r+b[3])*r+b[4])*r + 1)
	}
	e := 0.5*math.Erfc(-x/math.Sqrt2) - p
	u := e * math.Sqrt(2*math.Pi) * math.Exp(x*x/2)
	return x - u/(1+x*u/2)
}

// TQuantile is the p-quantile of Student's t distribution with nu (> 0,
// not necessarily whole) degrees of freedom: exact for nu = 1 and 2, else
// the root of the distribution function found by bisection to 1e-12
// (the normal quantile from nu = 1e6). Small nu matters: Welch's
// interval over two runs a side has about one degree of freedom, where
// t(0.975) is 12.7, not the normal 1.96.
func TQuantile(p, nu float64) float64 {
	switch {
	case math.IsNaN(p) || math.IsNaN(nu) || nu <= 0:
		return math.NaN()
	case p <= 0:
		return math.Inf(-1)
	case p >= 1:
		return math.Inf(1)
	case p < 0.5:
		return -TQuantile(1-p, nu)
	case p == 0.5:
		return 0
	case nu >= 1e6:
		return normalQuantile(p)
	case nu == 1:
		return math.Tan(math.Pi * (p - 0.5))
	case nu == 2:
		return (2*p - 1) / math.Sqrt(2*p*(1-p))
	}
	lo, hi := 0.0, 1.0
	for tCDF(hi, nu) < p && hi < 1e300 {
		lo, hi = hi, hi*2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if tCDF(mid, nu) < p {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo <= 1e-12*hi {
			break
		}
	}
	return (lo + hi) / 2
}

// tCDF is Student's t distribution function at t ≥ 0 with nu degrees of
// freedom: 1 − I_x(nu/2, 1/2)/2 with x = nu/(nu+t²).
func tCDF(t, nu float64) float64 {
	return 1 - regIncBeta(nu/2, 0.5, nu/(nu+t*t))/2
}

// regIncBeta is the regularised incomplete beta function I_x(a, b), by its
// continued fraction (evaluated where it converges fast, with the
// symmetry I_x(a, b) = 1 − I_{1−x}(b, a) elsewhere).
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaFraction(a, b, x) / a
	}
	return 1 - front*betaFraction(b, a, 1-x)/b
}

// betaFraction evaluates the incomplete beta function's continued
// fraction by the modified Lentz method.
func betaFraction(a, b, x float64) float64 {
	const tiny, eps = 1e-300, 1e-15
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1.0; m <= 500; m++ {
		// The even step, then the odd one.
		num := m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m))
		d, c = 1+num*d, 1+num/c
		d, c = lentzGuard(d), lentzGuard(c)
		d = 1 / d
		h *= d * c
		num = -(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 2*m + 1))
		d, c = 1+num*d, 1+num/c
		d, c = lentzGuard(d), lentzGuard(c)
		d = 1 / d
		step := d * c
		h *= step
		if math.Abs(step-1) < eps {
			break
		}
	}
	return h
}

// lentzGuard keeps a Lentz term away from zero.
func lentzGuard(v float64) float64 {
	if math.Abs(v) < 1e-300 {
		return 1e-300
	}
	return v
}

// Wilson returns the Wilson score interval at conf of a proportion p
// observed over n trials (good near 0 and 1, where the normal one is not).
func Wilson(p float64, n int64, conf float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	z := normalQuantile(1 - (1-conf)/2)
	nn := float64(n)
	den := 1 + z*z/nn
	center := (p + z*z/(2*nn)) / den
	half := z * math.Sqrt(p*(1-p)/nn+z*z/(4*nn*nn)) / den
	return max(center-half, 0), min(center+half, 1)
}
