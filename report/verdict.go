package report

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/servebench/servebench/internal/stats"
	"github.com/servebench/servebench/results"
)

// Verdict is the outcome of judging a run against its budgets: the
// "verdict" of summary.json, junit.xml and verdict.md. Pass is true when
// every check passed.
type Verdict struct {
	Pass   bool `json:"pass"`
	Failed int  `json:"failed"` // checks missed or not measured
	// Inconclusive counts the checks whose 95 % interval straddles the
	// limit (or that had too few samples for one): the run cannot tell
	// whether the budget was met. Pass is false when any is.
	Inconclusive int     `json:"inconclusive,omitempty"`
	Checks       []Check `json:"checks"`
	// Source is the scenario file the budgets came from when it is not
	// the run's own scenario (`bench check --budgets FILE`); empty for the
	// budgets recorded in the results header.
	Source string `json:"source,omitempty"`
	// Warnings are non-fatal doubts about the verdict, such as a
	// percentile measured on too few samples.
	Warnings []string `json:"warnings,omitempty"`
}

// Check is one budget judged: one limit on one figure of one scope.
type Check struct {
	Name   string  `json:"name"`   // scope.metric.stat, like "overall.ttft_ms.p99"
	Scope  string  `json:"scope"`  // "overall" or a stage name
	Metric string  `json:"metric"` // budget key: "ttft_ms", "error_rate", …
	Stat   string  `json:"stat"`   // "p50" … "p99_9", "mean", "max" or "min"
	Op     string  `json:"op"`     // "<=" (the figure must not exceed Limit) or ">="
	Limit  float64 `json:"limit"`  // in Unit
	Unit   string  `json:"unit"`   // "ms", "fraction", "tokens/s", "requests/s" or "count"
	// Measured is the figure, in Unit; nil when it could not be measured
	// (no samples, no scrape), which fails the check.
	Measured *float64 `json:"measured"`
	// Margin is the headroom in Unit: Limit − Measured for "<=", Measured −
	// Limit for ">="; negative when missed, nil when not measured.
	Margin *float64 `json:"margin"`
	// Samples is the number of observations behind Measured (requests,
	// tokens or scrapes).
	Samples    int64 `json:"samples"`
	MinSamples int   `json:"min_samples,omitempty"` // percentile budgets: the count below which the figure is not trusted
	// Interval is the figure's 95 % confidence interval, in Unit, when it
	// has one: latencies (from their distribution), error, drop and
	// goodput shares (Wilson), output tokens per second, joules per token
	// and an hourly price per token (batch means over the scrape windows).
	// Nil for counts, peaks and per-token prices, judged on the value.
	Interval *[2]float64 `json:"interval,omitempty"`
	// Status is "met" (the whole interval, or the value without one, on
	// the right side of the limit), "missed" (on the wrong side),
	// "inconclusive" (the interval straddles the limit, or a percentile
	// had too few samples for an interval) or "not measured".
	Status string `json:"status"`
	Pass   bool   `json:"pass"`           // Status is met
	Note   string `json:"note,omitempty"` // why a check failed without a measure, or a doubt about it
}

// Check statuses.
const (
	StatusMet          = "met"
	StatusMissed       = "missed"
	StatusInconclusive = "inconclusive"
	StatusNotMeasured  = "not measured"
)

// Evaluate judges s, the summary of a, against budgets b; slo defines the
// goodput budget's objectives (it may be nil when no goodput budget is
// set). Percentile, rate and error figures are those of s; goodput and
// token-count mismatches come from the per-request records a holds, and
// preemptions and KV usage from its scrape samples. A figure that could
// not be measured fails its check. Evaluate does not modify s.
func (a *Aggregate) Evaluate(s *Summary, b *results.Budgets, slo *results.SLO) *Verdict {
	v := &Verdict{Checks: []Check{}}
	if b == nil {
		v.Pass = true
		return v
	}
	j := judge{a: a, b: b, slo: slo, v: v}
	if b.Overall != nil {
		j.set("overall", &s.Overall, nil, b.Overall)
	}
	// Stage budgets in the order the stages ran, then any for stages the
	// results lack.
	done := map[string]bool{}
	for i := range s.Stages {
		st := &s.Stages[i]
		if set, ok := b.Stages[st.Name]; ok && !done[st.Name] {
			done[st.Name] = true
			j.set(st.Name, st, []int{st.Index}, set)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(b.Stages)) {
		if done[name] {
			continue
		}
		for _, bud := range b.Stages[name].ListIn(a.metrics) {
			for _, l := range bud.Limits.List() {
				j.add(Check{Scope: name, Metric: bud.Metric, Stat: l.Stat, Limit: l.Value, Op: op(l),
					Unit: j.unitOf(bud.Metric), Note: "the results have no stage of this name"}, nil)
			}
		}
	}
	for _, c := range v.Checks {
		switch c.Status {
		case StatusMet:
		case StatusInconclusive:
			v.Inconclusive++
		default:
			v.Failed++
		}
	}
	v.Pass = v.Failed == 0 && v.Inconclusive == 0
	return v
}

type judge struct {
	a     *Aggregate
	b     *results.Budgets
	slo   *results.SLO
	v     *Verdict
	limit float64 // the limit being judged
}

func op(l results.Limit) string {
	if l.Upper {
		return "<="
	}
	return ">="
}

// unitOf returns the unit of metric in the aggregate's table; "" for a
// metric the table lacks (a newer version's budget, read back).
func (j *judge) unitOf(metric string) string {
	m, _ := j.a.metrics.ByName(metric)
	return m.Unit
}

// measure is a figure's value with its sample count; ok is false when it
// could not be measured, and note says why.
type measure struct {
	value   float64
	samples int64
	ok      bool
	note    string
	// lo and hi bound the figure, each at 97.5 % one-sided (together a
	// 95 % interval), when loOK and hiOK; few says a percentile had too
	// few samples for one of its bounds.
	lo, hi     float64
	loOK, hiOK bool
	few        bool
}

// set judges every limit of one budget set on one scope (stages nil: the
// whole run).
func (j *judge) set(name string, st *Stage, stages []int, set *results.BudgetSet) {
	sc := j.a.log.scopeOf(stages)
	for _, bud := range set.ListIn(j.a.metrics) {
		for _, l := range bud.Limits.List() {
			c := Check{Scope: name, Metric: bud.Metric, Stat: l.Stat, Op: op(l), Limit: l.Value, Unit: j.unitOf(bud.Metric)}
			j.limit = l.Value
			m := j.measure(st, &sc, bud.Metric, l.Stat)
			if _, isQ := results.Quantile(l.Stat); isQ && m.ok {
				c.MinSamples = set.MinSamples // the user's own; 0: the interval decides
			}
			j.add(c, &m)
		}
	}
}

// add completes a check from its measure (nil: not measurable) and records it.
func (j *judge) add(c Check, m *measure) {
	c.Name = c.Scope + "." + c.Metric + "." + c.Stat
	c.Status = StatusNotMeasured
	if m == nil || !m.ok {
		if m != nil {
			c.Samples, c.Note = m.samples, m.note
		}
		j.v.Checks = append(j.v.Checks, c)
		return
	}
	val := round(m.value, 6)
	margin := round(c.Limit-val, 6)
	if c.Op == ">=" {
		margin = round(val-c.Limit, 6)
	}
	c.Measured, c.Margin, c.Samples = &val, &margin, m.samples
	c.Note = m.note // how it was measured, when that needs saying
	c.Status = status(c.Op, c.Limit, val, m)
	if m.loOK && m.hiOK {
		c.Interval = &[2]float64{round(m.lo, 6), round(m.hi, 6)}
	}
	switch {
	case c.MinSamples > 0 && c.Samples < int64(c.MinSamples):
		j.doubt(&c, fmt.Sprintf("%s %s %s from %s, fewer than %d: the percentile is uncertain",
			c.Scope, c.Metric, c.Stat, FormatCount(c.Samples, "sample", "samples"), c.MinSamples))
	case m.few && c.MinSamples > 0 && c.Status == StatusInconclusive:
		c.Status = status(c.Op, c.Limit, val, &measure{})
		c.Note = fmt.Sprintf("judged on the value: too few samples for a 95 %% interval, at least min_samples %d", c.MinSamples)
	case m.few && c.Status == StatusInconclusive:
		j.doubt(&c, fmt.Sprintf("%s %s %s from %s: too few for a 95 %% interval on the side that decides, so whether it meets the budget is unknown",
			c.Scope, c.Metric, c.Stat, FormatCount(c.Samples, "sample", "samples")))
	case c.Status == StatusInconclusive:
		c.Note = fmt.Sprintf("the 95 %% interval %s–%s straddles the limit", formatNumber(m.lo, c.Unit), formatNumber(m.hi, c.Unit))
	}
	c.Pass = c.Status == StatusMet
	j.v.Checks = append(j.v.Checks, c)
}

// status judges a measured figure against its limit: met when its bound
// on the limit's side stays within it, missed when its bound on the other
// side is beyond it, else inconclusive. A figure without bounds (counts,
// peaks, a share against a limit of 0) is judged on its value.
func status(op string, limit, val float64, m *measure) string {
	bounded := m.loOK || m.hiOK || m.few
	lo, hi, loOK, hiOK := m.lo, m.hi, m.loOK, m.hiOK
	if !bounded {
		lo, hi, loOK, hiOK = val, val, true, true
	}
	if op == ">=" {
		lo, hi, loOK, hiOK, limit = -hi, -lo, hiOK, loOK, -limit
	}
	switch {
	case hiOK && hi <= limit:
		return StatusMet
	case loOK && lo > limit:
		return StatusMissed
	}
	return StatusInconclusive
}

// doubt marks a check whose figure has too few samples to be trusted,
// whichever side of the limit its value fell: inconclusive (a warning),
// or missed under budgets.strict.
func (j *judge) doubt(c *Check, why string) {
	if j.b.Strict {
		c.Status, c.Note = StatusMissed, "too few samples (budgets.strict): "+why
		return
	}
	c.Status = StatusInconclusive
	c.Note = "too few samples"
	j.v.Warnings = append(j.v.Warnings, why)
}

// measure reads one figure of a scope: latencies from the stage summary's
// distributions, rates and ratios from its counts, the rest from the
// per-request log and the scrapes.
func (j *judge) measure(st *Stage, sc *scope, metric, stat string) measure {
	if d := st.Dist(metric); d != nil {
		return j.distStat(st, metric, *d, stat)
	}
	switch metric {
	case "error_rate", "drop_rate", "output_tokens_per_s", "requests_per_s", "total_tokens_per_s", "inputs_per_s":
		v, n, ok := st.Figure(metric)
		if !ok {
			if metric == "drop_rate" {
				return measure{note: "no request was scheduled"}
			}
			return measure{note: "no request finished"}
		}
		m := measure{value: v, samples: n, ok: true}
		switch metric {
		case "error_rate", "drop_rate":
			// A limit of 0 asks for none observed: no interval can
			// prove a rate is 0, so the count decides.
			if lim := j.limit; lim > 0 && lim < 1 {
				m.lo, m.hi = stats.Wilson(v, n, ciLevel)
				m.loOK, m.hiOK = true, true
			}
		case "output_tokens_per_s":
			m.lo, m.hi, m.loOK = j.a.RateInterval(st, ciLevel)
			m.hiOK = m.loOK
		}
		return m
	case "goodput":
		if !j.slo.Set() {
			return measure{note: "no slo objectives to judge requests by"}
		}
		share, _, ok := sc.goodput(j.slo.TTFTMs, j.slo.TPOTMs, j.slo.E2EMs)
		if !ok {
			return measure{note: "no request finished"}
		}
		m := measure{value: share, samples: sc.finished, ok: true, note: sc.sampled()}
		if lim := j.limit; lim > 0 && lim < 1 {
			// From a sample, the interval rests on the requests kept.
			n := min(sc.finished, int64(len(sc.sent))+sc.finished-sc.ok)
			m.lo, m.hi = stats.Wilson(share, n, ciLevel)
			m.loOK, m.hiOK = true, true
		}
		return m
	case "joules_per_token", "usd_per_mtok":
		return measureEfficiency(st, metric)
	case "token_count_mismatch":
		if sc.checked == 0 {
			return measure{note: "no completed request could be checked (needs ignore_eos, max_tokens and the server's usage)"}
		}
		return measure{value: float64(sc.mismatch), samples: sc.checked, ok: true}
	case "preemptions", "kv_usage":
		if !sc.haveRange {
			return measure{note: "no request was sent"}
		}
		pre, preOK, kv, kvOK := j.a.log.server(sc.from, sc.to)
		n := int64(len(j.a.log.points))
		if metric == "preemptions" {
			if !preOK {
				note := j.a.log.unexported("a preemption counter", func(p serverPoint) bool { return p.hasPreempt })
				if note == "" {
					note = "the server's preemption counter was not scraped before and after the load"
				}
				return measure{samples: n, note: note}
			}
			return measure{value: pre, samples: n, ok: true}
		}
		if !kvOK {
			note := j.a.log.unexported("a KV-cache usage gauge", func(p serverPoint) bool { return p.hasKV })
			if note == "" {
				note = "no KV-usage scrape during the load (is the scrape interval shorter than the stage?)"
			}
			return measure{samples: n, note: note}
		}
		return measure{value: kv, samples: n, ok: true}
	}
	return measure{note: "unknown figure " + metric}
}

// distStat reads a statistic of a latency distribution with its bounds:
// a percentile's one-sided distribution-free bounds from the scope's
// histogram (either may exist without the other), the mean's from its
// Student-t interval; the max has none.
func (j *judge) distStat(st *Stage, metric string, d Dist, stat string) measure {
	if d.Count == 0 {
		return measure{note: "no samples"}
	}
	v, ok := d.Stat(stat)
	if !ok {
		return measure{note: "unknown statistic " + stat}
	}
	m := measure{value: v, samples: d.Count, ok: true}
	q, isQ := results.Quantile(stat)
	h := j.a.Histogram(st.Index, metric)
	switch {
	case stat == "mean":
		m.lo, m.hi, m.loOK = d.Interval(stat)
		m.hiOK = m.loOK
	case isQ && h != nil && h.TotalCount() > 0:
		m.lo, m.hi, m.loOK, m.hiOK = quantileBounds(h, q, ciLevel)
		m.few = !m.loOK || !m.hiOK
	}
	return m
}

// Summary line of a verdict: "PASS (12 budgets met)", "FAIL (2 of 12
// budgets missed)" or "INCONCLUSIVE (1 of 12 budgets cannot be told)".
func (v *Verdict) String() string {
	switch {
	case v.Pass:
		return fmt.Sprintf("PASS (%s met)", FormatCount(len(v.Checks), "budget", "budgets"))
	case v.Failed > 0 && v.Inconclusive > 0:
		return fmt.Sprintf("FAIL (%d of %s missed, %d inconclusive)", v.Failed, FormatCount(len(v.Checks), "budget", "budgets"), v.Inconclusive)
	case v.Failed > 0:
		return fmt.Sprintf("FAIL (%d of %s missed)", v.Failed, FormatCount(len(v.Checks), "budget", "budgets"))
	}
	return fmt.Sprintf("INCONCLUSIVE (%d of %s cannot be told met or missed at 95 %%; the rest met)", v.Inconclusive, FormatCount(len(v.Checks), "budget", "budgets"))
}

// WriteVerdictText writes the verdict for the terminal: one line per
// check, failures marked, then the warnings.
func WriteVerdictText(w io.Writer, v *Verdict) error {
	var b strings.Builder
	fmt.Fprintf(&b, "budgets: %s\n", v)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, c := range v.Checks {
		mark := "ok"
		switch {
		case c.Status == StatusInconclusive:
			mark = "??"
		case !c.Pass:
			mark = "FAIL"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s %s\t%s\t%s %s\t%s\n", mark, c.Scope, c.Metric, c.Stat,
			formatValue(c.Measured, c.Unit), opSymbol(c.Op), formatNumber(c.Limit, c.Unit), marginText(&c))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, warn := range v.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", warn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Describe returns the check's measured value, its limit with the
// operator, and its margin (or why it was not measured), formatted as the
// verdict table prints them.
func (c *Check) Describe() (measured, limit, margin string) {
	return formatValue(c.Measured, c.Unit), opSymbol(c.Op) + " " + formatNumber(c.Limit, c.Unit), marginText(c)
}

func opSymbol(op string) string {
	if op == ">=" {
		return "≥"
	}
	return "≤"
}

// formatValue formats a measured value with its unit, or "—" when absent.
func formatValue(x *float64, unit string) string {
	if x == nil {
		return "—"
	}
	return formatNumber(*x, unit)
}

// formatNumber formats x in unit: fractions as percentages, counts as
// integers, the rest with three significant decimals at most.
func formatNumber(x float64, unit string) string {
	switch unit {
	case "fraction":
		return trimFloat(x*100, 2) + " %"
	case "count":
		return trimFloat(x, 0)
	case "ms":
		return trimFloat(x, 3) + " ms"
	case "J/token", "$/1M tokens":
		return sig(x) + " " + unit // costs are small numbers: four significant digits
	}
	v := trimFloat(x, 1)
	if v == "1" {
		// "1 request/s", not "1 requests/s".
		unit = strings.Replace(unit, "s/", "/", 1)
	}
	return v + " " + unit
}

func trimFloat(x float64, digits int) string {
	s := fmt.Sprintf("%.*f", digits, x)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// marginText says how far a measure is from its limit, or why there is no
// measure.
func marginText(c *Check) string {
	if c.Margin == nil {
		return "not measured: " + c.Note
	}
	m := *c.Margin
	rel := ""
	if c.Limit != 0 && !math.IsInf(m/c.Limit, 0) {
		rel = fmt.Sprintf(" (%s %%)", trimFloat(math.Abs(m/c.Limit)*100, 1))
	}
	// A fraction's margin is a difference of percentages: percentage points.
	amount := func(x float64) string {
		if c.Unit == "fraction" {
			return trimFloat(x*100, 2) + " pp"
		}
		return formatNumber(x, c.Unit)
	}
	text := "margin " + amount(m) + rel
	if m < 0 {
		word := "over by "
		if c.Op == ">=" {
			word = "short by "
		}
		text = word + amount(-m) + rel
	}
	if c.Note != "" {
		text += "; " + c.Note
	}
	return text
}
