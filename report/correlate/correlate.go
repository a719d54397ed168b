package correlate

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/servebench/servebench/results"
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
	// minStall is the shortest chunk gap that counts as a stall: a
	// preemption's recompute is a prefill, never this short. Without a
	// floor a fast server's bursts (gaps of microseconds, a median of
	// zero) made nearly every request a stall kept until the summary:
	// memory that grew with the number of requests.
	minStall = time.Millisecond
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
// It bins what each request contributes (in flight, decoding, context,
// waiting for a first token, tokens received) into fine time bins as the
// record arrives, and keeps only the few chunk gaps of a request that
// stalled, so its memory grows with the run's duration and its scrapes,
// not with its requests or tokens. Add order does not matter. A
// Correlator is not safe for concurrent use.
type Correlator struct {
	interval time.Duration // scrape interval from the first header that states one; 0 if unknown
	scenario json.RawMessage
	stages   map[int]*bins
	stalls   []stall // measured requests whose chunk gaps include a stall
	samples  []results.Sample
	sent     bool          // a request was sent
	whole    int           // ok requests answered by a whole (not streamed) response
	lo, hi   time.Duration // earliest send and latest end of a sent request
	gaps     []time.Duration
	loads    map[int]*loadSpan // per stage: the measured arrivals' span
	caps     map[int]stageCap  // per stage: its cap on requests in flight, from the first header
}

// loadSpan is when a stage's measured arrivals came, first to last.
type loadSpan struct {
	first, last time.Duration
	n, dropped  int
}

// stageCap is a stage's bound on requests in flight: its workers (closed
// loop) or its max_concurrency (open loop).
type stageCap struct {
	n    int
	open bool
}

// stall is a measured request's worst chunk gaps, for preemption
// attribution.
type stall struct {
	seq   uint64
	stage int
	spans []span
}

// span is a time interval [from, to] on the run's clock.
type span struct{ from, to time.Duration }

func (s span) overlaps(from, to time.Duration) bool { return s.from < to && s.to > from }

// New returns an empty Correlator.
func New() *Correlator {
	return &Correlator{stages: map[int]*bins{}, loads: map[int]*loadSpan{}, caps: map[int]stageCap{}}
}

// AddHeader reads the scrape interval from a results file's resolved
// scenario and keeps the first scenario for the HTML report. With several
// files, the shortest interval wins.
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
	for i, st := range h.Spec.Load.Stages {
		if _, ok := c.caps[i]; ok {
			continue
		}
		if st.Open() {
			c.caps[i] = stageCap{n: st.MaxConcurrency, open: true}
		} else {
			c.caps[i] = stageCap{n: st.Concurrency}
		}
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
//
// A request is in flight from Sent to End. A stream decodes from its first
// token to its end, and its context is its prompt (from usage, else the
// intended input length) plus the tokens received so far, each chunk
// carrying r.ChunkTokensAt(i) tokens. The time to first token of a
// measured (not warmup) ok request counts for the TTFT-while-waiting
// share.
func (c *Correlator) AddResult(r *results.Result) {
	if !r.Warmup && r.Scheduled > 0 {
		c.arrival(r)
	}
	if r.Sent == 0 || r.Outcome == results.Dropped {
		return
	}
	s := c.bins(r.Stage)
	chunks := r.ChunkTimes
	n := len(chunks)
	first, last, end := r.FirstToken, r.LastToken, r.End
	if n > 0 {
		if first == 0 {
			first = r.Sent + chunks[0]
		}
		if last == 0 {
			last = r.Sent + chunks[n-1]
		}
	}
	if end == 0 {
		end = max(last, r.Sent)
	}
	if !c.sent || r.Sent < c.lo {
		c.lo = r.Sent
	}
	if !c.sent || end > c.hi {
		c.hi = end
	}
	c.sent = true
	s.step(qFlight, r.Sent, 1)
	s.step(qFlight, end, -1)
	if !r.Warmup && r.Outcome == results.OK {
		s.point(pDone, end, 1)
	}
	if !r.Warmup && r.Outcome == results.OK && first > r.Sent {
		s.step(qTTFT, r.Sent, 1)
		s.step(qTTFT, first, -1)
		s.point(pTTFTSum, r.Sent, (first - r.Sent).Seconds())
		s.point(pTTFTCount, r.Sent, 1)
	}
	prompt := float64(r.PromptTokens)
	if prompt == 0 {
		prompt = float64(r.InputTokens)
	}
	warm := 0.0
	if r.Warmup {
		warm = 1
	}
	if n == 0 {
		// A whole response (not streamed): its tokens arrive at its end.
		// It has no stream to count on the context timeline.
		if r.Outcome == results.OK {
			c.whole++
			s.point(pTokens, end, float64(r.OutputTokens))
			s.point(pEndTokens, end, float64(r.OutputTokens))
			s.point(pWarmTokens, end, warm*float64(r.OutputTokens))
			s.point(pWarmPrompt, end, warm*prompt)
		}
		return
	}
	s.point(pWarmPrompt, first, warm*prompt)
	start := min(first, r.Sent+chunks[0])
	stop := max(end, r.Sent+chunks[n-1])
	s.step(qDec, start, 1)
	s.step(qCtx, start, prompt)
	total := s.chunks(r, warm)
	s.step(qDec, stop, -1)
	s.step(qCtx, stop, -(prompt + total))
	s.point(pEndTokens, end, total)
	if !r.Warmup {
		var spans []span
		spans, c.gaps = p99Spans(r.Sent, chunks, c.gaps)
		if len(spans) > 0 {
			c.stalls = append(c.stalls, stall{seq: r.Seq, stage: r.Stage, spans: spans})
		}
	}
}

// bins returns stage st's timeline, made on first use.
func (c *Correlator) bins(st int) *bins {
	s := c.stages[st]
	if s == nil {
		s = &bins{}
		c.stages[st] = s
	}
	return s
}

// arrival records a measured request's arrival (sent or dropped) on its
// stage's load span.
func (c *Correlator) arrival(r *results.Result) {
	l := c.loads[r.Stage]
	if l == nil {
		l = &loadSpan{first: r.Scheduled, last: r.Scheduled}
		c.loads[r.Stage] = l
	}
	l.first, l.last, l.n = min(l.first, r.Scheduled), max(l.last, r.Scheduled), l.n+1
	if r.Outcome == results.Dropped {
		l.dropped++
	}
}

// p99Spans returns the absolute intervals of the request's stalls at its
// p99: chunk gaps at or above its p99 gap (nearest rank) that are also at
// least stallFactor times its median gap and at least minStall, the
// largest first, at most maxSpans. The stall condition matters because a scrape window is a
// second or more: without it, every request streaming during a window with
// a preemption would count as affected, while a preempted request shows a
// gap of a recompute, many times its usual one.
//
// buf is scratch space; the grown buffer is returned for reuse.
func p99Spans(sent time.Duration, chunks, buf []time.Duration) ([]span, []time.Duration) {
	if len(chunks) < 2 {
		return nil, buf
	}
	sorted := buf[:0]
	var longest time.Duration
	for i := 1; i < len(chunks); i++ {
		g := chunks[i] - chunks[i-1]
		sorted = append(sorted, g)
		longest = max(longest, g)
	}
	if longest < minStall {
		return nil, sorted // no stall: the sort is not needed
	}
	slices.Sort(sorted)
	idx := int(math.Ceil(0.99*float64(len(sorted)))) - 1
	threshold := max(sorted[max(idx, 0)], stallFactor*sorted[len(sorted)/2])
	var out []span
	for i := 1; i < len(chunks); i++ {
		if g := chunks[i] - chunks[i-1]; g >= threshold && g >= minStall {
			out = append(out, span{sent + chunks[i-1], sent + chunks[i]})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].to-out[i].from > out[j].to-out[j].from })
	if len(out) > maxSpans {
		out = out[:maxSpans]
	}
	return slices.Clip(out), sorted
}

// AddSample records one scrape sample (offsets on the run's clock, as the
// other records).
func (c *Correlator) AddSample(s results.Sample) { c.samples = append(c.samples, s) }

// Samples returns every sample added, the server's and the GPU
// telemetry's, in the order added. The caller must not modify them.
func (c *Correlator) Samples() []results.Sample { return c.samples }

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

	KVUsagePerc float64 // server KV-cache usage, percent (mean of the samples bounding the window)
	Running     float64 // server requests running (same)
	Waiting     float64 // server requests waiting (same)
	Preemptions float64 // server preemptions during the window (counter delta)
	// ServerTokensPerSec is the server's generation tokens per second (the
	// counter's rate over the window); NaN when the counter moves only when
	// a request ends (see countersAtEnd), whose per-window rate means
	// nothing.
	ServerTokensPerSec float64

	// GPU telemetry (NaN without it): mean power of all GPUs over the
	// window, in watts; their power limit; GPU utilisation, SM and DRAM
	// activity, and the share of time the power cap held the clocks down,
	// 0..1, means of the GPUs and of the samples in the window.
	PowerW, PowerLimitW, GPUUtil, SMActive, DRAMActive, PowerCapped float64

	serverTokens float64 // the counter's increase over the window, whatever its granularity
	endTokens    float64 // output tokens of the requests that ended in the window
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
	countersAtEnd            bool
}

// Windows computes the timeline. It returns nil when no request was sent.
func (c *Correlator) Windows() []Window { return c.timeline().windows }

func (c *Correlator) timeline() timeline {
	var tl timeline
	if !c.sent {
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
	c.fill(tl.windows)
	c.fillGPU(tl.windows)
	if tl.scraped {
		tl.countersAtEnd = countersAtEnd(tl.windows, tl.countersAtEnd)
		for i := range tl.windows {
			if tl.countersAtEnd {
				// A window's counter rate says when requests ended, not how
				// fast tokens came.
				tl.windows[i].ServerTokensPerSec = math.NaN()
			}
		}
	}
	markSteady(tl.windows)
	return tl
}

// countersAtEnd tells, from the series themselves, whether the server's
// generation counter moves as tokens are generated or only when a request
// ends (as llama.cpp's and llm-d's inference simulator's do): the
// counter's cumulative increase, at the end of every window, is set
// against the tokens the client had received by then and against the
// tokens of the requests that had ended by then, and the closer of the
// two, by the summed absolute difference, wins when it is at most half as
// far as the other. Cumulative sums keep a request that ended on a
// window's edge (counted by the server in one window, received by the
// client in the next) from counting twice. When neither reading wins
// (requests shorter than a window look the same either way, and either
// reading then does), hint decides: what the scrape profile says of its
// engine.
func countersAtEnd(ws []Window, hint bool) bool {
	var server, received, ended, perToken, atEnd float64
	n := 0
	for _, w := range ws {
		received += w.OutputTokens
		ended += w.endTokens
		if math.IsNaN(w.serverTokens) {
			continue
		}
		server += w.serverTokens
		perToken += math.Abs(server - received)
		atEnd += math.Abs(server - ended)
		n++
	}
	switch {
	case n < 3:
		return hint
	case atEnd <= perToken/2:
		return true
	case perToken <= atEnd/2:
		return false
	}
	return hint
}

// serverSamples returns the successful samples of the most-scraped target,
// sorted by At with duplicate times removed, and counts the samples.
func (c *Correlator) serverSamples(tl *timeline) []results.Sample {
	count := map[string]int{}
	for i := range c.samples {
		if c.samples[i].GPU {
			continue // GPU telemetry: its own series (gpu.go)
		}
		if c.samples[i].OK {
			count[c.samples[i].Target]++
			tl.okSamples++
		} else {
			tl.failedSamples++
		}
	}
	tl.targets = len(count)
	target, best := "", -1
	for _, t := range slices.Sorted(maps.Keys(count)) {
		if count[t] > best {
			target, best = t, count[t]
		}
	}
	var out []results.Sample
	for i := range c.samples {
		if s := c.samples[i]; s.OK && !s.GPU && s.Target == target {
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
		tl.countersAtEnd = dedup[len(dedup)-1].CountersAtEnd
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
	// Group the intervals: [start, end) of ivs per window.
	type group struct{ start, end int }
	var groups []group
	start := 0
	for i := range ivs {
		if ivs[i].To-ivs[start].From < threshold && i < len(ivs)-1 {
			continue
		}
		groups = append(groups, group{start, i + 1})
		start = i + 1
	}
	// A last window much shorter than the others (the final scrape taken
	// right after the load ended) holds too little to give a rate: a few
	// milliseconds would make a "steady" window of any throughput at all.
	// It joins the window before it.
	if n := len(groups); n >= 2 {
		last := groups[n-1]
		if ivs[last.end-1].To-ivs[last.start].From < nominal/2 {
			groups[n-2].end = last.end
			groups = groups[:n-1]
		}
	}
	out := make([]Window, 0, len(groups))
	for _, g := range groups {
		out = append(out, serverWindow(samples[g.start:g.end+1], ivs[g.start:g.end]))
	}
	return out
}

// serverWindow builds a window from the samples bounding and inside it and
// the intervals between them.
func serverWindow(s []results.Sample, ivs []results.Interval) Window {
	w := Window{From: s[0].At, To: s[len(s)-1].At, Stage: -1}
	w.KVUsagePerc = 100 * meanOf(s, results.KVUsage)
	w.Running = meanOf(s, results.Running)
	w.Waiting = meanOf(s, results.Waiting)
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
	w.serverTokens = delta(results.GenerationTokens)
	w.ServerTokensPerSec = w.serverTokens / w.Seconds()
	return w
}

// fixedWindows covers the requests' span with windows of length d aligned
// on the epoch, with no server figures.
func (c *Correlator) fixedWindows(d time.Duration) []Window {
	lo, hi := c.lo, c.hi
	nan := math.NaN()
	var out []Window
	for t := lo / d * d; t < hi; t += d {
		out = append(out, Window{From: t, To: t + d, Stage: -1, KVUsagePerc: nan, Running: nan,
			Waiting: nan, Preemptions: nan, ServerTokensPerSec: nan})
	}
	return out
}

// fill integrates the client's timeline over the windows (sorted, not
// overlapping): tokens received, requests in flight, streams decoding and
// context in flight, and which stage each window belongs to.
func (c *Correlator) fill(ws []Window) {
	if len(ws) == 0 {
		return
	}
	idx := slices.Sorted(maps.Keys(c.stages))
	cursors := make([]*cursor, len(idx))
	for i, st := range idx {
		cursors[i] = c.stages[st].cursor()
	}
	for j := range ws {
		w := &ws[j]
		secs := w.Seconds()
		var flight, dec, ctx, best float64
		w.Stage = -1
		for i, st := range idx {
			steps, points := cursors[i].integrals(w.From, w.To)
			w.OutputTokens += points[pTokens]
			w.endTokens += points[pEndTokens]
			flight += steps[qFlight]
			dec += steps[qDec]
			ctx += steps[qCtx]
			if steps[qFlight] > best {
				w.Stage, best = st, steps[qFlight]
			}
		}
		w.OutputTokensPerSec = w.OutputTokens / secs
		w.InFlight = flight / secs
		w.Decoding = dec / secs
		w.ContextSum = ctx / secs
		if dec > 0 {
			w.ContextMean = ctx / dec
		}
		w.Full = best > 0 && best >= stageShare*flight
	}
}

// WarmupReceived returns what the warmup requests of a stage (of every
// stage, for stage −1) received during [from, to): output tokens (a chunk
// of k tokens counts k; a whole response counts at its end) and the prompt
// tokens of those whose prefill completed (their first token arrived). A
// bin cut by from or to counts in proportion.
func (c *Correlator) WarmupReceived(stage int, from, to time.Duration) (output, prompt float64) {
	for _, st := range slices.Sorted(maps.Keys(c.stages)) {
		if stage >= 0 && st != stage {
			continue
		}
		_, p := c.stages[st].cursor().integrals(from, to)
		output += p[pWarmTokens]
		prompt += p[pWarmPrompt]
	}
	return output, prompt
}

// Peaks returns the peak output throughput and the peak concurrency of a
// stage (of every stage, for stage −1) over [from, to): the most output
// tokens received, by every request of the stage (warmup ones included),
// in one whole second from `from` on, in tokens per second (0 when the
// interval is shorter than a second); and the most requests in flight at
// once, sampled at the timeline's bin boundaries (every 10 ms for stages
// of up to 21 minutes). Over every stage, the seconds sum the stages'
// tokens and the concurrency is the largest stage's (stages run one after
// the other).
func (c *Correlator) Peaks(stage int, from, to time.Duration) (tokensPerSec float64, inFlight int) {
	var flight float64
	for _, st := range slices.Sorted(maps.Keys(c.stages)) {
		if stage >= 0 && st != stage {
			continue
		}
		flight = max(flight, c.stages[st].peakInFlight(from, to))
	}
	if to-from < time.Second {
		return 0, int(math.Round(flight))
	}
	cursors := map[int]*cursor{}
	for t := from; t+time.Second <= to; t += time.Second {
		var sum float64
		for _, st := range slices.Sorted(maps.Keys(c.stages)) {
			if stage >= 0 && st != stage {
				continue
			}
			cur, ok := cursors[st]
			if !ok {
				cur = c.stages[st].cursor()
				cursors[st] = cur
			}
			_, p := cur.integrals(t, t+time.Second)
			sum += p[pTokens]
		}
		tokensPerSec = max(tokensPerSec, sum)
	}
	return round(tokensPerSec, 1), int(math.Round(flight))
}

// Span returns the earliest send and the latest end of the requests sent
// (warmup ones included); ok is false when none was.
func (c *Correlator) Span() (from, to time.Duration, ok bool) { return c.lo, c.hi, c.sent }

// windowAt returns the index of the first window ending after t.
func windowAt(ws []Window, t time.Duration) int {
	return sort.Search(len(ws), func(i int) bool { return ws[i].To > t })
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
