package report

import (
	"fmt"
	"io"
	"strings"
)

// WriteVerdictMarkdown writes the verdict of s as a Markdown snippet for a
// pull-request comment: a headline, a table of the checks with failures
// first, and the warnings. It fails when s has no verdict.
func WriteVerdictMarkdown(w io.Writer, s *Summary) error {
	v := s.Verdict
	if v == nil {
		return fmt.Errorf("write verdict markdown: the summary has no verdict")
	}
	var b strings.Builder
	icon := "✅"
	switch {
	case v.Failed > 0:
		icon = "❌"
	case !v.Pass:
		icon = "❔"
	}
	fmt.Fprintf(&b, "### %s servebench budgets: %s\n\n", icon, v)
	what := "Scenario `" + mdEscape(s.Scenario) + "`"
	if t := s.Title(); t != s.Scenario {
		what = "Run `" + mdEscape(t) + "` (flags, no scenario file)"
	}
	fmt.Fprintf(&b, "%s · model `%s` · %s in %s s", what, mdEscape(s.Model),
		FormatCount(s.Overall.Requests.OK, "ok request", "ok requests"), trimFloat(s.Overall.Duration, 1))
	if s.Version != "" {
		fmt.Fprintf(&b, " · servebench %s", mdEscape(s.Version))
	}
	b.WriteString("\n\n| | scope | budget | measured | limit | margin |\n|---|---|---|---:|---:|---|\n")
	// Failures first: they are what the reader of a pull request needs.
	for _, pass := range []bool{false, true} {
		for i := range v.Checks {
			c := &v.Checks[i]
			if c.Pass != pass {
				continue
			}
			mark := "✅"
			switch {
			case c.Status == StatusInconclusive:
				mark = "❔"
			case !c.Pass:
				mark = "❌"
			}
			fmt.Fprintf(&b, "| %s | %s | `%s %s` | %s | %s %s | %s |\n", mark, mdEscape(c.Scope), c.Metric, c.Stat,
				formatValue(c.Measured, c.Unit), opSymbol(c.Op), formatNumber(c.Limit, c.Unit), mdEscape(marginText(c)))
		}
	}
	for _, warn := range v.Warnings {
		fmt.Fprintf(&b, "\n> ⚠️ %s\n", mdEscape(warn))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdEscape keeps text from breaking a table row or starting markup.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "`", "'", "<", "&lt;").Replace(s)
}
