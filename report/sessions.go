package report

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/servebench/servebench/results"
)

// Sessions is what a session stage's sessions did, counted over its
// measured sessions (those started after the warmup): how many completed
// (every request ok, the last one included), how long each took, the
// context each reached, and how many completed per second, in all and
// within the per-request objectives (slo) at every one of their requests.
type Sessions struct {
	Started   int64 `json:"started"`
	Completed int64 `json:"completed"`
	// Failed counts the sessions a request of which did not complete ok
	// (failed, canceled or dropped): the session ended there.
	Failed int64 `json:"failed"`
	// CompletedPerSec is the sessions completed per second of the
	// stage's measured window.
	CompletedPerSec float64 `json:"completed_per_s"`
	// Duration is the completed sessions' time from their first request
	// sent to their last one ended, think time and tool time included.
	Duration Dist `json:"duration_ms"`
	// Requests counts the requests of each completed session (its own
	// and its sub-agents'); Context the largest prompt each sent, in
	// tokens (the server's count, else the intended one).
	Requests *Counts `json:"requests_per_session,omitempty"`
	Context  *Counts `json:"context_tokens,omitempty"`
	// Good counts the completed sessions every request of which met the
	// scenario's slo; GoodPerSec is them per second: session goodput.
	// Both absent without an slo.
	Good       *int64   `json:"good,omitempty"`
	GoodPerSec *float64 `json:"good_per_s,omitempty"`
}

// sessionAgg accumulates one session's requests.
type sessionAgg struct {
	first, last     time.Duration
	requests        int64
	context         int64
	failed, ended   bool
	ttft, tpot, e2e time.Duration // the worst of its requests
}

// addSession counts a measured request of a session stage in its
// session.
func (s *stageAgg) addSession(r *results.Result) {
	if r.Session == 0 {
		return
	}
	if s.sessions == nil {
		s.sessions = map[uint64]*sessionAgg{}
	}
	a := s.sessions[r.Session]
	start := r.Sent
	if start == 0 {
		start = r.Scheduled
	}
	if a == nil {
		a = &sessionAgg{first: start, last: r.End}
		s.sessions[r.Session] = a
	}
	a.first, a.last = min(a.first, start), max(a.last, r.End)
	a.requests++
	a.context = max(a.context, int64(max(r.PromptTokens, r.InputTokens)))
	if r.Outcome != results.OK {
		a.failed = true
		return
	}
	a.ended = a.ended || r.SessionEnd
	if d, ok := r.TTFT(); ok {
		a.ttft = max(a.ttft, d)
	}
	if d, ok := r.TPOT(); ok {
		a.tpot = max(a.tpot, d)
	}
	if d, ok := r.E2E(); ok {
		a.e2e = max(a.e2e, d)
	}
}

// mergeSessions adds o's sessions into s's: a session's requests are all
// of one stage and one shard, so the maps do not overlap, except when a
// stage merges with itself across files of one run, which Reader
// refuses.
func (s *stageAgg) mergeSessions(o *stageAgg) {
	for k, v := range o.sessions {
		if s.sessions == nil {
			s.sessions = map[uint64]*sessionAgg{}
		}
		s.sessions[k] = v
	}
}

// sessionSummary returns the session figures of s over its measured
// window of window seconds, judged against slo (nil: no goodput); nil
// when s has no session.
func (s *stageAgg) sessionSummary(window float64, slo *results.SLO) *Sessions {
	if len(s.sessions) == 0 {
		return nil
	}
	out := &Sessions{}
	hist := hdrhistogram.New(histMinUS, histMaxUS, histSigFigs)
	var reqs, ctx counter
	var good int64
	for _, a := range s.sessions {
		out.Started++
		switch {
		case a.failed:
			out.Failed++
			continue
		case !a.ended:
			continue // still running when the run ended
		}
		out.Completed++
		record(hist, a.last-a.first)
		reqs.add(a.requests)
		ctx.add(a.context)
		if slo.Set() && meets(a.ttft, slo.TTFTMs) && meets(a.tpot, slo.TPOTMs) && meets(a.e2e, slo.E2EMs) {
			good++
		}
	}
	out.Duration = dist(hist)
	out.Requests, out.Context = reqs.counts(), ctx.counts()
	if window > 0 {
		out.CompletedPerSec = round(float64(out.Completed)/window, 4)
	}
	if slo.Set() {
		out.Good = &good
		if window > 0 {
			g := round(float64(good)/window, 4)
			out.GoodPerSec = &g
		}
	}
	return out
}

// meets reports whether d is within an objective of limit milliseconds
// (0: none).
func meets(d time.Duration, limitMS float64) bool {
	return limitMS <= 0 || float64(d)/float64(time.Millisecond) <= limitMS
}

// sessionStage reports whether stage i of the run is a session stage.
func (a *Aggregate) sessionStage(i int) bool {
	return a.spec != nil && i >= 0 && i < len(a.spec.Load.Stages) && a.spec.Load.Stages[i].Session != nil
}
