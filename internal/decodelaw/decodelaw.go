// Package decodelaw is the memory-bound decode law servebench states and
// draws: a decode step reads the KV cache of every stream in the batch, so
// the time a stream waits per output token grows linearly with the context
// in flight, 1 / (tok/s per stream) ≈ a + b · context. It consumes points
// (streams decoding, output tokens per second, context in flight) from any
// source and produces the robust least-squares fit. Package report/correlate
// fits it to a run's windows, package vllmlog to a server log's stats lines,
// and report/chart draws it, so the three state one law.
package decodelaw

import (
	"math"
	"slices"
)

// Point is one observation of a decoding server: Streams decoding at once,
// their output TokensPerSec in all, and the Context in flight (the
// time-averaged sum over the streams of prompt plus tokens generated so
// far: the tokens whose KV a step reads).
type Point struct {
	Streams, TokensPerSec, Context float64
}

// Fit is the memory-bound decode law: a decode step reads the KV
// cache of every stream in the batch, so the time a stream waits per output
// token grows linearly with the context in flight,
// 1 / (tok/s per stream) ≈ a + b · context, fitted by least squares over
// windows. Context is the time-averaged sum, over the streams in flight,
// of prompt plus tokens generated so far: the tokens whose KV a step reads.
// (With a fixed number of streams the mean per stream would do as well;
// the sum keeps one law across stages of different concurrency.)
type Fit struct {
	InterceptMS     float64 `json:"a_ms"`               // a: time per token per stream at zero context, milliseconds
	SlopeNSPerToken float64 `json:"b_ns_per_token"`     // b: extra time per token per stream for each token of context, nanoseconds
	R2              float64 `json:"r2"`                 // coefficient of determination of the linear fit on 1/throughput
	Windows         int     `json:"windows"`            // windows fitted
	Outliers        int     `json:"outliers"`           // windows left out as stalls (residual beyond 4 robust standard deviations)
	ContextMin      float64 `json:"context_min_tokens"` // smallest fitted context, tokens
	ContextMax      float64 `json:"context_max_tokens"` // largest fitted context, tokens
	Streams         float64 `json:"streams,omitempty"`  // median decoding streams over the fitted windows
	// Holds is true when the fit is a decode law: a positive time per
	// token at zero context and a positive cost per token of context. A
	// negative intercept or slope is arithmetic, not a law of the server:
	// it is reported, never stated as a law nor drawn.
	Holds bool    `json:"holds"`
	a, b  float64 // seconds, seconds per token
}

// PerStream returns the fitted throughput per stream, tokens per second, at
// a context of ctx tokens.
func (f *Fit) PerStream(ctx float64) float64 {
	d := f.a + f.b*ctx
	if d <= 0 {
		return math.NaN()
	}
	return 1 / d
}

// FitPoints fits 1/(tok/s per stream) = a + b·context over the points by
// least squares, then drops the points whose residual exceeds four robust
// standard deviations (1.4826 × the median absolute residual: stalls of the
// server or the client, which would otherwise dominate the squares) and
// fits again, at most three times. It needs three points and some spread
// of context, and returns nil without them. Points from any source fit
// the same way: a run's windows, or a server log's periodic lines.
func FitPoints(ps []Point) *Fit {
	var xs, ys, streams []float64
	for _, p := range ps {
		if p.Streams <= 0 || p.TokensPerSec <= 0 {
			continue
		}
		xs = append(xs, p.Context)
		ys = append(ys, p.Streams/p.TokensPerSec)
		streams = append(streams, p.Streams)
	}
	total := len(xs)
	var a, b, r2 float64
	for iter := 0; ; iter++ {
		if len(xs) < 3 {
			return nil
		}
		var ok bool
		if a, b, r2, ok = leastSquares(xs, ys); !ok {
			return nil
		}
		if iter == 3 {
			break
		}
		res := make([]float64, len(xs))
		for i := range xs {
			res[i] = math.Abs(ys[i] - a - b*xs[i])
		}
		sorted := slices.Clone(res)
		slices.Sort(sorted)
		limit := 4 * 1.4826 * sorted[len(sorted)/2]
		kx, ky, ks := xs[:0:0], ys[:0:0], streams[:0:0]
		for i := range xs {
			if res[i] <= limit {
				kx, ky, ks = append(kx, xs[i]), append(ky, ys[i]), append(ks, streams[i])
			}
		}
		if len(kx) == len(xs) || limit == 0 {
			break
		}
		xs, ys, streams = kx, ky, ks
	}
	slices.Sort(streams)
	return &Fit{InterceptMS: round(a*1e3, 4), SlopeNSPerToken: round(b*1e9, 4), R2: round(r2, 4),
		Windows: len(xs), Outliers: total - len(xs), ContextMin: round(slices.Min(xs), 1),
		ContextMax: round(slices.Max(xs), 1), Streams: round(streams[len(streams)/2], 3),
		Holds: a > 0 && b > 0, a: a, b: b}
}

// leastSquares fits y = a + b·x and returns R². It fails when x has no
// spread (the relative spread must exceed 0.1 %).
func leastSquares(xs, ys []float64) (a, b, r2 float64, ok bool) {
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= n
	my /= n
	var sxx, sxy, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxx += dx * dx
		sxy += dx * dy
		syy += dy * dy
	}
	if sxx == 0 || math.Sqrt(sxx/n) <= 1e-3*math.Abs(mx) {
		return 0, 0, 0, false
	}
	b = sxy / sxx
	a = my - b*mx
	r2 = 1.0
	if syy > 0 {
		r2 = sxy * sxy / (sxx * syy)
	}
	return a, b, r2, true
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}
