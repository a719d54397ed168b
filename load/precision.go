package load

import (
	"math"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/stats"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// precision is a stage's precision goal (load.stages[].until): it
// collects the figure's observations from the stage's measured, successful
// requests, and checks the figure's interval as they grow (every 5 %, at
// least every 10 observations), in linear time per check.
type precision struct {
	stage   int
	spec    scenario.Until
	metric  results.Metric
	q       float64 // the quantile; 0 for the mean
	xs      []float64
	buf     []time.Duration
	next    int
	reached bool
	last    stats.Interval
}

func newPrecision(stage int, u *scenario.Until) *precision {
	name, stat, _ := strings.Cut(u.Metric, ".")
	m, _ := results.MetricByName(name)
	p := &precision{stage: stage, spec: *u, metric: m, next: NextCheck(0)}
	if q, ok := results.Quantile(stat); ok {
		p.q = q
	}
	return p
}

// add takes a finished request of the stage and reports whether the goal
// is reached now.
func (p *precision) add(res *results.Result) bool {
	if p.reached || res.Warmup || res.Outcome != results.OK || p.metric.Observe == nil {
		return p.reached
	}
	p.buf = p.metric.Observe(res, p.buf[:0])
	for _, d := range p.buf {
		p.xs = append(p.xs, float64(d)/1e6)
	}
	if len(p.xs) < p.next {
		return false
	}
	p.next = NextCheck(len(p.xs))
	p.last = p.interval()
	p.reached = p.last.Margin() <= float64(p.spec.Margin)
	return p.reached
}

// interval is the figure's estimate and interval over the samples so far.
func (p *precision) interval() stats.Interval {
	conf := float64(p.spec.Confidence)
	if p.q == 0 {
		return stats.Mean(p.xs, conf)
	}
	return stats.QuantileUnsorted(p.xs, p.q, conf)
}

// result says how the goal ended.
func (p *precision) result() results.Until {
	if !p.reached && len(p.xs) > 0 {
		p.last = p.interval()
	}
	u := results.Until{Stage: p.stage, Metric: p.spec.Metric, Margin: float64(p.spec.Margin), Confidence: float64(p.spec.Confidence),
		Reached: p.reached, Samples: len(p.xs), Estimate: p.last.Estimate}
	if p.last.OK {
		u.Lo, u.Hi = p.last.Lo, p.last.Hi
		if m := p.last.Margin(); !math.IsInf(m, 0) {
			u.Achieved = m
		}
	}
	return u
}

// NextCheck is the observation count at which a precision goal is checked
// next, after a check at n (0: the first check): 5 % more, at least 10
// more, so checks cost linear time in all.
func NextCheck(n int) int { return max(n+10, n*21/20) }
