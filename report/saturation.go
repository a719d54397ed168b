package report

import (
	"fmt"
	"math"

	"github.com/servebench/servebench/report/correlate"
)

// Saturation thresholds.
const (
	// MinJudged is the fewest successful requests a stage needs for a
	// saturation verdict: below it, the stage says so instead.
	MinJudged = 10
	// servedShare is the share of the offered rate below which an open
	// loop's server fell behind (less when few requests completed, whose
	// rate is noisier: see fellBehind).
	servedShare = 0.9
	// mostShare is "most of the time": of the load span (requests in
	// flight at the cap) or of its windows (waiting at its ceiling).
	mostShare = 0.5
	// queuedShare is the share of windows with requests waiting from which
	// the server was queueing.
	queuedShare = 0.25
	// ttftGrowth is the factor by which the mean TTFT of the last quarter
	// of a stage's load must exceed the first quarter's (and by at least
	// ttftGrowthMS) to count as growing.
	ttftGrowth   = 2.0
	ttftGrowthMS = 100.0
	// minLoadWindows is the fewest scrape windows inside a stage's load
	// for the server's queue over the load to be read.
	minLoadWindows = 2
)

// facts are what a stage's saturation verdict rests on, read off its
// load (correlate.Load) and summary.
type facts struct {
	l                *correlate.Load
	offered, served  float64 // req/s; served falls back on the stage's completion rate
	fellBehind       bool    // an open loop served less than it was offered
	atCap            bool    // requests in flight held the cap most of the load span
	pinned           bool    // waiting sat at its ceiling, cap − running, in most windows or on average
	queued           bool    // requests waited in at least a quarter of the windows
	ttftGrew         bool
	ttftFrom, ttftTo float64 // mean TTFT of the first and last quarter, ms
}

func factsOf(l *correlate.Load, st *Stage) facts {
	f := facts{l: l, served: st.RequestsPerSec}
	if l.ServedPerSec != nil {
		f.served = *l.ServedPerSec
	}
	if l.OfferedPerSec != nil && l.Open {
		f.offered = *l.OfferedPerSec
		// Completions are counted: with n of them the rate is known to
		// about 1/√n, so the bar is lowered by two of those.
		bar := servedShare
		if l.Completed > 0 {
			bar = min(bar, 1-2/math.Sqrt(float64(l.Completed)))
		}
		f.fellBehind = f.served < bar*f.offered
	}
	f.atCap = l.AtCapShare != nil && *l.AtCapShare >= mostShare
	if l.TTFTStartMS != nil && l.TTFTEndMS != nil {
		f.ttftFrom, f.ttftTo = *l.TTFTStartMS, *l.TTFTEndMS
		f.ttftGrew = f.ttftTo >= ttftGrowth*f.ttftFrom && f.ttftTo-f.ttftFrom >= ttftGrowthMS
	}
	if l.Windows < minLoadWindows {
		return f // the server's figures cover too little of the load
	}
	f.pinned = l.PinnedShare != nil && *l.PinnedShare >= mostShare
	if c, w := l.CeilingMean, l.WaitingMean; c != nil && w != nil && *c >= 1 {
		// Or on average over the load: window edges cut a closed loop's
		// resends in two.
		f.pinned = f.pinned || *w >= max(1, *c-max(1, 0.1**c))
	}
	f.queued = l.QueuedShare != nil && *l.QueuedShare >= queuedShare
	return f
}

// judgeStage decides a stage's saturation verdict from first principles and
// states why, with the numbers: an open loop served far less than it was
// offered while its requests held the cap (so arrivals were dropped) or
// waited in the server; waiting pinned at its ceiling, the cap less the
// requests running, whatever the queue's trend (a capped queue cannot
// grow); a queue that grew while output stayed flat. A stage with fewer
// than MinJudged successful requests gets no verdict.
func judgeStage(sc *correlate.StageCorrelation, st *Stage, noTokens bool) {
	sc.Verdict, sc.VerdictReason = verdictOf(sc, st, noTokens)
}

func verdictOf(sc *correlate.StageCorrelation, st *Stage, noTokens bool) (string, string) {
	if st == nil || st.Requests.OK < MinJudged || sc.Load == nil {
		ok, sent := int64(0), int64(0)
		if st != nil {
			ok, sent = st.Requests.OK, st.Requests.OK+st.Requests.Failed+st.Requests.Canceled
		}
		return correlate.VerdictInsufficient, fmt.Sprintf("not enough successful requests to judge (%d of %d sent succeeded; a verdict needs %d)",
			ok, sent, MinJudged)
	}
	f := factsOf(sc.Load, st)
	serverQueue := sc.Load.Windows >= minLoadWindows // the server's waiting gauge covers the load
	preempted := sc.Preemptions != nil && *sc.Preemptions > 0
	switch {
	case preempted:
		return correlate.VerdictSaturated, fmt.Sprintf("the server preempted running requests %s times: it could not keep every request it ran in memory",
			num(*sc.Preemptions))
	case f.fellBehind && (f.pinned || f.queued || f.ttftGrew):
		return correlate.VerdictSaturated, f.overload()
	case f.pinned:
		return correlate.VerdictSaturated, f.full()
	case !serverQueue && sc.Trend == correlate.VerdictSaturated:
		return correlate.VerdictSaturated, trendReason(sc, noTokens)
	case f.queued:
		return correlate.VerdictQueueing, f.waiting() + f.ttft()
	case sc.KVUsageMax != nil && *sc.KVUsageMax >= kvFullPerc:
		return correlate.VerdictQueueing, fmt.Sprintf("KV-cache usage reached %.0f %%: the cache, not the batch, is close to its limit", *sc.KVUsageMax)
	case !serverQueue && sc.Trend == correlate.VerdictQueueing:
		return correlate.VerdictQueueing, trendReason(sc, noTokens) + f.ttft()
	case f.fellBehind && !serverQueue:
		return correlate.VerdictUnknown, fmt.Sprintf("offered %s req/s, it served %s with the cap of %d full %s of the time, but the server's queue was not scraped, so whether the server or the cap held the load back cannot be told",
			num(f.offered), num(f.served), sc.Load.Cap, pct(deref(sc.Load.AtCapShare)))
	case f.fellBehind:
		return correlate.VerdictNotSaturated, fmt.Sprintf("offered %s req/s, it served %s, but the server ran every request it was sent (%s): the client's cap of %d, full %s of the time, held the load back",
			num(f.offered), num(f.served), f.idle(), sc.Load.Cap, pct(deref(sc.Load.AtCapShare)))
	case serverQueue:
		s := f.idle()
		if f.offered > 0 {
			s = fmt.Sprintf("served %s of the %s req/s offered, and %s", num(f.served), num(f.offered), s)
		}
		return correlate.VerdictNotSaturated, s
	case sc.Trend == correlate.VerdictNotSaturated:
		return correlate.VerdictNotSaturated, trendReason(sc, noTokens)
	case f.offered > 0:
		return correlate.VerdictNotSaturated, fmt.Sprintf("served %s of the %s req/s offered: the server kept up (it exports no waiting-requests count)",
			num(f.served), num(f.offered))
	}
	if sc.Load.Loop == "" {
		return correlate.VerdictUnknown, "the server exports no waiting-requests count, and the results do not record the load's shape, so the client's figures cannot tell"
	}
	return correlate.VerdictUnknown, "the server exports no waiting-requests count, and a closed loop is served at whatever rate the server allows, so the client's figures cannot tell"
}

// idle states a server queue that stayed (nearly) empty.
func (f facts) idle() string {
	l := f.l
	switch w := deref(l.WaitingMax); {
	case w == 0:
		return "no request waited for admission"
	case w < 1:
		return fmt.Sprintf("fewer than one request waited on average in every window (at most %s)", num(w))
	}
	return fmt.Sprintf("requests waited only briefly (a request or more in %s of the windows, at most %s)", pct(deref(l.QueuedShare)), num(*l.WaitingMax))
}

// overload states an open loop that fell behind its offered rate.
func (f facts) overload() string {
	l := f.l
	s := fmt.Sprintf("offered %s req/s, it served %s (%s)", num(f.offered), num(f.served), pct(f.served/f.offered))
	if l.Dropped > 0 && l.Cap > 0 {
		s += fmt.Sprintf("; %d of %d arrivals were dropped at the max_concurrency cap of %d", l.Dropped, l.Arrivals, l.Cap)
		if l.AtCapShare != nil {
			s += fmt.Sprintf(", which the requests in flight held %s of the time", pct(*l.AtCapShare))
		}
	}
	if w := f.waiting(); w != "" {
		s += "; " + w
	}
	return s + f.ttft()
}

// full states a stage whose waiting requests sat at their ceiling.
func (f facts) full() string {
	l := f.l
	who := fmt.Sprintf("its %d workers", l.Cap)
	if l.Open {
		who = fmt.Sprintf("its arrivals, up to the cap of %d,", l.Cap)
	}
	return fmt.Sprintf("%s kept the server full, which served %s req/s: %s", who, num(f.served), f.waiting()) + f.ttft()
}

// waiting states the server's queue against its ceiling, or "".
func (f facts) waiting() string {
	l := f.l
	if l.WaitingMax == nil {
		return ""
	}
	s := fmt.Sprintf("up to %s requests waited in the server", num(*l.WaitingMax))
	if l.RunningMax != nil {
		s += fmt.Sprintf(" while at most %s ran", num(*l.RunningMax))
	}
	if l.PinnedShare != nil && l.CeilingMean != nil && *l.PinnedShare > 0 {
		bound := fmt.Sprintf("the cap of %d", l.Cap)
		if !l.Open {
			bound = fmt.Sprintf("%d workers", l.Cap)
		}
		s += fmt.Sprintf(", as many as the client allowed (%s less those running, %s on average) in %s of the windows", bound, num(*l.CeilingMean), pct(*l.PinnedShare))
	} else if l.QueuedShare != nil {
		s += fmt.Sprintf(", with requests waiting in %s of the windows", pct(*l.QueuedShare))
	}
	return s
}

// ttft states the growth of TTFT over the load, or "".
func (f facts) ttft() string {
	if !f.ttftGrew {
		return ""
	}
	return fmt.Sprintf("; mean TTFT grew from %s to %s between the first and last quarter of the load", millis(f.ttftFrom), millis(f.ttftTo))
}

// millis formats milliseconds as "850 ms" or "3.4 s".
func millis(ms float64) string {
	if ms < 1000 {
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.1f s", ms/1000)
}

// trendReason states what the server's queue alone said over the stage
// (correlate.StageCorrelation.Trend), with the numbers. noTokens is true
// for a run whose responses carry no output tokens (embeddings): its
// windows have no throughput to compare.
func trendReason(sc *correlate.StageCorrelation, noTokens bool) string {
	start, end, peak := deref(sc.WaitingStart), deref(sc.WaitingEnd), deref(sc.WaitingMax)
	change := sc.ThroughputChange
	switch sc.Trend {
	case correlate.VerdictUnknown:
		return "the server exports no waiting-requests metric"
	case correlate.VerdictNotSaturated:
		if peak == 0 {
			return "no request waited for admission"
		}
		return fmt.Sprintf("requests waited only briefly (in %d of %d windows, at most %s)", sc.QueuedWindows, sc.WaitingWindows, num(peak))
	case correlate.VerdictSaturated:
		return fmt.Sprintf("waiting grew from %s to %s requests while output tok/s changed %s across the windows with requests waiting",
			num(start), num(end), signedPct(change))
	}
	if end-start >= 1 && noTokens && math.IsNaN(change) {
		return fmt.Sprintf("waiting grew from %s to %s requests; embeddings return no tokens as they go, so whether throughput stayed flat cannot be told window by window (inputs/s is the stage's figure)", num(start), num(end))
	}
	if end-start >= 1 {
		s := fmt.Sprintf("waiting grew from %s to %s requests, but output tok/s was not flat", num(start), num(end))
		if !math.IsNaN(change) {
			s += " (" + signedPct(change) + ")"
		}
		return s
	}
	return fmt.Sprintf("up to %s requests waited (in %d of %d windows), %s at the start and %s at the end", num(peak), sc.QueuedWindows, sc.WaitingWindows, num(start), num(end))
}
