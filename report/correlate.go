package report

import (
	"github.com/servebench/servebench/results"

	"encoding/json"
	"math"
	"slices"
	"sort"
	"time"
)

// Correlation window bounds: windows follow the scrape interval but are
// never shorter than minWindow, so that a window holds enough tokens for a
// stable rate.
const (
	minWindow = time.Second
	// maxSpans bounds the chunk gaps kept per request for preemption
	// attribution (those at or above the request's p99 gap).
	maxSpans = 8
	// stallFactor is how many times its median chunk gap a request's gap
	// must be to count as a stall (see p99Spans).
	stallFactor = 5
	// crossCheckTolerance is the relative client-vs-server token-rate
	// disagreement above which the cross-check is flagged.
	crossCheckTolerance = 0.05
	// steadyTolerance is how far (relative) a window's mean stream count may
	// be from its stage's median for the window to count as steady.
	steadyTolerance = 0.10
	// stageShare is the fraction of a window's in-flight time that must
	// belong to one stage for the window to be a full window of that stage.
	stageShare = 0.95
)

// Correlator joins request records and scrape samples on one timeline.
// It keeps what each request needs for the timeline (send, first and last
// token, end, chunk arrival times and token counts), so its memory grows
// with the number of chunks. Add order does not matter: everything is
// sorted when Correlation or Windows is called. A Correlator is not safe
// for concurrent use.
type Correlator struct {
	interval time.Duration // scrape interval from the first header that states one; 0 if unknown
	scenario json.RawMessage
	reqs     []corrRequest
	samples  []results.Sample
}

// corrRequest is what the correlator keeps of one sent request.
type corrRequest struct {
	seq    uint64
	stage  int
	warmup bool
	ok     bool
	sent   time.Duration
	first  time.Duration // 0 when no token arrived
	last   time.Duration
	end    time.Duration
	prompt float64         // prompt tokens (from usage, else the intended input length)
	chunks []time.Duration // arrival offsets from sent
	tokens []float32       // tokens per chunk, len(chunks)
	spans  []span          // absolute chunk gaps at or above the request's p99 gap
}

// span is a time interval [from, to] on the run's clock.
type span struct{ from, to time.Duration }

func (s span) overlaps(from, to time.Duration) bool { return s.from < to && s.to > from }

// NewCorrelator returns an empty Correlator.
func NewCorrelator() *Correlator { return &Correlator{} }

// AddHeader reads the scrape interval (scenario.scrape.interval) from a
// results file's resolved scenario and keeps the first scenario for the
// HTML report. With several files, the shortest interval wins.
func (c *Correlator) AddHeader(h *results.Header) {
	if len(h.Scenario) == 0 {
		return
	}
	if c.scenario == nil {
		c.scenario = slices.Clone(h.Scenario)
	}
	if h.Spec == nil {
		return
	}
	if d := h.Spec.ScrapeInterval(); d > 0 && (c.interval == 0 || d < c.interval) {
		c.interval = d
	}
}

// Scenario returns the resolved scenario of the first header added (JSON),
// or nil.
func (c *Correlator) Scenario() json.RawMessage { return c.scenario }

// AddResult records one request. Requests never sent (dropped) are
// ignored; every other request, warmup included, counts on the timeline,
// since the server did its work whatever the outcome. r is not retained.
func (c *Correlator) AddResult(r *results.Result) {
	if r.Sent == 0 || r.Outcome == results.Dropped {
		return
	}
	q := corrRequest{seq: r.Seq, stage: r.Stage, warmup: r.Warmup, ok: r.Outcome == results.OK,
		sent: r.Sent, first: r.FirstToken, last: r.LastToken, end: r.End,
		prompt: float64(r.PromptTokens), chunks: slices.Clone(r.ChunkTimes)}
	if q.prompt == 0 {
		q.prompt = float64(r.InputTokens)
	}
	if len(q.chunks) > 0 {
		if q.first == 0 {
			q.first = r.Sent + q.chunks[0]
		}
		if q.last == 0 {
			q.last = r.Sent + q.chunks[len(q.chunks)-1]
		}
	}
	if q.end == 0 {
		q.end = max(q.last, q.sent)
	}
	q.tokens = chunkTokens(r)
	q.spans = p99Spans(r.Sent, q.chunks)
	c.reqs = append(c.reqs, q)
}

// chunkTokens returns the tokens of each token-bearing chunk: ChunkTokens
// when recorded, else the split Result.AppendITLs assumes (the first chunk
// holds the first token, the other OutputTokens − 1 spread evenly over the
// later chunks). Without a token count each chunk counts as one token.
func chunkTokens(r *results.Result) []float32 {
	n := len(r.ChunkTimes)
	out := make([]float32, n)
	switch {
	case n == 0:
	case len(r.ChunkTokens) == n:
		for i, k := range r.ChunkTokens {
			out[i] = float32(k)
		}
	case r.OutputTokens <= 0:
		for i := range out {
			out[i] = 1
		}
	case n == 1:
		out[0] = float32(r.OutputTokens)
	default:
		out[0] = 1
		rest := max(r.OutputTokens-1, 0)
		for i := 1; i < n; i++ {
			out[i] = float32(i*rest/(n-1) - (i-1)*rest/(n-1))
		}
	}
	return out
}

// p99Spans returns the absolute intervals of the request's stalls at its
// p99: chunk gaps at or above its p99 gap (nearest rank) that are also at
// least stallFactor times its median gap, the largest first, at most
// maxSpans. The stall condition matters because a scrape window is a
// second or more: without it, every request streaming during a window with
// a preemption would count as affected, while a preempted request shows a
// gap of a recompute, many times its usual one.
func p99Spans(sent time.Duration, chunks []time.Duration) []span {
	if len(chunks) < 2 {
		return nil
	}
	gaps := make([]time.Duration, len(chunks)-1)
	for i := 1; i < len(chunks); i++ {
		gaps[i-1] = chunks[i] - chunks[i-1]
	}
	sorted := slices.Clone(gaps)
	slices.Sort(sorted)
	idx := int(math.Ceil(0.99*float64(len(sorted)))) - 1
	threshold := max(sorted[max(idx, 0)], stallFactor*sorted[len(sorted)/2])
	var out []span
	for i, g := range gaps {
		if g >= threshold && g > 0 {
			out = append(out, span{sent + chunks[i], sent + chunks[i+1]})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].to-out[i].from > out[j].to-out[j].from })
	if len(out) > maxSpans {
		out = out[:maxSpans]
	}
	return out
}

// AddSample records one scrape sample (offsets on the run's clock, as the
// other records).
func (c *Correlator) AddSample(s results.Sample) { c.samples = append(c.samples, s) }

// Window is one interval of the common timeline: what the client saw and
// what the server reported during it. Server figures are NaN when no scrape
// covers the window or the server does not export them.
type Window struct {
	From time.Duration // start, offset from the run's epoch
	To   time.Duration // end (exclusive)

	// Stage is the stage holding at least half of the window's in-flight
	// time, or -1 when nothing was in flight.
	Stage int
	// Full reports whether at least 95 % of the window's in-flight time
	// belongs to Stage; Steady whether, in addition, its mean number of
	// decoding streams is within 10 % of the stage's median.
	Full, Steady bool

	OutputTokens       float64 // tokens received by the client (a chunk of k tokens counts k)
	OutputTokensPerSec float64 // OutputTokens / window length in seconds
	InFlight           float64 // time-averaged requests in flight (sent → end), queued ones included
	Decoding           float64 // time-averaged active streams (first token → end)
	ContextMean        float64 // tokens per active stream (prompt + tokens so far), time-weighted
	ContextSum         float64 // context in flight: tokens summed over active streams, time-averaged

	KVUsagePerc        float64 // server KV-cache usage, percent (mean of the samples bounding the window)
	Running            float64 // server requests running (same)
	Waiting            float64 // server requests waiting (same)
	Preemptions        float64 // server preemptions during the window (counter delta)
	ServerTokensPerSec float64 // server generation tokens per second (counter rate)
}

// Seconds returns the window's length in seconds.
func (w *Window) Seconds() float64 { return (w.To - w.From).Seconds() }

// timeline is the computed correlation state.
type timeline struct {
	windows                  []Window
	nominal                  time.Duration // window length aimed at
	scraped                  bool          // windows follow scrape samples
	okSamples, failedSamples int
	profile                  string
	targets                  int
}

// Windows computes the timeline. It returns nil when no request was sent.
func (c *Correlator) Windows() []Window { return c.timeline().windows }

func (c *Correlator) timeline() timeline {
	var tl timeline
	if len(c.reqs) == 0 {
		return tl
	}
	samples := c.serverSamples(&tl)
	tl.nominal = max(c.interval, minWindow)
	if c.interval == 0 && len(samples) >= 2 {
		tl.nominal = max(medianSpacing(samples), minWindow)
	}
	if len(samples) >= 2 {
		tl.windows = scrapeWindows(samples, c.interval, tl.nominal)
		tl.scraped = len(tl.windows) > 0
	}
	if !tl.scraped {
		tl.windows = c.fixedWindows(tl.nominal)
	}
	c.sweep(tl.windows)
	markSteady(tl.windows)
	return tl
}

// serverSamples returns the successful samples of the most-scraped target,
// sorted by At with duplicate times removed, and counts the samples.
func (c *Correlator) serverSamples(tl *timeline) []results.Sample {
	count := map[string]int{}
	for i := range c.samples {
		if c.samples[i].OK {
			count[c.samples[i].Target]++
			tl.okSamples++
		} else {
			tl.failedSamples++
		}
	}
	tl.targets = len(count)
	target, best := "", -1
	for _, t := range sortedKeys(count) {
		if count[t] > best {
			target, best = t, count[t]
		}
	}
	var out []results.Sample
	for i := range c.samples {
		if s := c.samples[i]; s.OK && s.Target == target {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].At != out[j].At {
			return out[i].At < out[j].At
		}
		return out[i].Index < out[j].Index
	})
	dedup := out[:0]
	for _, s := range out {
		if n := len(dedup); n > 0 && dedup[n-1].At == s.At {
			dedup[n-1] = s
			continue
		}
		dedup = append(dedup, s)
	}
	if len(dedup) > 0 {
		tl.profile = dedup[len(dedup)-1].Profile
	}
	return dedup
}

func medianSpacing(s []results.Sample) time.Duration {
	d := make([]time.Duration, 0, len(s)-1)
	for i := 1; i < len(s); i++ {
		d = append(d, s[i].At-s[i-1].At)
	}
	slices.Sort(d)
	return d[len(d)/2]
}

// scrapeWindows groups consecutive scrape intervals into windows of about
// nominal length: an interval shorter than the nominal window is merged
// with the next ones until the window reaches nominal minus half a scrape
// interval (so 1 s scrapes with jitter are not merged in pairs, and 100 ms
// scrapes make 1 s windows).
func scrapeWindows(samples []results.Sample, interval, nominal time.Duration) []Window {
	ivs := results.Rates(samples)
	if len(ivs) != len(samples)-1 {
		return nil // cannot happen with sorted, distinct, successful samples
	}
	if interval == 0 {
		interval = medianSpacing(samples)
	}
	threshold := nominal - interval/2
	var out []Window
	start := 0
	for i := range ivs {
		if ivs[i].To-ivs[start].From < threshold && i < len(ivs)-1 {
			continue
		}
		out = append(out, serverWindow(samples[start:i+2], ivs[start:i+1]))
		start = i + 1
	}
	return out
}

// serverWindow builds a window from the samples bounding and inside it and
// the intervals between them.
func serverWindow(s []results.Sample, ivs []results.Interval) Window {
	w := Window{From: s[0].At, To: s[len(s)-1].At, Stage: -1}
	gauge := func(m results.Meaning, scale float64) float64 {
		var sum float64
		n := 0
		for i := range s {
			if v, ok := s[i].Values[m]; ok {
				sum += v
				n++
			}
		}
		if n == 0 {
			return math.NaN()
		}
		return scale * sum / float64(n)
	}
	w.KVUsagePerc = gauge(results.KVUsage, 100)
	w.Running = gauge(results.Running, 1)
	w.Waiting = gauge(results.Waiting, 1)
	delta := func(m results.Meaning) float64 {
		var sum float64
		for _, iv := range ivs {
			d, ok := iv.Deltas[m]
			if !ok {
				return math.NaN()
			}
			sum += d
		}
		return sum
	}
	w.Preemptions = delta(results.Preemptions)
	w.ServerTokensPerSec = delta(results.GenerationTokens) / w.Seconds()
	return w
}

// fixedWindows covers the requests' span with windows of length d aligned
// on the epoch, with no server figures.
func (c *Correlator) fixedWindows(d time.Duration) []Window {
	lo, hi := c.reqs[0].sent, c.reqs[0].end
	for _, q := range c.reqs {
		lo, hi = min(lo, q.sent), max(hi, q.end)
	}
	nan := math.NaN()
	var out []Window
	for t := lo / d * d; t < hi; t += d {
		out = append(out, Window{From: t, To: t + d, Stage: -1, KVUsagePerc: nan, Running: nan,
			Waiting: nan, Preemptions: nan, ServerTokensPerSec: nan})
	}
	return out
}

// event is a change on the client's timeline.
type event struct {
	t      time.Duration
	stage  int
	flight int8    // +1 sent, −1 ended
	dec    int8    // +1 first token (the stream becomes active), −1 end
	ctx    float64 // change of the context in flight, tokens
	tokens float64 // tokens received
}

// sweep integrates the client's timeline over the windows (sorted, not
// overlapping): tokens received, requests in flight, streams decoding and
// context in flight, and which stage each window belongs to.
func (c *Correlator) sweep(ws []Window) {
	if len(ws) == 0 {
		return
	}
	var ev []event
	for _, q := range c.reqs {
		ev = append(ev, event{t: q.sent, stage: q.stage, flight: 1}, event{t: q.end, stage: q.stage, flight: -1})
		if len(q.chunks) == 0 {
			continue // never streamed: no context in the KV cache to count
		}
		// A stream is active from its first token to its end; its context
		// is its prompt plus the tokens received so far.
		start := min(q.first, q.sent+q.chunks[0])
		stop := max(q.end, q.sent+q.chunks[len(q.chunks)-1])
		ev = append(ev, event{t: start, stage: q.stage, dec: 1, ctx: q.prompt})
		total := 0.0
		for i, d := range q.chunks {
			k := float64(q.tokens[i])
			total += k
			ev = append(ev, event{t: q.sent + d, stage: q.stage, ctx: k, tokens: k})
		}
		ev = append(ev, event{t: stop, stage: q.stage, dec: -1, ctx: -(q.prompt + total)})
	}
	// At equal times, arrivals before departures: a zero-length stay adds
	// nothing either way, and the state never goes negative.
	slices.SortStableFunc(ev, func(a, b event) int {
		if a.t != b.t {
			return cmpDur(a.t, b.t)
		}
		return -(int(a.flight) + int(a.dec)) + (int(b.flight) + int(b.dec))
	})
	stageTime := make([]map[int]float64, len(ws))
	flightInt := make([]float64, len(ws))
	decInt := make([]float64, len(ws))
	ctxInt := make([]float64, len(ws))
	flightBy := map[int]int{}
	var flight, dec int
	var ctx float64
	wi := 0
	prev := ev[0].t
	// integrate adds the constant state over [prev, t) to the windows it
	// overlaps.
	integrate := func(t time.Duration) {
		if t <= prev || (flight == 0 && dec == 0) {
			return
		}
		for j := windowAt(ws, prev); j < len(ws) && ws[j].From < t; j++ {
			lo, hi := max(prev, ws[j].From), min(t, ws[j].To)
			if hi <= lo {
				continue
			}
			secs := (hi - lo).Seconds()
			flightInt[j] += float64(flight) * secs
			decInt[j] += float64(dec) * secs
			ctxInt[j] += ctx * secs
			for st, n := range flightBy {
				if n > 0 {
					if stageTime[j] == nil {
						stageTime[j] = map[int]float64{}
					}
					stageTime[j][st] += float64(n) * secs
				}
			}
		}
	}
	for _, e := range ev {
		integrate(e.t)
		prev = e.t
		flight += int(e.flight)
		dec += int(e.dec)
		ctx += e.ctx
		flightBy[e.stage] += int(e.flight)
		if e.tokens > 0 {
			for wi < len(ws) && ws[wi].To <= e.t {
				wi++
			}
			if wi < len(ws) && ws[wi].From <= e.t {
				ws[wi].OutputTokens += e.tokens
			}
		}
	}
	for j := range ws {
		w := &ws[j]
		secs := w.Seconds()
		w.OutputTokensPerSec = w.OutputTokens / secs
		w.InFlight = flightInt[j] / secs
		w.Decoding = decInt[j] / secs
		w.ContextSum = ctxInt[j] / secs
		if decInt[j] > 0 {
			w.ContextMean = ctxInt[j] / decInt[j]
		}
		w.Stage = -1
		best := 0.0
		for _, st := range sortedKeys(stageTime[j]) {
			if v := stageTime[j][st]; v > best {
				w.Stage, best = st, v
			}
		}
		w.Full = best > 0 && best >= stageShare*flightInt[j]
	}
}

// windowAt returns the index of the first window ending after t.
func windowAt(ws []Window, t time.Duration) int {
	return sort.Search(len(ws), func(i int) bool { return ws[i].To > t })
}

func cmpDur(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// markSteady flags the full windows whose mean number of decoding streams
// is within steadyTolerance of their stage's median.
func markSteady(ws []Window) {
	byStage := map[int][]float64{}
	for _, w := range ws {
		if w.Full && w.Decoding > 0 {
			byStage[w.Stage] = append(byStage[w.Stage], w.Decoding)
		}
	}
	median := map[int]float64{}
	for st, v := range byStage {
		slices.Sort(v)
		median[st] = v[len(v)/2]
	}
	for i := range ws {
		w := &ws[i]
		m, ok := median[w.Stage]
		w.Steady = ok && w.Full && w.Decoding > 0 && w.OutputTokens > 0 &&
			math.Abs(w.Decoding-m) <= steadyTolerance*m
	}
}
