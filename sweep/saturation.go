package sweep

import (
	"math"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// Over-saturation. An open-loop probe above capacity never settles: the
// queue grows for as long as arrivals come, and every later request waits
// longer for its first token. Its budgets will fail, and running it to the
// end only makes the queue (and the wait for the grace period) longer. The
// idea, after GuideLLM's over-saturation detection, is to watch two series
// while the probe runs, the requests in flight and TTFT, and to stop the
// probe once both are growing, steadily and substantially, over a long
// enough window.
//
// Here: the in-flight count (plus the arrivals dropped at max_concurrency,
// which is where a capped queue keeps growing) is sampled at every record
// of the searched stage, TTFT at every request's send time. Each series
// gets a least-squares line; the probe is over-saturated when, over at
// least minSpan of records, both slopes are positive with a t-statistic of
// at least satMinT, the queue grows by at least satMinExcess of the offered
// rate (the server falls behind by a tenth of the load or more: near
// capacity a queue also wanders upwards for a while, but slowly), by at
// least satMinQueue requests and by half its starting level, and the
// fitted TTFT at least doubled. Closed-loop stages are never judged: their
// in-flight count is fixed.
const (
	satMinT      = 4.0
	satMinExcess = 0.1
	satMinQueue  = 4.0
	satMinTTFT   = 16 // TTFT samples before the first judgement
	satEvery     = 8  // records between judgements
	satMaxSpan   = 5 * time.Second
	satMinSpanLo = 2 * time.Second
)

// saturation watches one probe's records. Not safe for concurrent use (a
// run calls its observer from one goroutine).
type saturation struct {
	stage   int
	rate    float64 // offered, requests/s
	minSpan time.Duration
	drops   int
	n       int
	qt, qv  []float64 // seconds, in flight + dropped so far
	tt, tv  []float64 // seconds, TTFT in ms
}

// newSaturation watches stage idx (open loop). The window it needs is a
// third of the stage's length (its duration, or requests over rate),
// between 2 and 5 seconds.
func newSaturation(idx int, st *scenario.Stage) *saturation {
	length := st.Duration.D()
	if st.Requests > 0 && st.RatePerSec > 0 {
		byCount := time.Duration(float64(st.Requests) / st.RatePerSec * float64(time.Second))
		if length == 0 || byCount < length {
			length = byCount
		}
	}
	span := satMaxSpan
	if length > 0 {
		span = min(satMaxSpan, max(satMinSpanLo, length/3))
	}
	return &saturation{stage: idx, rate: st.RatePerSec, minSpan: span}
}

// add takes one record and the number of requests in flight; it reports
// whether the probe is now plainly over-saturated.
func (s *saturation) add(rec results.Record, inFlight int) bool {
	r := rec.Result
	if r == nil || r.Stage != s.stage {
		return false
	}
	at := r.End
	if r.Outcome == results.Dropped {
		s.drops++
		at = r.Scheduled
	}
	s.qt = append(s.qt, at.Seconds())
	s.qv = append(s.qv, float64(inFlight+s.drops))
	if d, ok := r.TTFT(); ok {
		s.tt = append(s.tt, r.Sent.Seconds())
		s.tv = append(s.tv, float64(d)/float64(time.Millisecond))
	}
	s.n++
	if s.n%satEvery != 0 || len(s.tv) < satMinTTFT {
		return false
	}
	if s.qt[len(s.qt)-1]-s.qt[0] < s.minSpan.Seconds() {
		return false
	}
	q0, q1, qT, ok := growth(s.qt, s.qv)
	span := s.qt[len(s.qt)-1] - s.qt[0]
	if !ok || qT < satMinT || q1-q0 < max(satMinQueue, q0/2, satMinExcess*s.rate*span) {
		return false
	}
	t0, t1, tT, ok := growth(s.tt, s.tv)
	return ok && tT >= satMinT && t1 >= 2*max(t0, 1)
}

// growth fits y = a + b·x by least squares and returns the fitted values
// at the first and last x and the slope's t-statistic (b over its standard
// error); ok is false when the line is undefined.
func growth(x, y []float64) (from, to, t float64, ok bool) {
	n := float64(len(x))
	if n < 3 {
		return 0, 0, 0, false
	}
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx, my = mx/n, my/n
	var sxx, sxy float64
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (y[i] - my)
	}
	if sxx <= 0 {
		return 0, 0, 0, false
	}
	b := sxy / sxx
	a := my - b*mx
	var sse float64
	for i := range x {
		e := y[i] - a - b*x[i]
		sse += e * e
	}
	se := math.Sqrt(sse / (n - 2) / sxx)
	switch {
	case se == 0 && b > 0:
		t = math.Inf(1)
	case se == 0:
		t = 0
	default:
		t = b / se
	}
	return a + b*x[0], a + b*x[len(x)-1], t, true
}
