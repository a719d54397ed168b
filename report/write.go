package report

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the summary as indented JSON (the summary.json format).
// The output is a pure function of the summary, so rebuilding a summary
// from the same results gives the same bytes.
func WriteJSON(w io.Writer, s *Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("write summary JSON: %w", err)
	}
	return nil
}

// WriteText writes the compact terminal summary: the workload and
// environment box (Summary.About), one row per stage and one for the whole
// run, the whole run's throughput and latency distributions (mean and
// standard deviation beside the percentiles, as vLLM's bench serve prints
// them), then errors, findings and warnings.
func WriteText(w io.Writer, s *Summary) error {
	var b strings.Builder
	fmt.Fprintf(&b, "servebench · scenario %q\n", s.Scenario)
	about := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, f := range s.About() {
		for i, line := range f.Lines {
			label := f.Label
			if i > 0 {
				label = ""
			}
			fmt.Fprintf(about, "  %s\t%s\n", label, line)
		}
	}
	if err := about.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	if h := s.Harness; h != nil && h.Limited {
		// Said first: every figure below is in doubt.
		fmt.Fprintf(&b, "LIMITED BY THE CLIENT: %s\n  %s\n", h.Reason, LimitedAdvice)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	embeddings := s.Overall.Requests.Inputs > 0
	if embeddings {
		// Whole responses without output tokens: latency is E2E only.
		fmt.Fprintln(tw, "stage\tok\tfail\tdrop\tcancel\treq/s\tinputs/s\ttok/s\tE2E p50\tp90\tp99\tmax\t")
	} else {
		fmt.Fprintln(tw, "stage\tok\tfail\tdrop\tcancel\treq/s\tout tok/s\tTTFT p50\tp99\tITL p50\tp99\tTPOT p50\tE2E p50\tp99\t")
	}
	row := func(st Stage) {
		if embeddings {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.2f\t%.1f\t%.0f\t%s\t%s\t%s\t%s\t\n",
				st.Name, st.Requests.OK, st.Requests.Failed, st.Requests.Dropped, st.Requests.Canceled,
				st.RequestsPerSec, st.InputsPerSec, st.TotalTokensPerSec,
				ms(st.E2E.P50, st.E2E.Count), ms(st.E2E.P90, st.E2E.Count), ms(st.E2E.P99, st.E2E.Count), ms(st.E2E.Max, st.E2E.Count))
			return
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.2f\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			st.Name, st.Requests.OK, st.Requests.Failed, st.Requests.Dropped, st.Requests.Canceled,
			st.RequestsPerSec, st.OutputTokensPerSec,
			FormatLatency(st.TTFT.P50, st.TTFT.Count), FormatLatency(st.TTFT.P99, st.TTFT.Count),
			FormatLatency(st.ITL.P50, st.ITL.Count), FormatLatency(st.ITL.P99, st.ITL.Count),
			FormatLatency(st.TPOT.P50, st.TPOT.Count), FormatLatency(st.E2E.P50, st.E2E.Count), FormatLatency(st.E2E.P99, st.E2E.Count))
	}
	for _, st := range s.Stages {
		row(st)
	}
	if len(s.Stages) != 1 {
		row(s.Overall)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if embeddings {
		b.WriteString("(embeddings: latencies in ms from send; tok/s counts the inputs' tokens; warmup requests excluded)\n")
	} else {
		b.WriteString("(latencies in ms unless a unit is given; TTFT from send; warmup requests excluded)\n")
		if err := writeOverall(&b, s.Overall, len(s.Stages) != 1); err != nil {
			return err
		}
		writeEfficiency(&b, len(s.Stages) != 1, s.Overall.Efficiency)
		b.WriteString("\n")
	}
	if lag := s.Overall.ScheduleLag; lag.Count > 0 && lag.P99 >= 1 {
		name, from := "TTFT", s.Overall.TTFTFromSchedule
		if embeddings {
			name, from = "E2E", s.Overall.E2EFromSchedule
		}
		fmt.Fprintf(&b, "schedule lag p50 %s ms, p99 %s ms (%s from schedule p50 %s ms, p99 %s ms)\n",
			ms(lag.P50, 1), ms(lag.P99, 1), name, ms(from.P50, 1), ms(from.P99, 1))
	}
	writeTurns(&b, s.Overall.TTFTByTurn)
	writeSessionFigures(&b, s)
	if len(s.Overall.Errors) > 0 {
		b.WriteString("errors:")
		for _, k := range slices.Sorted(maps.Keys(s.Overall.Errors)) {
			fmt.Fprintf(&b, " %s=%d", k, s.Overall.Errors[k])
		}
		b.WriteString("\n")
		for _, k := range slices.Sorted(maps.Keys(s.Overall.ErrorMessages)) {
			for _, m := range s.Overall.ErrorMessages[k] {
				fmt.Fprintf(&b, "  %s: %s\n", k, m)
			}
		}
	}
	if c := s.Correlation; c != nil && len(c.Findings) > 0 {
		b.WriteString("findings:\n")
		for _, f := range c.Findings {
			fmt.Fprintf(&b, "  %s\n", f)
		}
	}
	for _, warn := range s.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", warn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// LatencyMetrics are the distributions the summaries show with mean and
// standard deviation beside the percentiles, as vLLM's bench serve does:
// the metric's short name and its Stage.Dist name.
var LatencyMetrics = []struct{ Label, Metric string }{
	{"TTFT", "ttft_ms"}, {"TPOT", "tpot_ms"}, {"ITL", "itl_ms"}, {"E2E", "e2e_ms"},
}

// writeOverall writes the throughput of st and its latency table (mean,
// std, p50, p90, p99, max), headed "all stages" when st pools several.
func writeOverall(b *strings.Builder, st Stage, pooled bool) error {
	scope := ""
	if pooled {
		scope = ", all stages"
	}
	fmt.Fprintf(b, "\nthroughput%s: %.2f req/s; output %s tok/s (peak %s in one second); total %s tok/s (input + output)\n",
		scope, st.RequestsPerSec, num(st.OutputTokensPerSec), num(st.PeakOutputTokensPerSec), num(st.TotalTokensPerSec))
	fmt.Fprintf(b, "concurrency%s: at most %d requests in flight\n", scope, st.PeakInFlight)
	head := "latency" + scope + " (ms)"
	width := len(head)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tmean\tstd\tp50\tp90\tp99\tmax\t\n", head)
	few := false
	for _, m := range LatencyMetrics {
		d := st.Dist(m.Metric)
		// Padded to the heading's width: the names read left-aligned.
		fmt.Fprintf(tw, "%-*s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", width, m.Label, FormatLatency(d.Mean, d.Count), FormatLatency(d.Std, d.Count),
			FormatLatency(d.P50, d.Count), FormatLatency(d.P90, d.Count), FormatLatency(d.P99, d.Count), FormatLatency(d.Max, d.Count))
		if d.Count == 0 {
			continue
		}
		row := []string{fmt.Sprintf("%-*s", width, "  ± 95 %")}
		for _, stat := range []string{"mean", "", "p50", "p90", "p99", ""} {
			row = append(row, halfWidth(*d, stat))
			few = few || (stat != "" && row[len(row)-1] == "few")
		}
		fmt.Fprintf(tw, "%s\t\n", strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("(± 95 %: the interval's larger half-width, distribution-free for percentiles")
	if few {
		b.WriteString("; few: too few samples for an interval, so the figure is a point with unknown error")
	}
	b.WriteString(")\n")
	return nil
}

// halfWidth is a statistic's 95 % interval as ±N % of the figure, "few"
// without one, "" for a column with no interval (std, max).
func halfWidth(d Dist, stat string) string {
	if stat == "" {
		return ""
	}
	v, _ := d.Stat(stat)
	lo, hi, ok := d.Interval(stat)
	if !ok {
		return "few"
	}
	if v == 0 {
		return "-"
	}
	h := max(hi-v, v-lo) / v * 100
	if h < 10 {
		return fmt.Sprintf("±%.1f%%", h)
	}
	return fmt.Sprintf("±%.0f%%", h)
}

// ms formats a millisecond figure, or "-" when there were no samples.
func ms(v float64, n int64) string {
	if n == 0 {
		return "-"
	}
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// writeTurns writes a conversation run's TTFT by turn: one row per turn
// index, with the mean prompt length and the share of it served from the
// prefix cache ("-" when the server reports no cached tokens).
func writeTurns(b *strings.Builder, rows []TurnTTFT) {
	if len(rows) == 0 {
		return
	}
	reported := false
	for _, r := range rows {
		reported = reported || r.CachedTokens > 0
	}
	b.WriteString("TTFT by conversation turn (all stages):\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  turn\tok\tTTFT p50\tp90\tp99\tprompt tok\tcached\t")
	for _, r := range rows {
		turn := fmt.Sprint(r.Turn)
		if r.AndLater {
			turn += "+"
		}
		cached := "-"
		if reported && r.PromptTokens > 0 {
			cached = fmt.Sprintf("%.0f %%", 100*float64(r.CachedTokens)/float64(r.PromptTokens))
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%.0f\t%s\t\n", turn, r.Count,
			ms(r.P50, r.Count), ms(r.P90, r.Count), ms(r.P99, r.Count), float64(r.PromptTokens)/float64(max(r.Count, 1)), cached)
	}
	_ = tw.Flush() // writes to a strings.Builder cannot fail
}

// writeSessionFigures writes the session stages' figures and the
// prefix-cache statements.
func writeSessionFigures(b *strings.Builder, s *Summary) {
	for _, st := range s.Stages {
		writeSessions(b, st.Name, st.Sessions)
	}
	if len(s.PrefixCache) > 0 {
		b.WriteString("prefix cache:\n")
		for _, pc := range s.PrefixCache {
			fmt.Fprintf(b, "  stage %s: %s\n", pc.Name, pc.Statement)
		}
	}
}

// writeSessions writes a session stage's session figures.
func writeSessions(b *strings.Builder, stage string, ss *Sessions) {
	if ss == nil {
		return
	}
	fmt.Fprintf(b, "sessions of stage %s: %d started, %d completed (%.3g/s), %d failed\n", stage, ss.Started, ss.Completed, ss.CompletedPerSec, ss.Failed)
	if ss.Completed == 0 {
		return
	}
	d := ss.Duration
	fmt.Fprintf(b, "  duration p50 %s s, p90 %s s, max %s s; %.1f requests per session; context reached: mean %s tokens, largest %s\n",
		secs(d.P50), secs(d.P90), secs(d.Max), ss.Requests.Mean, num(ss.Context.Mean), num(float64(ss.Context.Max)))
	if ss.Good != nil {
		fmt.Fprintf(b, "  goodput: %d of %d completed sessions met the slo at every request (%.3g/s)\n", *ss.Good, ss.Completed, deref(ss.GoodPerSec))
	}
}

// secs formats milliseconds as seconds.
func secs(msec float64) string { return fmt.Sprintf("%.2f", msec/1000) }
