package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/servebench/servebench/report/correlate"
	"github.com/servebench/servebench/results"
)

// findings states the correlation in sentences, most telling first,
// leaving out the verdict sentences of the stages the conclusion states.
func findings(c *correlate.Correlation, stated map[int]bool) []string {
	var out []string
	if !c.Aligned && !strings.HasPrefix(c.Conclusion, cannotTell) {
		out = append(out, "No server metrics were scraped: the timeline holds client-side figures only.")
	}
	out = append(out, steadiness(c)...)
	for _, st := range c.Stages {
		if st.Start == nil || st.End == nil || st.Drop == nil || st.SteadyWindows < 2 {
			continue
		}
		s := fmt.Sprintf("Stage %q: output throughput went from %s to %s tok/s (%s) with %s streams, as the context in flight went from %s to %s tokens",
			st.Name, num(st.Start.TokensPerSec), num(st.End.TokensPerSec), signedPct(-*st.Drop), num(st.Streams),
			num(st.Start.ContextTokens), num(st.End.ContextTokens))
		if st.Start.KVUsagePerc != nil && st.End.KVUsagePerc != nil {
			s += fmt.Sprintf(" and KV-cache usage from %.1f %% to %.1f %%", *st.Start.KVUsagePerc, *st.End.KVUsagePerc)
		}
		out = append(out, s+".")
		if len(st.ByKVUsage) >= 3 {
			parts := make([]string, len(st.ByKVUsage))
			for i, p := range st.ByKVUsage {
				parts[i] = fmt.Sprintf("%.0f %% → %s", p.KVUsagePerc, num(p.TokensPerSec))
			}
			out = append(out, fmt.Sprintf("Stage %q output tok/s by KV-cache usage: %s.", st.Name, strings.Join(parts, ", ")))
		}
	}
	if f := c.Fit; f != nil {
		switch {
		case !f.Holds:
			out = append(out, fmt.Sprintf("No decode law fits these windows: the least-squares line (%.2f ms %+.3f ms per 1,000 tokens of context, R² = %.3f over %d windows) "+
				"has a negative intercept or slope, so context in flight does not explain the throughput here.",
				f.InterceptMS, f.SlopeNSPerToken/1e3, f.R2, f.Windows))
		case f.R2 >= 0.9:
			out = append(out, fmt.Sprintf("Decode time per token per stream ≈ %.2f ms + %.3f ms per 1,000 tokens of context (R² = %.3f over %d windows): "+
				"decoding is memory-bound, each token costs more as the context grows.", f.InterceptMS, f.SlopeNSPerToken/1e3, f.R2, f.Windows))
		case f.R2 >= 0.5:
			out = append(out, fmt.Sprintf("Decode time per token per stream ≈ %.2f ms + %.3f ms per 1,000 tokens of context (R² = %.3f over %d windows): "+
				"context in flight explains part of the throughput; something else (batch changes, prefill, the client) explains the rest.",
				f.InterceptMS, f.SlopeNSPerToken/1e3, f.R2, f.Windows))
		default:
			out = append(out, fmt.Sprintf("Decode time per token per stream ≈ %.2f ms + %.3f ms per 1,000 tokens of context, but R² = %.3f over %d windows: "+
				"context in flight explains little of the throughput here.", f.InterceptMS, f.SlopeNSPerToken/1e3, f.R2, f.Windows))
		}
	}
	if c.RKVUsage != nil || c.RContext != nil {
		out = append(out, correlations(c))
	}
	if c.WholeResponses > 0 {
		out = append(out, fmt.Sprintf("%d responses were not streamed: their tokens count when each response ends, so the client's rate per window comes in bursts; the cross-check compares totals.", c.WholeResponses))
	}
	if c.CountersAtEnd {
		out = append(out, "The server counts a request's tokens when the request ends: its rate per window is not shown, and the cross-check compares totals over the run.")
	}
	if x := c.CrossCheck; x != nil {
		if x.Flagged {
			out = append(out, fmt.Sprintf("Client and server disagree on the output token rate by %s (client %s tok/s, server %s tok/s): the client may be a bottleneck, or the server is serving other clients.",
				pct(x.Difference), num(x.ClientTokensPerSec), num(x.ServerTokensPerSec)))
		} else {
			out = append(out, fmt.Sprintf("Client and server agree on the output token rate within %s (client %s tok/s, server %s tok/s).",
				pct(math.Abs(x.Difference)), num(x.ClientTokensPerSec), num(x.ServerTokensPerSec)))
		}
	}
	if c.TTFTWaitingShare != nil && *c.TTFTWaitingShare > 0 {
		out = append(out, fmt.Sprintf("%s of time to first token was spent while the server had requests waiting for admission.",
			pct(*c.TTFTWaitingShare)))
	}
	if p := preemptionFinding(c); p != "" {
		out = append(out, p)
	}
	for _, st := range c.Stages {
		if stated[st.Index] {
			continue
		}
		switch st.Verdict {
		case correlate.VerdictInsufficient:
			out = append(out, fmt.Sprintf("Stage %q: %s.", st.Name, st.VerdictReason))
		case correlate.VerdictUnknown:
			out = append(out, fmt.Sprintf("Stage %q cannot be judged: %s.", st.Name, st.VerdictReason))
		default:
			out = append(out, fmt.Sprintf("Stage %q is %s: %s.", st.Name, st.Verdict, st.VerdictReason))
		}
	}
	return out
}

// preemptionFinding states the server's preemptions, per stage, and the
// requests whose worst gaps fell in a window with one; "" without any.
func preemptionFinding(c *correlate.Correlation) string {
	if c.Preemptions == nil || *c.Preemptions <= 0 {
		return ""
	}
	s := fmt.Sprintf("The server preempted %s times", num(*c.Preemptions))
	var per []string
	for _, st := range c.Stages {
		if st.Preemptions != nil && *st.Preemptions > 0 {
			per = append(per, fmt.Sprintf("%s in %q", num(*st.Preemptions), st.Name))
		}
	}
	if len(per) > 0 {
		s += " (" + strings.Join(per, ", ") + ")"
	}
	s += fmt.Sprintf("; %d requests had their worst inter-token gaps in a window with a preemption", c.PreemptedRequests)
	var seqs []string
	for _, st := range c.Stages {
		for _, q := range st.AffectedSeqs {
			if len(seqs) < 10 {
				seqs = append(seqs, fmt.Sprint(q))
			}
		}
	}
	if len(seqs) > 0 {
		s += ": seq " + strings.Join(seqs, ", ")
		if c.PreemptedRequests > len(seqs) {
			s += ", …"
		}
	}
	return s + "."
}

// correlations states the Pearson r of output tok/s with KV-cache usage
// and with the context in flight, saying which is which: overall (the
// steady windows of all stages pooled) and within each stage.
func correlations(c *correlate.Correlation) string {
	var what []string
	kv, ctx := c.RKVUsage != nil, c.RContext != nil
	if kv {
		what = append(what, "KV-cache usage")
	}
	if ctx {
		what = append(what, "in-flight context")
	}
	r := func(p *float64) string {
		if p == nil {
			return "–"
		}
		return strings.Replace(fmt.Sprintf("%.2f", *p), "-", "−", 1)
	}
	pair := func(k, x *float64) string {
		var v []string
		if kv {
			v = append(v, r(k))
		}
		if ctx {
			v = append(v, r(x))
		}
		return "r = " + strings.Join(v, " and ")
	}
	s := fmt.Sprintf("Output tok/s against %s (Pearson r over steady windows): overall, all stages pooled, %s",
		strings.Join(what, " and against "), pair(c.RKVUsage, c.RContext))
	for _, st := range c.Stages {
		if st.RKVUsage != nil || st.RContext != nil {
			s += fmt.Sprintf("; within stage %q, %s", st.Name, pair(st.RKVUsage, st.RContext))
		}
	}
	return s + "."
}

// num formats a figure for a sentence: thousands separated, one decimal
// below 100.
func num(v float64) string {
	if math.Abs(v) < 100 && v != math.Trunc(v) {
		return fmt.Sprintf("%.1f", v)
	}
	s := fmt.Sprintf("%.0f", math.Abs(v))
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// pct formats a fraction as a percentage, with a minus sign when negative.
func pct(f float64) string {
	if f < 0 {
		return fmt.Sprintf("−%.1f %%", -100*f)
	}
	return fmt.Sprintf("%.1f %%", 100*f)
}

// signedPct formats a change as a signed percentage.
func signedPct(f float64) string {
	if f > 0 {
		return "+" + pct(f)
	}
	return pct(f)
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// explain writes the sentences of a correlation: each stage's verdict
// and its reasons (judgeStage), the conclusion (is the server saturated, and
// what limits it), then the findings, the conclusion first and the
// arrivals dropped next. A run in which no request succeeded gets no
// sentence beyond saying so: its figures describe nothing.
func explain(c *correlate.Correlation, h *results.Harness, stages []Stage, w *Workload) {
	if c == nil {
		return
	}
	noTokens := false
	byIndex := map[int]*Stage{}
	for i := range stages {
		noTokens = noTokens || stages[i].Requests.Inputs > 0
		byIndex[stages[i].Index] = &stages[i]
	}
	for i := range c.Stages {
		judgeStage(&c.Stages[i], byIndex[c.Stages[i].Index], noTokens)
	}
	c.Findings = nil
	var stated map[int]bool
	c.Conclusion, stated = conclusion(c, h)
	if c.Conclusion != "" {
		c.Findings = append(c.Findings, c.Conclusion)
	}
	ok := int64(0)
	for _, st := range stages {
		ok += st.Requests.OK
	}
	if ok == 0 {
		return
	}
	c.Findings = append(c.Findings, dropsExplained(c, stages, w)...)
	c.Findings = append(c.Findings, findings(c, stated)...)
	c.Findings = append(c.Findings, gpuFindings(c)...)
}

// steadiness says of each stage that never reached a steady state, or
// reached it late, what its figures then describe.
func steadiness(c *correlate.Correlation) []string {
	var out []string
	for _, st := range c.Stages {
		span := st.ToS - st.FromS
		switch {
		case st.Windows < 3 || span <= 0:
		case st.SteadyWindows == 0:
			out = append(out, fmt.Sprintf("Stage %q never reached a steady state: in none of its %d windows did the number of decoding streams hold within 10 %% of its median, "+
				"so its figures mix ramp-up, drain and a load that kept changing; run it longer to measure a steady server.", st.Name, st.Windows))
		case st.SteadyAfterS != nil && *st.SteadyAfterS > 0.25*span:
			out = append(out, fmt.Sprintf("Stage %q reached a steady state only after %s of its %s (%d of %d windows steady): its figures include the ramp-up before it; a warmup of that length would leave it out.",
				st.Name, FormatSeconds(*st.SteadyAfterS), FormatSeconds(span), st.SteadyWindows, st.Windows))
		}
	}
	return out
}
