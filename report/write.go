package report

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/servebench/servebench/report/correlate"
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

// WriteText writes the compact terminal summary (Text without Verbose).
func WriteText(w io.Writer, s *Summary) error { return Text{}.Write(w, s) }

// Text is the terminal summary: the workload and environment box
// (Summary.About), one row per stage and one for the whole run, the whole
// run's throughput and latency distributions (mean and standard deviation
// beside the percentiles, as vLLM's bench serve prints them), then errors,
// the findings a user acts on first and warnings.
type Text struct {
	// Verbose writes every finding and the analyst's detail (each
	// stage's throughput change, throughput by KV-cache usage, the decode
	// law's coefficients, Pearson r, the cross-checks); without it the
	// findings are the conclusion and the next TerminalFindings, and a
	// line says how many more report.html and --verbose hold.
	Verbose bool
}

// TerminalFindings is how many findings after the conclusion the terminal
// summary shows without Verbose: the one or two a user acts on first.
const TerminalFindings = 2

// Write writes the summary of s.
func (t Text) Write(w io.Writer, s *Summary) error {
	var b strings.Builder
	writeAbout(&b, s)
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
	t.writeFindings(&b, s.Correlation)
	for _, warn := range s.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", warn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeAbout writes the heading, the run's title, and the workload and
// environment box.
func writeAbout(b *strings.Builder, s *Summary) {
	if title := s.Title(); title != s.Scenario {
		fmt.Fprintf(b, "servebench · %s\n", title)
	} else {
		fmt.Fprintf(b, "servebench · scenario %q\n", s.Scenario)
	}
	about := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, f := range s.About() {
		for i, line := range f.Lines {
			label := f.Label
			if i > 0 {
				label = ""
			}
			fmt.Fprintf(about, "  %s\t%s\n", label, line)
		}
	}
	_ = about.Flush() // writes to a strings.Builder cannot fail
	b.WriteString("\n")
}

// writeFindings writes the conclusion and the findings after it: all of
// them and the details when verbose, else the first TerminalFindings and
// a line counting the rest.
func (t Text) writeFindings(b *strings.Builder, c *correlate.Correlation) {
	if c == nil || len(c.Findings) == 0 {
		return
	}
	b.WriteString("findings:\n")
	shown := c.Findings
	if !t.Verbose {
		n := TerminalFindings
		if c.Conclusion != "" && c.Findings[0] == c.Conclusion {
			n++ // the conclusion, then the first two
		}
		shown = shown[:min(len(shown), n)]
	}
	for _, f := range shown {
		fmt.Fprintf(b, "  %s\n", f)
	}
	if t.Verbose {
		if len(c.Details) > 0 {
			b.WriteString("details:\n")
			for _, d := range c.Details {
				fmt.Fprintf(b, "  %s\n", d)
			}
		}
		return
	}
	var more []string
	if n := len(c.Findings) - len(shown); n > 0 {
		more = append(more, FormatCount(n, "more finding", "more findings"))
	}
	if n := len(c.Details); n > 0 {
		more = append(more, FormatCount(n, "line", "lines")+" of analyst detail")
	}
	if len(more) > 0 {
		fmt.Fprintf(b, "  (%s: --verbose prints them; report.html lists them)\n", joinWords(more))
	}
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
	fmt.Fprintf(b, "concurrency%s: at most %s in flight\n", scope, FormatCount(st.PeakInFlight, "request", "requests"))
	head := "latency" + scope + " (ms)"
	width := len(head)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tmean\tstd\tp50\tp90\tp99\tmax\t\n", head)
	few := false
	for _, m := range LatencyMetrics {
		few = latencyRow(tw, width, m.Label, st.Dist(m.Metric)) || few
	}
	// The latency metrics of the table that have no Stage field (added
	// since), by name: each gets its row without a line here.
	for _, name := range slices.Sorted(maps.Keys(st.Latencies)) {
		few = latencyRow(tw, width, name, st.Latencies[name]) || few
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

// latencyRow writes the row of one latency distribution and, when it has
// samples, the row of its intervals' half-widths; it reports whether an
// interval was "few".
func latencyRow(tw io.Writer, width int, label string, d *Dist) (few bool) {
	// Padded to the heading's width: the names read left-aligned.
	fmt.Fprintf(tw, "%-*s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", width, label, FormatLatency(d.Mean, d.Count), FormatLatency(d.Std, d.Count),
		FormatLatency(d.P50, d.Count), FormatLatency(d.P90, d.Count), FormatLatency(d.P99, d.Count), FormatLatency(d.Max, d.Count))
	if d.Count == 0 {
		return false
	}
	row := []string{fmt.Sprintf("%-*s", width, "  ± 95 %")}
	for _, stat := range []string{"mean", "", "p50", "p90", "p99", ""} {
		row = append(row, halfWidth(*d, stat))
		few = few || (stat != "" && row[len(row)-1] == "few")
	}
	fmt.Fprintf(tw, "%s\t\n", strings.Join(row, "\t"))
	return few
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
		fmt.Fprintf(b, "  goodput: %d of %s met the slo at every request (%.3g/s)\n", *ss.Good,
			FormatCount(ss.Completed, "completed session", "completed sessions"), deref(ss.GoodPerSec))
	}
}

// secs formats milliseconds as seconds.
func secs(msec float64) string { return fmt.Sprintf("%.2f", msec/1000) }
