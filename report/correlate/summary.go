package correlate

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/servebench/servebench/internal/decodelaw"
)

// maxNamedSeqs bounds the request sequence numbers listed per stage in the
// preemption attribution; the count is always complete.
const maxNamedSeqs = 50

// Correlation is the "correlation" section of summary.json: client and
// server joined on one timeline of windows, and what that explains about
// throughput and latency. Absent figures could not be computed (no scrape,
// too few windows, a metric the server does not export).
type Correlation struct {
	WindowS       float64 `json:"window_s"`             // nominal window length, seconds (the scrape interval, at least 1 s)
	Windows       int     `json:"windows"`              // windows on the timeline
	SteadyWindows int     `json:"steady_windows"`       // full windows with a steady stream count (see Window.Steady)
	ScrapeOK      int     `json:"scrape_samples"`       // successful scrapes
	ScrapeFailed  int     `json:"scrape_failed"`        // failed scrapes (recorded, skipped)
	Profile       string  `json:"profile,omitempty"`    // metrics profile that read the server's pages
	Aligned       bool    `json:"aligned_with_scrapes"` // windows follow scrape samples (false: fixed windows, client only)

	// Fit is the memory-bound decode law fitted over the steady windows of
	// all stages.
	Fit *decodelaw.Fit `json:"decode_fit,omitempty"`
	// RKVUsage and RContext are Pearson correlations, over the steady
	// windows, of client output tok/s with server KV usage and with the
	// context in flight (summed over streams).
	RKVUsage *float64 `json:"r_tokens_per_s_kv_usage,omitempty"`
	RContext *float64 `json:"r_tokens_per_s_context,omitempty"`

	CrossCheck *CrossCheck `json:"cross_check,omitempty"`

	// TTFTWaitingShare is the share of non-warmup TTFT (summed over ok
	// requests) spent in windows where the server had requests waiting.
	TTFTWaitingShare *float64 `json:"ttft_waiting_share,omitempty"`
	// Preemptions is the server's preemption count over the timeline.
	Preemptions *float64 `json:"preemptions,omitempty"`
	// PreemptedRequests counts the non-warmup requests whose p99 chunk gaps
	// overlap a window with a preemption (see StageCorrelation).
	PreemptedRequests int `json:"preemption_affected_requests"`

	// WholeResponses counts the ok requests answered by a whole response
	// (not streamed): their tokens count on the timeline when each ends,
	// so per-window client rates are bursty while totals hold.
	WholeResponses int `json:"whole_responses,omitempty"`

	// CountersAtEnd is true when the server counts a request's tokens only
	// when it ends: there is no server rate per window, and the cross-check
	// compares totals over the run. It is told from the series themselves
	// (the counter's steps against the tokens received and against the
	// requests ending), whatever the profile; the profile's word decides
	// only when the series cannot.
	CountersAtEnd bool `json:"counters_at_end,omitempty"`

	Stages []StageCorrelation `json:"stages"`

	// GPU is what the GPU telemetry showed under load; nil without any.
	GPU *GPU `json:"gpu,omitempty"`

	// Conclusion answers in one sentence whether the server saturated and
	// what limited it (package report writes it); it is also the first of
	// the findings.
	Conclusion string `json:"conclusion,omitempty"`

	// Findings states the above in plain sentences, for the text and HTML
	// reports.
	Findings []string `json:"findings"`
}

// CrossCheck compares the client's output token rate with the server's
// generation-token counter over the windows both cover.
type CrossCheck struct {
	ClientTokensPerSec float64 `json:"client_tokens_per_s"`
	ServerTokensPerSec float64 `json:"server_tokens_per_s"`
	Difference         float64 `json:"difference"` // client / server − 1
	Flagged            bool    `json:"flagged"`    // |difference| > 5 %
}

// StageCorrelation is the correlation of one stage: the windows where the
// stage held the timeline.
type StageCorrelation struct {
	Index         int     `json:"index"`
	Name          string  `json:"name"`
	FromS         float64 `json:"from_s"` // first window's start, seconds from the epoch
	ToS           float64 `json:"to_s"`   // last window's end
	Windows       int     `json:"windows"`
	SteadyWindows int     `json:"steady_windows"`
	// SteadyAfterS is how long after its first window the stage's first
	// steady window began (its stream count within 10 % of the stage's
	// median): when the steady state was reached. Absent when it never was.
	SteadyAfterS *float64 `json:"steady_after_s,omitempty"`
	Streams      float64  `json:"streams"` // median decoding streams over the full windows

	// Start and End are the means of the first and last N steady windows
	// (N = steady windows / 4, between 1 and 10); Drop is 1 − end/start
	// of the client's output tok/s.
	Start *Point   `json:"start,omitempty"`
	End   *Point   `json:"end,omitempty"`
	Drop  *float64 `json:"drop,omitempty"`

	Fit      *decodelaw.Fit `json:"decode_fit,omitempty"`
	RKVUsage *float64       `json:"r_tokens_per_s_kv_usage,omitempty"`
	RContext *float64       `json:"r_tokens_per_s_context,omitempty"`
	// ByKVUsage is the stage's throughput curve against server KV-cache
	// usage, the way vLLM's periodic log line reads: at every multiple of
	// 5 % that the stage's KV usage passed through, the mean client output
	// tok/s of the steady windows within ±1 percentage point of it.
	ByKVUsage []KVPoint `json:"throughput_by_kv_usage,omitempty"`

	TTFTWaitingShare *float64 `json:"ttft_waiting_share,omitempty"`
	WaitingStart     *float64 `json:"waiting_start,omitempty"` // mean waiting over the first N windows of the stage
	WaitingEnd       *float64 `json:"waiting_end,omitempty"`   // … over the last N
	WaitingMax       *float64 `json:"waiting_max,omitempty"`

	// RunningMax and KVUsageMax are the highest running-requests count and
	// KV-cache usage (percent) of the stage's windows (each window holds
	// the mean of the scrapes bounding it); absent when not scraped. They
	// say what held the server back when it saturated.
	RunningMax *float64 `json:"running_max,omitempty"`
	KVUsageMax *float64 `json:"kv_usage_max_perc,omitempty"`
	// KVZeroOnly is true when the server's KV-cache usage gauge read 0
	// throughout while requests ran: a running request holds cache blocks,
	// so the gauge does not measure this cache (KVUsageMax is then absent:
	// memory cannot be judged from it).
	KVZeroOnly bool `json:"kv_usage_zero_only,omitempty"`

	Preemptions *float64 `json:"preemptions,omitempty"`
	// AffectedRequests counts the stage's non-warmup requests whose chunk
	// gaps at or above their own p99 overlap a window with a preemption;
	// AffectedSeqs names the first 50 by sequence number.
	AffectedRequests int      `json:"preemption_affected_requests"`
	AffectedSeqs     []uint64 `json:"preemption_affected_seqs,omitempty"`

	// Load is what the client offered the stage and the server served
	// while its load was on; nil when no measured request arrived.
	Load *Load `json:"load,omitempty"`

	// Verdict says whether the stage saturated the server: "saturated",
	// "queueing" (requests waited, but the server was not shown to be at
	// its limit), "not saturated", "unknown" (nothing the run measured
	// can tell) or "not enough data" (too few successful requests);
	// VerdictReason says why, with the numbers. Package report decides
	// both from Load and the figures below.
	Verdict       string `json:"verdict"`
	VerdictReason string `json:"verdict_reason"`

	// The figures the verdict rests on, beyond the waiting counts above:
	// windows that know the waiting count, windows with requests waiting,
	// and the relative change of output tok/s across the latter (NaN when
	// unknown).
	WaitingWindows   int     `json:"-"`
	QueuedWindows    int     `json:"-"`
	ThroughputChange float64 `json:"-"`
	// Trend is what the server's queue alone says over the whole stage:
	// VerdictSaturated when waiting grew by at least one request from the
	// stage's first windows to its last while the client's output tok/s
	// over the windows with requests waiting stayed within ±10 %;
	// VerdictQueueing when requests waited in at least a quarter of the
	// windows; VerdictNotSaturated when they did not; VerdictUnknown with
	// no waiting gauge.
	Trend string `json:"-"`
}

// Load is what the client offered a stage and what the server served
// while the stage's load was on: from its first measured arrival (sent
// or dropped) to its last, the drain after the last arrival left out, so
// that a queue emptying once the load stops does not hide one that was
// full while it was on.
type Load struct {
	FromS    float64 `json:"from_s"` // first arrival, seconds from the epoch
	ToS      float64 `json:"to_s"`   // last arrival
	Arrivals int     `json:"arrivals"`
	Dropped  int     `json:"dropped"` // arrivals dropped at the cap, never sent
	// Loop is "closed" or "open" ("" when the results hold no scenario);
	// Cap the requests in flight the client allowed: a closed loop's
	// workers, an open loop's max_concurrency (0: unknown).
	Loop string `json:"loop,omitempty"`
	Cap  int    `json:"cap,omitempty"`
	Open bool   `json:"-"`
	// OfferedPerSec is an open loop's arrivals per second over the span;
	// ServedPerSec the measured requests completed ok per second from the
	// first completion to the span's end (a server that keeps up serves
	// what it is offered once the first responses come back); nil when
	// the span is too short or too few completed in it.
	OfferedPerSec *float64 `json:"offered_per_s,omitempty"`
	ServedPerSec  *float64 `json:"served_per_s,omitempty"`
	Completed     int      `json:"completed"` // ok completions counted in ServedPerSec
	// InFlightMean is the mean number of requests in flight over the
	// span; AtCapShare the share of the span with the cap's worth in
	// flight (nil without a cap).
	InFlightMean float64  `json:"in_flight_mean"`
	AtCapShare   *float64 `json:"at_cap_share,omitempty"`
	// TTFTStartMS and TTFTEndMS are the mean TTFT of the ok requests sent
	// in the span's first and last quarter.
	TTFTStartMS *float64 `json:"ttft_start_ms,omitempty"`
	TTFTEndMS   *float64 `json:"ttft_end_ms,omitempty"`
	// The server over the windows inside the span (absent when it does
	// not export the gauge): requests waiting and running, the share of
	// windows with a request waiting, and the share with waiting at its
	// ceiling, the cap less the requests running (within one request, or
	// 10 % of the ceiling, and at least one request): every request the
	// client could send that the server did not run was waiting.
	Windows     int      `json:"windows"`
	WaitingMean *float64 `json:"waiting_mean,omitempty"`
	WaitingMax  *float64 `json:"waiting_max,omitempty"`
	RunningMean *float64 `json:"running_mean,omitempty"`
	RunningMax  *float64 `json:"running_max,omitempty"`
	QueuedShare *float64 `json:"queued_share,omitempty"`
	PinnedShare *float64 `json:"pinned_share,omitempty"`
	// CeilingMean is the mean ceiling (cap − running) over the windows
	// PinnedShare judged.
	CeilingMean *float64 `json:"ceiling_mean,omitempty"`
}

// Stage verdicts.
const (
	VerdictSaturated    = "saturated"
	VerdictQueueing     = "queueing"
	VerdictNotSaturated = "not saturated"
	VerdictUnknown      = "unknown"
	// VerdictInsufficient is a stage with too few successful requests
	// for any verdict.
	VerdictInsufficient = "not enough data"
)

// KVPoint is the mean throughput of the windows near one KV-usage level.
type KVPoint struct {
	KVUsagePerc   float64 `json:"kv_usage_perc"`  // the level, percent
	TokensPerSec  float64 `json:"tokens_per_s"`   // mean client output tok/s of the windows near it
	ContextTokens float64 `json:"context_tokens"` // mean context in flight, summed over streams
	Windows       int     `json:"windows"`
}

// kvBand is the half-width, in percentage points, of the KV usage band
// averaged at each level of StageCorrelation.ByKVUsage.
const kvBand = 1.0

// byKVUsage computes StageCorrelation.ByKVUsage from steady windows.
func byKVUsage(ws []Window) []KVPoint {
	var out []KVPoint
	for level := 5.0; level <= 100; level += 5 {
		p := KVPoint{KVUsagePerc: level}
		for _, w := range ws {
			if !math.IsNaN(w.KVUsagePerc) && math.Abs(w.KVUsagePerc-level) <= kvBand {
				p.TokensPerSec += w.OutputTokensPerSec
				p.ContextTokens += w.ContextSum
				p.Windows++
			}
		}
		if p.Windows == 0 {
			continue
		}
		p.TokensPerSec = round(p.TokensPerSec/float64(p.Windows), 3)
		p.ContextTokens = round(p.ContextTokens/float64(p.Windows), 1)
		out = append(out, p)
	}
	return out
}

// Point is the mean of a few windows.
type Point struct {
	TokensPerSec  float64  `json:"tokens_per_s"`              // client output tok/s
	PerStream     float64  `json:"tokens_per_s_per_stream"`   // tokens_per_s / decoding streams
	Streams       float64  `json:"streams"`                   // decoding streams
	ContextTokens float64  `json:"context_tokens"`            // context in flight, summed over streams
	ContextPer    float64  `json:"context_tokens_per_stream"` // mean in-flight context per stream
	KVUsagePerc   *float64 `json:"kv_usage_perc,omitempty"`
	Windows       int      `json:"windows"`
}

// Correlation computes the correlation section. names maps stage indexes
// to names (missing ones are called stage-N). It returns nil when no
// request was sent.
func (c *Correlator) Correlation(names map[int]string) *Correlation {
	tl := c.timeline()
	if len(tl.windows) == 0 {
		return nil
	}
	ws := tl.windows
	out := &Correlation{WindowS: round(tl.nominal.Seconds(), 3), Windows: len(ws), ScrapeOK: tl.okSamples,
		ScrapeFailed: tl.failedSamples, Profile: tl.profile, Aligned: tl.scraped}
	var steady []Window
	for _, w := range ws {
		if w.Steady {
			steady = append(steady, w)
		}
	}
	out.SteadyWindows = len(steady)
	out.WholeResponses = c.whole
	out.CountersAtEnd = tl.countersAtEnd
	out.Fit = FitDecode(steady)
	out.RKVUsage = pearsonOf(steady, func(w *Window) float64 { return w.KVUsagePerc })
	out.RContext = pearsonOf(steady, func(w *Window) float64 { return w.ContextSum })
	out.CrossCheck = crossCheck(ws)
	out.Preemptions = sumOf(ws, func(w *Window) float64 { return w.Preemptions })

	ttft, waited := c.ttftWaiting(ws)
	if s, ok := share(ttft[-1], waited[-1]); ok {
		out.TTFTWaitingShare = &s
	}
	affected := c.affected(ws)

	for _, i := range slices.Sorted(maps.Keys(c.stages)) {
		name := names[i]
		if name == "" {
			name = fmt.Sprintf("stage-%d", i)
		}
		sc := stageCorrelation(i, name, ws)
		sc.Load = c.load(i, ws)
		if s, ok := share(ttft[i], waited[i]); ok {
			sc.TTFTWaitingShare = &s
		}
		seqs := affected[i]
		sc.AffectedRequests = len(seqs)
		out.PreemptedRequests += len(seqs)
		if len(seqs) > maxNamedSeqs {
			seqs = seqs[:maxNamedSeqs]
		}
		sc.AffectedSeqs = seqs
		out.Stages = append(out.Stages, sc)
	}
	out.GPU = c.gpuSummary(ws)
	return out
}

func stageCorrelation(index int, name string, ws []Window) StageCorrelation {
	sc := StageCorrelation{Index: index, Name: name}
	var mine, full, steady []Window
	for _, w := range ws {
		if w.Stage != index {
			continue
		}
		mine = append(mine, w)
		if w.Full && w.Decoding > 0 {
			full = append(full, w)
		}
		if w.Steady {
			steady = append(steady, w)
		}
	}
	sc.Windows, sc.SteadyWindows = len(mine), len(steady)
	if len(mine) > 0 {
		sc.FromS = round(mine[0].From.Seconds(), 3)
		sc.ToS = round(mine[len(mine)-1].To.Seconds(), 3)
	}
	if len(steady) > 0 && len(mine) > 0 {
		after := round((steady[0].From - mine[0].From).Seconds(), 3)
		sc.SteadyAfterS = &after
	}
	if len(full) > 0 {
		d := make([]float64, len(full))
		for i, w := range full {
			d[i] = w.Decoding
		}
		slices.Sort(d)
		sc.Streams = round(d[len(d)/2], 3)
	}
	if n := edgeCount(len(steady)); n > 0 {
		sc.Start = meanPoint(steady[:n])
		sc.End = meanPoint(steady[len(steady)-n:])
		if sc.Start.TokensPerSec > 0 {
			d := round(1-sc.End.TokensPerSec/sc.Start.TokensPerSec, 4)
			sc.Drop = &d
		}
	}
	sc.Fit = FitDecode(steady)
	sc.RKVUsage = pearsonOf(steady, func(w *Window) float64 { return w.KVUsagePerc })
	sc.RContext = pearsonOf(steady, func(w *Window) float64 { return w.ContextSum })
	sc.ByKVUsage = byKVUsage(steady)
	sc.Preemptions = sumOf(mine, func(w *Window) float64 { return w.Preemptions })
	sc.RunningMax = maxOf(mine, func(w *Window) float64 { return w.Running })
	sc.KVUsageMax = maxOf(mine, func(w *Window) float64 { return w.KVUsagePerc })
	if kv, run := sc.KVUsageMax, sc.RunningMax; kv != nil && *kv == 0 && run != nil && *run > 0 {
		sc.KVUsageMax, sc.KVZeroOnly = nil, true
	}
	trend(&sc, mine)
	return sc
}

// edgeCount is N, the number of windows averaged at each end of a stage.
func edgeCount(n int) int { return min(max(n/4, min(n, 1)), 10) }

func meanPoint(ws []Window) *Point {
	p := &Point{Windows: len(ws)}
	var kv float64
	kvN := 0
	for _, w := range ws {
		p.TokensPerSec += w.OutputTokensPerSec
		p.Streams += w.Decoding
		p.ContextTokens += w.ContextSum
		p.ContextPer += w.ContextMean
		if !math.IsNaN(w.KVUsagePerc) {
			kv += w.KVUsagePerc
			kvN++
		}
	}
	n := float64(len(ws))
	p.TokensPerSec /= n
	p.Streams /= n
	p.ContextTokens /= n
	p.ContextPer /= n
	if p.Streams > 0 {
		p.PerStream = round(p.TokensPerSec/p.Streams, 3)
	}
	p.TokensPerSec, p.Streams, p.ContextTokens = round(p.TokensPerSec, 3), round(p.Streams, 3), round(p.ContextTokens, 1)
	p.ContextPer = round(p.ContextPer, 1)
	if kvN > 0 {
		v := round(kv/float64(kvN), 3)
		p.KVUsagePerc = &v
	}
	return p
}

// FitDecode fits the decode law (package decodelaw) to the windows: each
// window's Decoding (the streams), OutputTokensPerSec and ContextSum.
func FitDecode(ws []Window) *decodelaw.Fit {
	ps := make([]decodelaw.Point, len(ws))
	for i, w := range ws {
		ps[i] = decodelaw.Point{Streams: w.Decoding, TokensPerSec: w.OutputTokensPerSec, Context: w.ContextSum}
	}
	return decodelaw.FitPoints(ps)
}

// pearsonOf returns Pearson's r of output tok/s with f over the windows
// where f is known, or nil with fewer than three such windows or no spread.
func pearsonOf(ws []Window, f func(*Window) float64) *float64 {
	var xs, ys []float64
	for i := range ws {
		v := f(&ws[i])
		if math.IsNaN(v) {
			continue
		}
		xs = append(xs, ws[i].OutputTokensPerSec)
		ys = append(ys, v)
	}
	if len(xs) < 3 {
		return nil
	}
	r, ok := pearson(xs, ys)
	if !ok {
		return nil
	}
	r = round(r, 4)
	return &r
}

func pearson(xs, ys []float64) (float64, bool) {
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= n
	my /= n
	var sxx, syy, sxy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxx += dx * dx
		syy += dy * dy
		sxy += dx * dy
	}
	if sxx <= 0 || syy <= 0 {
		return 0, false
	}
	return sxy / math.Sqrt(sxx*syy), true
}

// sumOf sums f over the windows where it is known; nil when it is known
// nowhere.
func sumOf(ws []Window, f func(*Window) float64) *float64 {
	var sum float64
	known := false
	for i := range ws {
		if v := f(&ws[i]); !math.IsNaN(v) {
			sum += v
			known = true
		}
	}
	if !known {
		return nil
	}
	sum = round(sum, 3)
	return &sum
}

// crossCheck compares client and server token totals over the windows
// where the server's generation counter is known and something was in
// flight.
//
// A counter that moves only when a request ends has no meaningful rate per
// window, but its total over the run still holds: then every window counts.
func crossCheck(ws []Window) *CrossCheck {
	var client, server, secs float64
	for _, w := range ws {
		atEnd := math.IsNaN(w.ServerTokensPerSec) && !math.IsNaN(w.serverTokens)
		if math.IsNaN(w.serverTokens) || (w.InFlight == 0 && !atEnd) {
			continue
		}
		client += w.OutputTokens
		server += w.serverTokens
		secs += w.Seconds()
	}
	if secs == 0 || server <= 0 {
		return nil
	}
	d := client/server - 1
	return &CrossCheck{ClientTokensPerSec: round(client/secs, 3), ServerTokensPerSec: round(server/secs, 3),
		Difference: round(d, 4), Flagged: math.Abs(d) > crossCheckTolerance}
}

// ttftWaiting sums, per stage and overall (key −1), the non-warmup TTFT of
// ok requests and the part of it spent in windows where the server had
// requests waiting, in seconds. Both maps are empty when no window knows
// the waiting count.
func (c *Correlator) ttftWaiting(ws []Window) (ttft, waited map[int]float64) {
	ttft, waited = map[int]float64{}, map[int]float64{}
	known := false
	for _, w := range ws {
		if !math.IsNaN(w.Waiting) {
			known = true
			break
		}
	}
	if !known {
		return ttft, waited
	}
	for _, st := range slices.Sorted(maps.Keys(c.stages)) {
		b := c.stages[st]
		total := b.total()[qTTFT]
		cur := b.cursor()
		var in float64
		for _, w := range ws {
			if w.Waiting > 0 {
				steps, _ := cur.integrals(w.From, w.To)
				in += steps[qTTFT]
			}
		}
		ttft[st] += total
		ttft[-1] += total
		waited[st] += in
		waited[-1] += in
	}
	return ttft, waited
}

func share(total, part float64) (float64, bool) {
	if total <= 0 {
		return 0, false
	}
	return round(part/total, 4), true
}

// affected returns, per stage, the sorted sequence numbers of non-warmup
// requests with a p99 chunk gap overlapping a window with a preemption.
func (c *Correlator) affected(ws []Window) map[int][]uint64 {
	var pre []Window
	for _, w := range ws {
		if w.Preemptions > 0 {
			pre = append(pre, w)
		}
	}
	out := map[int][]uint64{}
	if len(pre) == 0 {
		return out
	}
	for _, q := range c.stalls {
	spans:
		for _, s := range q.spans {
			for j := windowAt(pre, s.from); j < len(pre) && pre[j].From < s.to; j++ {
				if s.overlaps(pre[j].From, pre[j].To) {
					out[q.stage] = append(out[q.stage], q.seq)
					break spans
				}
			}
		}
	}
	for st := range out {
		slices.Sort(out[st])
		out[st] = slices.Compact(out[st])
	}
	return out
}

// trend reads the server's queue over the stage (StageCorrelation.Trend):
// did waiting grow by at least one request from its first N windows to
// its last N while the client's output tok/s over the windows with
// requests waiting stayed within ±10 % (first half against second half).
// It records the figures it rests on.
func trend(sc *StageCorrelation, ws []Window) {
	var waiting []float64
	for _, w := range ws {
		if !math.IsNaN(w.Waiting) {
			waiting = append(waiting, w.Waiting)
		}
	}
	sc.WaitingWindows = len(waiting)
	sc.ThroughputChange = math.NaN()
	if len(waiting) == 0 {
		sc.Trend = VerdictUnknown
		return
	}
	n := edgeCount(len(waiting))
	start, end := mean(waiting[:n]), mean(waiting[len(waiting)-n:])
	peak := slices.Max(waiting)
	sc.WaitingStart, sc.WaitingEnd, sc.WaitingMax = ptrRound(start, 3), ptrRound(end, 3), ptrRound(peak, 3)
	if peak == 0 {
		sc.Trend = VerdictNotSaturated
		return
	}
	var queued []float64
	for _, w := range ws {
		if w.Waiting > 0 {
			queued = append(queued, w.OutputTokensPerSec)
		}
	}
	sc.QueuedWindows = len(queued)
	if 4*len(queued) < len(waiting) {
		sc.Trend = VerdictNotSaturated
		return
	}
	if len(queued) >= 2 {
		h := len(queued) / 2
		if first := mean(queued[:h]); first > 0 {
			sc.ThroughputChange = mean(queued[h:])/first - 1
		}
	}
	grows := end-start >= 1
	flat := !math.IsNaN(sc.ThroughputChange) && math.Abs(sc.ThroughputChange) <= 0.10
	switch {
	case grows && flat:
		sc.Trend = VerdictSaturated
	default:
		sc.Trend = VerdictQueueing
	}
}

// maxOf returns the largest known f over the windows, rounded, or nil.
func maxOf(ws []Window, f func(*Window) float64) *float64 {
	var m float64
	ok := false
	for i := range ws {
		if v := f(&ws[i]); !math.IsNaN(v) && (!ok || v > m) {
			m, ok = v, true
		}
	}
	if !ok {
		return nil
	}
	return ptrRound(m, 3)
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func ptrRound(v float64, digits int) *float64 {
	r := round(v, digits)
	return &r
}

// StageSpans returns each stage's first and last window bounds, for plots.
func StageSpans(ws []Window) map[int][2]time.Duration {
	out := map[int][2]time.Duration{}
	for _, w := range ws {
		if w.Stage < 0 {
			continue
		}
		s, ok := out[w.Stage]
		if !ok {
			s = [2]time.Duration{w.From, w.To}
		}
		s[0], s[1] = min(s[0], w.From), max(s[1], w.To)
		out[w.Stage] = s
	}
	return out
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

// Thresholds of Load's figures.
const (
	// minServedSpan and minServed bound ServedPerSec: the completions
	// must span a second and number five.
	minServedSpan = time.Second
	minServed     = 5
)

// load computes stage st's Load.
func (c *Correlator) load(st int, ws []Window) *Load {
	span, s := c.loads[st], c.stages[st]
	if span == nil || s == nil {
		return nil
	}
	cp, known := c.caps[st]
	from, to := span.first, span.last
	l := &Load{FromS: round(from.Seconds(), 3), ToS: round(to.Seconds(), 3), Arrivals: span.n, Cap: cp.n, Open: cp.open}
	if known {
		l.Loop = map[bool]string{true: "open", false: "closed"}[cp.open]
	}
	l.Dropped = span.dropped
	steps, _ := s.cursor().integrals(from, to)
	secs := (to - from).Seconds()
	if secs > 0 {
		l.InFlightMean = round(steps[qFlight]/secs, 3)
		if cp.open && span.n >= 2 {
			l.OfferedPerSec = ptrRound(float64(span.n-1)/secs, 3)
		}
		if cp.n > 0 {
			l.AtCapShare = ptrRound(s.shareAtLeast(qFlight, from, to, float64(cp.n)-0.5), 3)
		}
		q := (to - from) / 4
		l.TTFTStartMS = meanTTFT(s, from, from+q)
		l.TTFTEndMS = meanTTFT(s, to-q, to+1)
	}
	if first, ok := s.firstPoint(pDone); ok && to-first >= minServedSpan {
		_, p := s.cursor().integrals(first, to)
		if n := int(math.Round(p[pDone])); n >= minServed {
			l.Completed = n
			l.ServedPerSec = ptrRound(float64(n)/(to-first).Seconds(), 3)
		}
	}
	loadServer(l, st, ws, from, to)
	return l
}

// meanTTFT is the mean TTFT, in milliseconds, of the ok requests sent in
// [from, to); nil when none was.
func meanTTFT(s *bins, from, to time.Duration) *float64 {
	_, p := s.cursor().integrals(from, to)
	if p[pTTFTCount] < 0.5 {
		return nil
	}
	return ptrRound(1000*p[pTTFTSum]/p[pTTFTCount], 1)
}

// loadServer fills the server's figures of a Load from stage st's
// windows whose middle lies in [from, to].
func loadServer(l *Load, st int, ws []Window, from, to time.Duration) {
	var waiting, running, ceilings []float64
	queued, pinned := 0, 0
	for _, w := range ws {
		mid := (w.From + w.To) / 2
		if w.Stage != st || mid < from || mid > to || math.IsNaN(w.Waiting) {
			continue
		}
		waiting = append(waiting, w.Waiting)
		if w.Waiting >= 1 {
			queued++
		}
		if math.IsNaN(w.Running) {
			continue
		}
		running = append(running, w.Running)
		if ceiling := float64(l.Cap) - w.Running; l.Cap > 0 && ceiling >= 1 {
			ceilings = append(ceilings, ceiling)
			if w.Waiting >= max(1, ceiling-max(1, 0.1*ceiling)) {
				pinned++
			}
		}
	}
	l.Windows = len(waiting)
	if len(waiting) == 0 {
		return
	}
	l.WaitingMean, l.WaitingMax = ptrRound(mean(waiting), 3), ptrRound(slices.Max(waiting), 3)
	l.QueuedShare = ptrRound(float64(queued)/float64(len(waiting)), 3)
	if len(running) > 0 {
		l.RunningMean, l.RunningMax = ptrRound(mean(running), 3), ptrRound(slices.Max(running), 3)
	}
	if len(ceilings) > 0 {
		l.PinnedShare = ptrRound(float64(pinned)/float64(len(ceilings)), 3)
		l.CeilingMean = ptrRound(mean(ceilings), 3)
	}
}
