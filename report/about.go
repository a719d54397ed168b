package report

import (
	"fmt"
	"strings"

	"github.com/servebench/servebench/scenario"
)

// Fact is one line of a run's workload and environment box: a label and
// one or more lines of text (one per stage for the load).
type Fact struct {
	Label string
	Lines []string
}

// About describes the run a summary covers, for the box that opens the
// terminal summary and report.html: where the load went (target, model,
// the server's /version), from where (servebench version, host), when and
// for how long, the load shape of each stage, the requests and the token
// lengths asked and measured. Every writer shows the same facts in the
// same order.
func (s *Summary) About() []Fact {
	var out []Fact
	add := func(label string, lines ...string) {
		if len(lines) > 0 && lines[0] != "" {
			out = append(out, Fact{Label: label, Lines: lines})
		}
	}
	target := s.Target
	w := s.Workload
	if w != nil && w.TargetURL != "" && w.TargetURL != s.Target {
		target += " (scenario: " + w.TargetURL + ")"
	}
	if w != nil && w.API != "" {
		target += ", " + w.API + " API"
	}
	add("target", target)
	add("model", s.Model)
	server := s.ServerVersion
	if server == "" {
		server = "unknown: no answer to GET /version is recorded"
	} else {
		server = "version " + server + " (GET /version)"
	}
	add("server", server)
	client := "servebench " + s.Version
	if s.Host != "" {
		client += " on " + s.Host
	}
	if s.Files > 1 {
		client += fmt.Sprintf(" (%d results files merged)", s.Files)
	}
	add("client", client)
	when := s.Started.UTC().Format("2006-01-02 15:04:05 UTC")
	if s.DurationS > 0 {
		when += ", ran " + FormatSeconds(s.DurationS)
	}
	add("started", when)
	if w != nil && len(w.Stages) > 0 {
		var lines []string
		for _, st := range w.Stages {
			lines = append(lines, st.Name+": "+st.String())
		}
		add("load", lines...)
	}
	add("requests", requestsText(s.Overall.Requests))
	add("precision", s.untilLines()...)
	tok := s.Overall.Tokens
	var inAsked, outAsked string
	if w != nil {
		inAsked, outAsked = w.InputTokens.String(), w.OutputTokens.String()
		if w.Dataset != "" {
			inAsked = "from " + w.Dataset
		}
	}
	add("input tokens", tokensText("", inAsked, tok.InputRequested, tok.PromptPerRequest, sharedPrefix(w)))
	add("output tokens", tokensText("max_tokens ", outAsked, tok.OutputRequested, tok.OutputPerRequest, ""))
	return out
}

func sharedPrefix(w *Workload) string {
	if w == nil || w.SharedPrefixTokens == 0 {
		return ""
	}
	return fmt.Sprintf("; %d of them a prefix every request shares", w.SharedPrefixTokens)
}

// requestsText counts the requests: "25 ok of 25 scheduled; 2 failed, 3
// dropped at the cap; 8 warmup requests left out".
func requestsText(r Requests) string {
	s := fmt.Sprintf("%d ok of %d scheduled", r.OK, r.Scheduled)
	var more []string
	if r.Failed > 0 {
		f := fmt.Sprintf("%d failed", r.Failed)
		if r.Shed > 0 {
			f += fmt.Sprintf(" (%d shed by the server: %.0f %% of those sent answered 429 or 503)", r.Shed, 100*float64(r.Shed)/float64(max(r.Scheduled-r.Dropped, 1)))
		}
		more = append(more, f)
	}
	if r.Dropped > 0 {
		more = append(more, fmt.Sprintf("%d dropped at the cap", r.Dropped))
	}
	if r.Canceled > 0 {
		more = append(more, fmt.Sprintf("%d canceled", r.Canceled))
	}
	if len(more) > 0 {
		s += "; " + strings.Join(more, ", ")
	}
	if r.Warmup > 0 {
		s += fmt.Sprintf("; %s left out", FormatCount(r.Warmup, "warmup request", "warmup requests"))
	}
	return s
}

// tokensText states a token length asked (the scenario's distribution,
// what names it, as "max_tokens ", and what was drawn from it) and
// measured (the server's usage of the ok requests): "asked 100; measured
// 100 each", "asked uniform 64–192 (drawn: mean 127 ± 37, 64–192);
// measured …".
func tokensText(what, dist string, drawn, measured *Counts, note string) string {
	var parts []string
	if dist != "" || drawn != nil {
		a := "asked " + what
		switch {
		case dist == "":
			a += countsText(drawn)
		case drawn != nil && !(drawn.Min == drawn.Max && dist == fmt.Sprint(drawn.Min)):
			a += dist + " (drawn: " + countsText(drawn) + ")"
		default:
			a += dist
		}
		parts = append(parts, a)
	}
	if measured != nil {
		parts = append(parts, "measured "+countsText(measured))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + note
}

// countsText describes per-request counts: "100 each", or "mean 412 ± 37,
// 320–512".
func countsText(c *Counts) string {
	if c.Min == c.Max {
		return fmt.Sprintf("%d each", c.Min)
	}
	return fmt.Sprintf("mean %s ± %s, %d–%d", num(c.Mean), num(c.Std), c.Min, c.Max)
}

// untilLines says how each stage with a precision goal ended: "stage
// "probe": ttft_ms.p99 = 41.2 ms, 95 % interval 39.8–43.1 ms (±4.6 %,
// goal ±5 %) from 812 samples: goal reached, the stage ended there".
func (s *Summary) untilLines() []string {
	var out []string
	for _, u := range s.Until {
		name := fmt.Sprintf("stage-%d", u.Stage)
		for _, st := range s.Stages {
			if st.Index == u.Stage {
				name = st.Name
			}
		}
		line := fmt.Sprintf("stage %q: %s = %s ms", name, u.Metric, FormatNumber(u.Estimate))
		switch {
		case u.Achieved > 0:
			line += fmt.Sprintf(", %.0f %% interval %s–%s ms (±%.1f %%, goal ±%.1f %%) from %s", 100*u.Confidence,
				FormatNumber(u.Lo), FormatNumber(u.Hi), 100*u.Achieved, 100*u.Margin, FormatCount(u.Samples, "sample", "samples"))
		default:
			line += fmt.Sprintf(" from %s, too few for a %.0f %% interval (goal ±%.1f %%)", FormatCount(u.Samples, "sample", "samples"), 100*u.Confidence, 100*u.Margin)
		}
		if u.Reached {
			line += ": goal reached, the stage ended there"
		} else {
			line += ": goal not reached when the stage ended"
		}
		out = append(out, line)
	}
	return out
}

// Title names the run for a page or a terminal heading: the scenario's
// name, or, for a run built from flags alone (whose scenario is called
// "flags", which says nothing), its model and load ("tiny · closed loop,
// 8 workers; 100 requests").
func (s *Summary) Title() string {
	if s.Scenario != scenario.FlagsName || s.Workload == nil || len(s.Workload.Stages) != 1 {
		return s.Scenario
	}
	t := s.Workload.Stages[0].String()
	if s.Model != "" {
		t = s.Model + " · " + t
	}
	return t
}
