package report

import (
	"fmt"

	"github.com/servebench/servebench/report/correlate"
)

// dropsExplained says, for each stage that dropped arrivals, which side
// turned them away and why, with the numbers: the client's
// max_concurrency cap always drops them (servebench never sends an
// arrival that finds the cap full), but the cap fills either because the
// server fell behind the offered load (sustained overload: the cap held
// most of the time) or because arrivals came in bursts that the server
// absorbed (the cap held briefly, the server kept up and had requests
// waiting rarely or never).
func dropsExplained(c *correlate.Correlation, stages []Stage, w *Workload) []string {
	var out []string
	for _, st := range stages {
		if st.Requests.Dropped == 0 {
			continue
		}
		var sc *correlate.StageCorrelation
		for i := range c.Stages {
			if c.Stages[i].Index == st.Index {
				sc = &c.Stages[i]
			}
		}
		var load *StageLoad
		if w != nil {
			for i := range w.Stages {
				if w.Stages[i].Index == st.Index {
					load = &w.Stages[i]
				}
			}
		}
		out = append(out, dropSentence(&st, sc, load))
	}
	return out
}

// dropSentence explains one stage's drops.
func dropSentence(st *Stage, sc *correlate.StageCorrelation, load *StageLoad) string {
	s := fmt.Sprintf("Stage %q: %d of %d arrivals (%s) were dropped at the client's max_concurrency cap", st.Name,
		st.Requests.Dropped, st.Requests.Scheduled, pct(float64(st.Requests.Dropped)/float64(st.Requests.Scheduled)))
	if load != nil && load.MaxConcurrency > 0 {
		s = fmt.Sprintf("%s of %d", s, load.MaxConcurrency)
	}
	s += ", never sent"
	if sc == nil || sc.Load == nil {
		return s + "."
	}
	f := factsOf(sc.Load, st)
	l := sc.Load
	held := ""
	if l.AtCapShare != nil {
		held = fmt.Sprintf(" (the cap was full %s of the time, %s in flight on average)", pct(*l.AtCapShare), num(l.InFlightMean))
	}
	server := "the server's queue was not scraped"
	if l.WaitingMax != nil {
		server = fmt.Sprintf("the server had at most %s requests waiting", num(*l.WaitingMax))
		if sc.KVUsageMax != nil {
			server += fmt.Sprintf(" and its KV cache at most %.0f %% full", *sc.KVUsageMax)
		}
	}
	switch {
	case f.offered == 0:
		return s + fmt.Sprintf("%s; the load's offered rate is not known, so whether bursts or the server filled the cap cannot be told.", held)
	case sc.Verdict == correlate.VerdictSaturated:
		return s + fmt.Sprintf(": sustained overload, not bursts: the server served %s of the %s req/s offered, so requests piled up to the cap%s and later arrivals found it full.",
			num(f.served), num(f.offered), held)
	case sc.Verdict == correlate.VerdictQueueing:
		return s + fmt.Sprintf(": the server served %s of the %s req/s offered and had requests waiting%s; the cap turned away the arrivals of its busiest moments.",
			num(f.served), num(f.offered), held)
	case f.atCap && l.WaitingMax != nil:
		return s + fmt.Sprintf(": the cap, not the server: it was full most of the time%s while %s, so this load needs more requests in flight than the cap allows. Raise max_concurrency to offer it.",
			held, server)
	case f.atCap:
		return s + fmt.Sprintf("%s, and %s: whether the server or the cap held the load back cannot be told.", held, server)
	}
	arrivals := "arrivals"
	switch {
	case load != nil && load.Arrival == "poisson":
		arrivals = "Poisson arrivals"
	case load != nil && load.Arrival == "gamma":
		arrivals = "gamma arrivals"
	}
	kept := "kept up"
	if f.offered > 0 {
		kept = fmt.Sprintf("kept up (served %s of the %s req/s offered)", num(f.served), num(f.offered))
	}
	return s + fmt.Sprintf(": bursts, not the server: %s came in bunches that filled the cap%s, while the server %s and %s. Raise max_concurrency to send them.",
		arrivals, held, kept, server)
}
