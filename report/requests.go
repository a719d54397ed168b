package report

import (
	"fmt"

	"github.com/servebench/servebench/results"

	"math"
	"slices"
	"sort"
	"time"
)

// requestLog keeps what the HdrHistograms lose and budgets and comparisons
// need: one figure per request for each per-request metric (goodput's
// objectives are only known when judging, and rank tests between runs
// compare requests), token-count checks, and the server's KV usage and
// preemption counter over time. It costs 4 bytes per per-request metric
// (20 in all), 4 for the send time and 8 for a key per completed request,
// for at most maxKept requests a stage: beyond, it keeps a uniform sample
// of that many (see stageLog.keep), so that its memory does not grow with
// the length of a run. Aggregate feeds it from Add, AddHeader and
// AddSample.
type requestLog struct {
	metrics   []results.Metric // the per-request metrics: latencies a budget may limit
	stages    map[int]*stageLog
	ignoreEOS bool // request.ignore_eos of the results file being read (the last header added)
	points    []serverPoint
	row       []float32 // scratch: one request's figures
	scrapes   int       // successful scrapes
	profile   string    // the metrics profile of the last one
}

// unexported says why a server-side figure has no value when the scrapes
// cannot tell: no page was scraped, or the server does not export the
// series at all. It returns "" when pages with the series were scraped.
func (l *requestLog) unexported(what string, has func(serverPoint) bool) string {
	if l.scrapes == 0 {
		return "no /metrics page was scraped (scrape disabled, or every scrape failed)"
	}
	for _, p := range l.points {
		if has(p) {
			return ""
		}
	}
	return fmt.Sprintf("the server does not export %s (metrics profile %q)", what, l.profile)
}

func newRequestLog(t results.Table) requestLog {
	var ms []results.Metric
	for _, m := range t {
		if m.Class == results.Latency && m.Budget {
			ms = append(ms, m)
		}
	}
	return requestLog{metrics: ms, stages: map[int]*stageLog{}}
}

// index returns the position of a per-request metric in each request's
// figures, or −1.
func (l *requestLog) index(metric string) int {
	for i, m := range l.metrics {
		if m.Name == metric {
			return i
		}
	}
	return -1
}

// stageLog is the requestLog of one stage. Warmup requests are left out.
type stageLog struct {
	// figs holds, for each completed (ok) request, its figure of each
	// per-request metric in milliseconds, len(requestLog.metrics) values
	// a request, NaN where undefined (no TPOT with one output token, no
	// TTFC for reasoning only). A metric observed several times in one
	// request (ITL, one gap per token) counts by its mean: the gaps of one
	// request are not independent, so comparisons test one value per
	// request. Not its median: a stalled client or network delivers tokens
	// in a burst (near-zero gaps after a long one), and a median can fall
	// inside the burst.
	figs      []float32
	sent      []float32 // each completed request's send time, seconds from the run's epoch, in figs' order
	keys      []uint64  // each one's sample key (sampleKey), in figs' order; a max-heap once full
	ok        int64     // completed (ok) requests offered, kept or not
	finished  int64     // ok + failed
	checked   int64     // ok requests whose output-token count could be checked against max_tokens
	mismatch  int64     // … of which differed
	from, to  time.Duration
	haveRange bool

	// The arrival process: scheduled requests (dropped ones included) and
	// the span of their scheduled times, for the offered rate.
	arrivals              int64
	schedFirst, schedLast time.Duration
}

// serverPoint is what one successful scrape said about the two quantities
// server-side budgets use.
type serverPoint struct {
	at                time.Duration
	kv, preemptions   float64
	hasKV, hasPreempt bool
}

func (l *requestLog) header(h *results.Header) {
	l.ignoreEOS = h.Spec != nil && h.Spec.Request.IgnoreEOS != nil && *h.Spec.Request.IgnoreEOS
}

func (l *requestLog) stage(i int) *stageLog {
	s, ok := l.stages[i]
	if !ok {
		s = &stageLog{}
		l.stages[i] = s
	}
	return s
}

// add logs r; obs holds its observations of each of the latency metrics
// (the aggregate's, in its order), of which the log keeps its own.
func (l *requestLog) add(r *results.Result, latency []results.Metric, obs [][]time.Duration) {
	if r.Warmup {
		return
	}
	s := l.stage(r.Stage)
	if s.arrivals == 0 || r.Scheduled < s.schedFirst {
		s.schedFirst = r.Scheduled
	}
	if s.arrivals == 0 || r.Scheduled > s.schedLast {
		s.schedLast = r.Scheduled
	}
	s.arrivals++
	if r.Outcome == results.Dropped || r.Sent == 0 {
		return
	}
	if !s.haveRange || r.Sent < s.from {
		s.from = r.Sent
	}
	if end := max(r.End, r.Sent); !s.haveRange || end > s.to {
		s.to = end
	}
	s.haveRange = true
	switch r.Outcome {
	case results.Failed:
		s.finished++
		return
	case results.OK:
		s.finished++
	default:
		return
	}
	if l.ignoreEOS && !r.Estimated && r.MaxTokens > 0 {
		s.checked++
		if r.OutputTokens != r.MaxTokens {
			s.mismatch++
		}
	}
	row := l.row[:0]
	for _, m := range l.metrics {
		var o []time.Duration
		for i := range latency {
			if latency[i].Name == m.Name {
				o = obs[i]
				break
			}
		}
		v := nan32
		if len(o) > 0 {
			var sum time.Duration
			for _, d := range o {
				sum += d
			}
			v = ms32(sum / time.Duration(len(o)))
		}
		row = append(row, v)
	}
	l.row = row
	s.keep(sampleKey(r), float32(r.Sent.Seconds()), row)
}

// maxKept is how many completed requests a stage's log keeps: a rank test
// or a goodput share from that many is as sure as from all, and 100,000
// requests cost about 3 MB.
const maxKept = 100_000

// sampleKey is a request's pseudo-random key: the log keeps the requests
// with the smallest keys, so what it keeps does not depend on the order
// the records came in (merged files, shards).
func sampleKey(r *results.Result) uint64 {
	x := r.Seq ^ uint64(r.Stage)<<48 ^ uint64(r.Sent)*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// keep adds one completed request's figures (row) to the log: all of them
// up to maxKept; then the maxKept with the smallest keys, a uniform
// sample without replacement (bottom-k), kept in a max-heap on the key.
func (s *stageLog) keep(key uint64, sent float32, row []float32) {
	s.ok++
	if len(s.keys) < maxKept {
		s.keys, s.sent, s.figs = append(s.keys, key), append(s.sent, sent), append(s.figs, row...)
		if len(s.keys) == maxKept {
			for i := len(s.keys)/2 - 1; i >= 0; i-- {
				s.down(i, len(row))
			}
		}
		return
	}
	if key >= s.keys[0] {
		return
	}
	s.keys[0], s.sent[0] = key, sent
	copy(s.figs[:len(row)], row)
	s.down(0, len(row))
}

// down restores the max-heap on keys below i; m is the figures per request.
func (s *stageLog) down(i, m int) {
	n := len(s.keys)
	for {
		j := 2*i + 1
		if j >= n {
			return
		}
		if j+1 < n && s.keys[j+1] > s.keys[j] {
			j++
		}
		if s.keys[i] >= s.keys[j] {
			return
		}
		s.keys[i], s.keys[j] = s.keys[j], s.keys[i]
		s.sent[i], s.sent[j] = s.sent[j], s.sent[i]
		for k := range m {
			s.figs[i*m+k], s.figs[j*m+k] = s.figs[j*m+k], s.figs[i*m+k]
		}
		i = j
	}
}

func (l *requestLog) sample(s *results.Sample) {
	if !s.OK {
		return
	}
	l.scrapes++
	l.profile = s.Profile
	p := serverPoint{at: s.At}
	p.kv, p.hasKV = s.Values[results.KVUsage]
	p.preemptions, p.hasPreempt = s.Values[results.Preemptions]
	if p.hasKV || p.hasPreempt {
		l.points = append(l.points, p)
	}
}

var nan32 = float32(math.NaN())

func ms32(d time.Duration) float32 { return float32(float64(d) / float64(time.Millisecond)) }

// scope is the requestLog of the stages a budget or comparison covers.
type scope struct {
	log       *requestLog
	figs      []float32 // len(log.metrics) per completed request kept
	sent      []float32 // per completed request kept
	ok        int64     // completed requests, kept or not: more than len(sent) when the log sampled them
	finished  int64
	checked   int64
	mismatch  int64
	from, to  time.Duration
	haveRange bool
	// arrivalsPerSec is the realised arrival rate: over each stage,
	// (arrivals − 1) / span of scheduled times, summed; 0 when unknown.
	arrivalsPerSec float64
}

// scopeOf merges the logs of the given stages (every stage when idx is nil).
func (l *requestLog) scopeOf(idx []int) scope {
	out := scope{log: l}
	keys := make([]int, 0, len(l.stages))
	for i := range l.stages {
		if idx == nil || slices.Contains(idx, i) {
			keys = append(keys, i)
		}
	}
	sort.Ints(keys)
	for _, i := range keys {
		s := l.stages[i]
		out.figs = append(out.figs, s.figs...)
		out.sent = append(out.sent, s.sent...)
		out.ok += s.ok
		out.finished += s.finished
		out.checked += s.checked
		out.mismatch += s.mismatch
		if span := s.schedLast - s.schedFirst; s.arrivals > 1 && span > 0 && len(keys) == 1 {
			out.arrivalsPerSec = float64(s.arrivals-1) / span.Seconds()
		}
		if !s.haveRange {
			continue
		}
		if !out.haveRange || s.from < out.from {
			out.from = s.from
		}
		if !out.haveRange || s.to > out.to {
			out.to = s.to
		}
		out.haveRange = true
	}
	return out
}

// goodput returns the share of finished requests that completed and met
// every objective, and how many were good.
func (s *scope) goodput(ttftMs, tpotMs, e2eMs float64) (share float64, good int64, ok bool) {
	if s.finished == 0 {
		return 0, 0, false
	}
	k := len(s.log.metrics)
	it, ip, ie := s.log.index("ttft_ms"), s.log.index("tpot_ms"), s.log.index("e2e_ms")
	meets := func(v float32, limit float64) bool {
		if limit <= 0 {
			return true
		}
		// Undefined figures: no TPOT with one token meets any objective
		// (vLLM counts it as 0); a missing TTFT or E2E cannot be shown to.
		return float64(v) <= limit
	}
	for j := 0; j+k <= len(s.figs); j += k {
		f := s.figs[j : j+k]
		tpot := f[ip]
		if math.IsNaN(float64(tpot)) {
			tpot = 0
		}
		if meets(f[it], ttftMs) && meets(tpot, tpotMs) && meets(f[ie], e2eMs) {
			good++
		}
	}
	if kept := int64(len(s.sent)); kept > 0 && kept < s.ok {
		// A sample: the good share of the completed requests kept,
		// applied to all the completed requests.
		good = int64(math.Round(float64(good) * float64(s.ok) / float64(kept)))
	}
	return float64(good) / float64(s.finished), good, true
}

// sampled says, when the scope holds a sample of its completed requests
// rather than all of them, how many of how many; "" otherwise.
func (s *scope) sampled() string {
	if kept := int64(len(s.sent)); kept < s.ok {
		return fmt.Sprintf("from a uniform sample of %d of the %s", kept, FormatCount(s.ok, "completed request", "completed requests"))
	}
	return ""
}

// server returns the preemptions counted and the peak KV usage seen
// during [from, to]. Preemptions are the counter's increase from the last
// scrape at or before from to the first at or after to (a decrease is a
// server restart: the new value counts). KV usage is the largest gauge
// value scraped inside the interval. ok flags are false when the scrapes
// cannot tell.
func (l *requestLog) server(from, to time.Duration) (preempt float64, preemptOK bool, kv float64, kvOK bool) {
	pts := slices.Clone(l.points)
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].at < pts[j].at })
	var counter []serverPoint
	for _, p := range pts {
		if p.hasPreempt {
			counter = append(counter, p)
		}
		if p.hasKV && p.at >= from && p.at <= to && (!kvOK || p.kv > kv) {
			kv, kvOK = p.kv, true
		}
	}
	if len(counter) >= 2 {
		i0, i1 := 0, len(counter)-1
		for i, p := range counter {
			if p.at <= from {
				i0 = i
			}
		}
		for i := len(counter) - 1; i >= 0; i-- {
			if counter[i].at >= to {
				i1 = i
			}
		}
		if i1 > i0 {
			preemptOK = true
			for k := i0 + 1; k <= i1; k++ {
				d := counter[k].preemptions - counter[k-1].preemptions
				if d < 0 {
					d = counter[k].preemptions
				}
				preempt += d
			}
		}
	}
	return preempt, preemptOK, kv, kvOK
}

// Values returns the per-request values of a per-request metric over the
// scope, in milliseconds, undefined ones left out.
func (s *scope) values(metric string) []float64 {
	i, k := s.log.index(metric), len(s.log.metrics)
	if i < 0 {
		return nil
	}
	out := make([]float64, 0, len(s.figs)/k)
	for j := i; j < len(s.figs); j += k {
		if v := s.figs[j]; !math.IsNaN(float64(v)) {
			out = append(out, float64(v))
		}
	}
	return out
}

// overTime returns, for each completed request of the scope whose metric
// is defined, its send time (seconds from the run's epoch) and its value
// (milliseconds).
func (s *scope) overTime(metric string) (sent, values []float64) {
	i, k := s.log.index(metric), len(s.log.metrics)
	if i < 0 {
		return nil, nil
	}
	for r, j := 0, i; j < len(s.figs); r, j = r+1, j+k {
		if v := s.figs[j]; !math.IsNaN(float64(v)) {
			sent = append(sent, float64(s.sent[r]))
			values = append(values, float64(v))
		}
	}
	return sent, values
}

// Scope is the per-request view of some stages of an Aggregate: what rank
// tests compare and the realised arrival rate. It is a snapshot.
type Scope struct{ s scope }

// Scope returns the view of the given stages; nil means every stage.
func (a *Aggregate) Scope(stages []int) *Scope { return &Scope{a.log.scopeOf(stages)} }

// PerRequestMetrics returns the metrics that have one value per completed
// request (the latencies a budget may limit), in table order.
func (a *Aggregate) PerRequestMetrics() []results.Metric { return slices.Clone(a.log.metrics) }

// Values returns the per-request values of a per-request metric over the
// scope, in milliseconds, undefined ones left out.
func (s *Scope) Values(metric string) []float64 { return s.s.values(metric) }

// OverTime returns, for each completed request of the scope, its send
// time in seconds from the run's epoch and its value of a per-request
// metric in milliseconds (requests where it is undefined left out), in no
// particular order: latency by start time, for the timeline.
func (s *Scope) OverTime(metric string) (sent, values []float64) { return s.s.overTime(metric) }

// Sampled says, when the scope holds a uniform sample of its completed
// requests rather than all of them (more than a stage keeps), how many of
// how many; "" when it holds them all.
func (s *Scope) Sampled() string { return s.s.sampled() }

// ArrivalsPerSec is the realised arrival rate of a single-stage scope:
// scheduled requests, dropped ones included, over the span of their
// scheduled times; 0 for several stages or too few arrivals.
func (s *Scope) ArrivalsPerSec() float64 { return s.s.arrivalsPerSec }
