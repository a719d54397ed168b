package report

import (
	"fmt"
	"strings"

	"github.com/servebench/servebench/report/correlate"
	"github.com/servebench/servebench/results"
)

// kvFullPerc is the KV-cache usage from which the cache, rather than a
// scheduler limit, is what keeps waiting requests out: vLLM admits a
// request only when its blocks fit, so a cache this full turns arrivals
// away.
const kvFullPerc = 90

// conclusion answers, in one sentence, whether the server saturated and
// what limited it: the client itself when the harness says so; else the
// stages' saturation verdicts (judgeStage), the most telling stage's with its
// reasons and what the scrapes say about the cause (KV-cache usage and
// preemptions, or requests running at a cap while the cache had room).
// Each stage's reasons stay its own: a sentence never merges the figures
// of two stages. It also returns the stages whose verdict it states, which
// the findings then leave out. It returns "" when there is nothing to
// judge (no request was sent).
func conclusion(c *correlate.Correlation, h *results.Harness) (string, map[int]bool) {
	stated := map[int]bool{}
	if c == nil || len(c.Stages) == 0 {
		return "", stated
	}
	byVerdict := map[string][]*correlate.StageCorrelation{}
	for i := range c.Stages {
		st := &c.Stages[i]
		byVerdict[st.Verdict] = append(byVerdict[st.Verdict], st)
	}
	// A client that fell behind limits the figures of requests that
	// succeeded; when too few did for any verdict, that is the first thing
	// to say, and the harness's reason follows.
	nothingJudged := len(byVerdict[correlate.VerdictInsufficient]) == len(c.Stages)
	if h != nil && h.Limited && !nothingJudged {
		return fmt.Sprintf("The client, not the server, limited this run (%s): the figures describe this machine's "+
			"limits more than the server's.", h.Reason), stated
	}
	also := func(sts []*correlate.StageCorrelation) string {
		if len(sts) < 2 {
			return ""
		}
		q := make([]string, 0, len(sts)-1)
		for _, st := range sts[1:] {
			q = append(q, fmt.Sprintf("%q", st.Name))
		}
		return fmt.Sprintf(" (and in %s %s, below)", noun(len(q), "stage", "stages"), joinWords(q))
	}
	switch {
	case len(byVerdict[correlate.VerdictSaturated]) > 0:
		sat := byVerdict[correlate.VerdictSaturated]
		st := mostLoaded(sat)
		stated[st.Index] = true
		return fmt.Sprintf("Saturated in stage %q%s: %s; %s", st.Name, also(reorder(sat, st)), st.VerdictReason, limit(st)), stated
	case len(byVerdict[correlate.VerdictQueueing]) > 0:
		q := byVerdict[correlate.VerdictQueueing]
		st := mostLoaded(q)
		stated[st.Index] = true
		return fmt.Sprintf("Near capacity but not shown saturated in stage %q%s: %s; %s", st.Name, also(reorder(q, st)), st.VerdictReason, limit(st)), stated
	case len(byVerdict[correlate.VerdictNotSaturated]) > 0:
		return notSaturated(c, byVerdict, stated), stated
	case len(byVerdict[correlate.VerdictInsufficient]) > 0 && len(byVerdict[correlate.VerdictUnknown]) == 0:
		var why []string
		for _, st := range byVerdict[correlate.VerdictInsufficient] {
			stated[st.Index] = true
			why = append(why, fmt.Sprintf("stage %q: %s", st.Name, st.VerdictReason))
		}
		s := "No verdict: no stage had enough successful requests to judge whether the server saturated (" + strings.Join(why, "; ") + ")."
		if h != nil && h.Limited {
			s += fmt.Sprintf(" The client was also limited (%s).", h.Reason)
		}
		return s, stated
	}
	for _, st := range byVerdict[correlate.VerdictUnknown] {
		stated[st.Index] = true // the sentence below says why for every one
	}
	if !c.Aligned {
		return cannotTell + "no /metrics page was scraped, so the timeline holds the client's figures only.", stated
	}
	return cannotTell + "the server exports no waiting-requests count, so only the client's figures speak.", stated
}

// notSaturated states the stages that were judged not saturated, each
// with its own reason, and the peak KV-cache usage.
func notSaturated(c *correlate.Correlation, byVerdict map[string][]*correlate.StageCorrelation, stated map[int]bool) string {
	var parts []string
	for _, st := range byVerdict[correlate.VerdictNotSaturated] {
		stated[st.Index] = true
		parts = append(parts, fmt.Sprintf("in stage %q %s", st.Name, st.VerdictReason))
	}
	s := "Not saturated: " + joinWords(parts)
	var rest []string
	for _, v := range []string{correlate.VerdictUnknown, correlate.VerdictInsufficient} {
		for _, st := range byVerdict[v] {
			rest = append(rest, fmt.Sprintf("%q", st.Name))
		}
	}
	if len(rest) > 0 {
		s += fmt.Sprintf(" (%s %s could not be judged: see below)", noun(len(rest), "stage", "stages"), joinWords(rest))
	}
	var peakKV float64
	known := false
	for _, st := range c.Stages {
		if st.KVUsageMax != nil {
			peakKV, known = max(peakKV, *st.KVUsageMax), true
		}
	}
	if known {
		s += fmt.Sprintf("; KV-cache usage stayed at or below %.0f %%", peakKV)
	}
	return s + ": the server had capacity to spare at this load; raise the load to find its limit."
}

// mostLoaded returns the stage with the most requests offered per second
// (open loop) or in flight, the last on a tie.
func mostLoaded(sts []*correlate.StageCorrelation) *correlate.StageCorrelation {
	best, bestLoad := sts[0], -1.0
	for _, st := range sts {
		load := 0.0
		if l := st.Load; l != nil {
			load = l.InFlightMean
		}
		if load >= bestLoad {
			best, bestLoad = st, load
		}
	}
	return best
}

// reorder puts first at the head of sts.
func reorder(sts []*correlate.StageCorrelation, first *correlate.StageCorrelation) []*correlate.StageCorrelation {
	out := []*correlate.StageCorrelation{first}
	for _, st := range sts {
		if st != first {
			out = append(out, st)
		}
	}
	return out
}

// cannotTell opens the conclusion of a run whose saturation the scrapes
// cannot judge.
const cannotTell = "Whether the server saturated cannot be told: "

// limit says what held a saturated (or queueing) stage's server back.
func limit(st *correlate.StageCorrelation) string {
	kv, pre := st.KVUsageMax, st.Preemptions
	switch {
	case kv != nil && *kv >= kvFullPerc || pre != nil && *pre > 0:
		var parts []string
		if kv != nil {
			parts = append(parts, fmt.Sprintf("usage up to %.0f %%", *kv))
		}
		if pre != nil && *pre > 0 {
			parts = append(parts, FormatCountOf(*pre, "preemption", "preemptions"))
		}
		return "the limit is the KV cache (" + strings.Join(parts, ", ") + "): more cache memory or shorter contexts admit more requests."
	case kv != nil && st.RunningMax != nil:
		return fmt.Sprintf("the limit is the batch size, not memory: at most %s at once with the KV cache at most %.0f %% full "+
			"(vLLM's max_num_seqs or max_num_batched_tokens).", FormatCountOf(*st.RunningMax, "request ran", "requests ran"), *kv)
	case st.RunningMax != nil && st.KVZeroOnly:
		return fmt.Sprintf("at most %s at once, and the server's KV-cache usage read 0 %% throughout while they ran "+
			"(a running request holds cache blocks, so the gauge does not measure this cache): "+
			"memory cannot be told from a batch-size cap.", FormatCountOf(*st.RunningMax, "request ran", "requests ran"))
	case st.RunningMax != nil:
		return fmt.Sprintf("at most %s at once, and with no KV-cache usage exported, memory cannot be told from a batch-size cap.", FormatCountOf(*st.RunningMax, "request ran", "requests ran"))
	}
	return "the server's metrics do not say what limits it."
}

// noun returns one when n is 1, else many.
func noun(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// joinWords joins "a", "a and b", "a, b and c".
func joinWords(w []string) string {
	switch len(w) {
	case 0:
		return ""
	case 1:
		return w[0]
	}
	return strings.Join(w[:len(w)-1], ", ") + " and " + w[len(w)-1]
}
