package report

import (
	"fmt"
	"slices"
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
// stages' saturation verdicts (correlate.StageCorrelation.Verdict), with
// what the scrapes say about the cause (KV-cache usage and preemptions,
// or requests running at a cap while the cache had room). It also returns
// the index of the stage it states the verdict of (−1 for none), whose
// own verdict sentence the findings then leave out. It returns "" when
// there is nothing to judge (no request was sent).
func conclusion(c *correlate.Correlation, h *results.Harness) (string, int) {
	if c == nil || len(c.Stages) == 0 {
		return "", -1
	}
	if h != nil && h.Limited {
		return fmt.Sprintf("The client, not the server, limited this run (%s): the figures describe this machine's "+
			"limits more than the server's.", h.Reason), -1
	}
	byVerdict := map[string][]*correlate.StageCorrelation{}
	for i := range c.Stages {
		st := &c.Stages[i]
		byVerdict[st.Verdict] = append(byVerdict[st.Verdict], st)
	}
	names := func(sts []*correlate.StageCorrelation) string {
		q := make([]string, len(sts))
		for i, st := range sts {
			q[i] = fmt.Sprintf("%q", st.Name)
		}
		return joinWords(q)
	}
	others := func(skip []*correlate.StageCorrelation) string {
		var rest []*correlate.StageCorrelation
		for i := range c.Stages {
			if !slices.Contains(skip, &c.Stages[i]) {
				rest = append(rest, &c.Stages[i])
			}
		}
		if len(rest) == 0 {
			return ""
		}
		return " (not in " + names(rest) + ")"
	}
	switch {
	case len(byVerdict[correlate.VerdictSaturated]) > 0:
		sat := byVerdict[correlate.VerdictSaturated]
		st := sat[0]
		return fmt.Sprintf("Saturated in %s %s%s: requests queued for admission (waiting %s → %s) while output stayed near %s tok/s; %s",
			noun(len(sat), "stage", "stages"), names(sat), others(sat), num(deref(st.WaitingStart)), num(deref(st.WaitingEnd)),
			num(stageTokens(st)), limit(st)), st.Index
	case len(byVerdict[correlate.VerdictQueueing]) > 0:
		q := byVerdict[correlate.VerdictQueueing]
		st := q[0]
		return fmt.Sprintf("Near capacity but not saturated in %s %s: %s; %s", noun(len(q), "stage", "stages"), names(q),
			st.VerdictReason, limit(st)), st.Index
	case len(byVerdict[correlate.VerdictNotSaturated]) > 0:
		s := "Not saturated: in no stage did requests queue for long"
		if unknown := byVerdict[correlate.VerdictUnknown]; len(unknown) > 0 {
			s = fmt.Sprintf("Not saturated where it could be judged: in no stage did requests queue for long (%s %s had no "+
				"waiting-requests count scraped)", noun(len(unknown), "stage", "stages"), names(unknown))
		}
		var peakKV float64
		known := false
		for _, st := range c.Stages {
			if st.KVUsageMax != nil {
				peakKV, known = max(peakKV, *st.KVUsageMax), true
			}
		}
		if known {
			s += fmt.Sprintf(" and KV-cache usage stayed at or below %.0f %%", peakKV)
		}
		return s + ": the server had capacity to spare at this load; raise the load to find its limit.", -1
	}
	if !c.Aligned {
		return cannotTell + "no /metrics page was scraped, so the timeline holds the client's figures only.", -1
	}
	return cannotTell + "the server exports no waiting-requests count, so only the client's figures speak.", -1
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
			parts = append(parts, fmt.Sprintf("%s preemptions", num(*pre)))
		}
		return "the limit is the KV cache (" + strings.Join(parts, ", ") + "): more cache memory or shorter contexts admit more requests."
	case kv != nil && st.RunningMax != nil:
		return fmt.Sprintf("the limit is the batch size, not memory: at most %s requests ran at once with the KV cache at most %.0f %% full "+
			"(vLLM's max_num_seqs or max_num_batched_tokens).", num(*st.RunningMax), *kv)
	case st.RunningMax != nil:
		return fmt.Sprintf("at most %s requests ran at once, and with no KV-cache usage exported, memory cannot be told from a batch-size cap.", num(*st.RunningMax))
	}
	return "the server's metrics do not say what limits it."
}

// stageTokens is the stage's output tok/s at its end, or its start.
func stageTokens(st *correlate.StageCorrelation) float64 {
	switch {
	case st.End != nil:
		return st.End.TokensPerSec
	case st.Start != nil:
		return st.Start.TokensPerSec
	}
	return 0
}

// dropped says how many open-loop arrivals were dropped at the cap, per
// stage, or "".
func dropped(stages []Stage) string {
	var parts []string
	for _, st := range stages {
		if st.Requests.Dropped > 0 {
			parts = append(parts, fmt.Sprintf("%s of %s arrivals in stage %q", num(float64(st.Requests.Dropped)),
				num(float64(st.Requests.Scheduled)), st.Name))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return joinWords(parts) + " were dropped at the open loop's max_concurrency cap, never sent: the load offered more than was served."
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
