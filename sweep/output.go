package sweep

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/stats"
	"github.com/servebench/servebench/internal/textable"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// Schema is the version of the sweep.json contract. It changes only when a
// field changes meaning or is removed; new fields may appear.
const Schema = 1

// Run statuses.
const (
	StatusOK      = "ok"      // the run completed and at least one request succeeded
	StatusFailed  = "failed"  // the server did not start, the run failed, or no request succeeded
	StatusResumed = "resumed" // --resume: the directory already held a summary, which was read
	StatusSkipped = "skipped" // the sweep was interrupted before this run
	// StatusOverSaturated is a search probe stopped early because the
	// server was plainly over-saturated: its budgets count as missed.
	StatusOverSaturated = "over-saturated"
)

// Summary is the content of sweep.json: every run, every combination's
// figures (mean over its completed repeats) and the recommendation.
type Summary struct {
	Schema         int            `json:"schema"`
	Tool           string         `json:"tool"`
	Scenario       string         `json:"scenario"`
	Parameters     []string       `json:"parameters"` // in name order
	Repeats        int            `json:"repeats"`
	Started        time.Time      `json:"started"`
	Finished       time.Time      `json:"finished,omitzero"`
	Points         []Point        `json:"points"`
	Runs           []RunRecord    `json:"runs"`
	Recommendation Recommendation `json:"recommendation"`
	// Search holds the SLA searches, one per combination of the
	// parameters (one without parameters), when the sweep has a search
	// block; Parameters then ends with the searched parameter, Points
	// has one point per probed value, and the recommendation is the
	// combination with the highest capacity (basis "capacity").
	Search []SearchResult `json:"search,omitempty"`
	// Budgets are the scenario's budgets, which every run was judged by.
	Budgets *results.Budgets `json:"budgets,omitempty"`
	// RankBy is what the recommendation maximised (scenario.Sweep.RankBy;
	// empty: throughput), ParetoX the Pareto plot's x axis (empty: total
	// output tokens/s).
	RankBy  string `json:"rank_by,omitempty"`
	ParetoX string `json:"pareto_x,omitempty"`
	// Warnings say what the values' figures do not compare on: their
	// speculative decoding drafted different lengths, so the acceptance
	// rate does not compare across them.
	Warnings []string `json:"warnings,omitempty"`
}

// Point is one combination of values, over its repeats.
type Point struct {
	Label  string            `json:"label"`
	Values map[string]string `json:"values"`
	Runs   int               `json:"runs"`   // runs that produced figures (ok or resumed)
	Failed int               `json:"failed"` // runs that failed
	// Metrics are the means over the runs that produced figures; nil when
	// none did.
	Metrics *Metrics `json:"metrics,omitempty"`
	// BudgetsMet is whether every run met the scenario's budgets; nil when
	// the scenario has none (or no run produced figures).
	BudgetsMet *bool `json:"budgets_met,omitempty"`
	// Missed names the budget checks that failed in any run
	// ("overall.ttft_ms.p99").
	Missed []string `json:"missed,omitempty"`
	// Verdict is the budgets' verdict over the runs, in the words of
	// report.Check's statuses: "met" (every run met every budget),
	// "missed" (some run missed one: Missed names them) or
	// "inconclusive" (none missed, but in some run a budget's 95 %
	// interval straddled its limit or its percentile had too few samples
	// for one: Inconclusive names them); empty without budgets. For a
	// search's probe, the majority's: "inconclusive" when no run decided.
	Verdict string `json:"verdict,omitempty"`
	// Inconclusive names the budget checks that no run missed but some
	// run could not decide.
	Inconclusive []string `json:"inconclusive,omitempty"`
	// undecided are the first run's check of each name in Inconclusive:
	// the evidence the recommendation cites.
	undecided []CheckMargin
}

// RunRecord is one run of the sweep.
type RunRecord struct {
	Label  string            `json:"label"`
	Values map[string]string `json:"values"`
	Repeat int               `json:"repeat"`
	Dir    string            `json:"dir"` // relative to the sweep's directory
	Status string            `json:"status"`
	Error  string            `json:"error,omitempty"`
	Target string            `json:"target,omitempty"`

	Command   []string `json:"command,omitempty"`    // the launched server's argv
	ServerLog string   `json:"server_log,omitempty"` // relative to the sweep's directory
	Server    string   `json:"server_end,omitempty"` // how the server ended: "signal: terminated", "exit status 1", …

	Started   time.Time `json:"started,omitzero"`
	DurationS float64   `json:"duration_s,omitempty"` // launch to stop, seconds

	Metrics *Metrics `json:"metrics,omitempty"`
	// BudgetsPass is the run's budget verdict; nil without budgets.
	BudgetsPass *bool `json:"budgets_pass,omitempty"`
	// Inconclusive is true when no budget was missed but some could not
	// be told met (their 95 % intervals straddle the limits): neither a
	// pass nor a miss.
	Inconclusive bool     `json:"budgets_inconclusive,omitempty"`
	Missed       []string `json:"missed,omitempty"`
	// Checks are the run's budget checks with their relative margins and
	// sample counts: how near the boundary the run was.
	Checks []CheckMargin `json:"checks,omitempty"`
}

// Metrics are the figures of one run (the overall row of its summary), or
// their means over a combination's runs. Latencies are in milliseconds.
type Metrics struct {
	OK      float64 `json:"ok"` // requests; a mean over repeats may be fractional
	Failed  float64 `json:"failed"`
	Dropped float64 `json:"dropped"`

	TTFTP50 float64 `json:"ttft_p50_ms"`
	TTFTP99 float64 `json:"ttft_p99_ms"`
	ITLP50  float64 `json:"itl_p50_ms"`
	ITLP99  float64 `json:"itl_p99_ms"`
	TPOTP50 float64 `json:"tpot_p50_ms"`
	E2EP50  float64 `json:"e2e_p50_ms"`
	E2EP99  float64 `json:"e2e_p99_ms"`

	OutputTokensPerSec float64 `json:"output_tokens_per_s"`
	RequestsPerSec     float64 `json:"requests_per_s"`

	// Budgeted are the overall TTFT and ITL statistics the budgets judge
	// beyond the p50 and p99 above, by metric and stat ("ttft_ms.p90"),
	// so the trade-off plot draws the figure each budget is on.
	Budgeted map[string]float64 `json:"budgeted,omitempty"`

	// CI holds the 95 % intervals of the figures above, [lo, hi] in their
	// units, by JSON name ("ttft_p99_ms", "output_tokens_per_s") and, for
	// the budgeted statistics, by their key ("ttft_ms.p90"). CIFrom says
	// how they were formed. A figure absent has no interval: too few
	// samples (a p99 needs about 300 requests or tokens, the throughput
	// five full windows of the run's timeline), in any run of a point.
	CI map[string][2]float64 `json:"ci_95,omitempty"`
	// CIFrom is "run": the run's own intervals from its summary.json
	// (order statistics for the percentiles, batch means for the
	// throughput); or "repeats", for a point's mean over two or more runs:
	// the hull of the runs' own intervals averaged bound by bound and of a
	// Student-t interval over the runs' values (n − 1 degrees of freedom).
	// A sweep's repeats share their seed, so their spread shows the
	// server's and the machine's noise but not the sampling noise of the
	// workload, which the runs' own intervals show: the hull covers both
	// (and stays conservative for a search's repeats, which on the
	// simulator take the next seed).
	CIFrom string `json:"ci_from,omitempty"`

	// Latencies are the p50 and p99 of the latency metrics the summary
	// holds in Stage.Latencies (metrics of the table without a field of
	// their own), by metric and stat ("NAME_ms.p99"): a metric added to
	// the table is in sweep.json and sweep.csv without a line here.
	Latencies map[string]float64 `json:"latencies,omitempty"`

	// Efficiency (report.Efficiency), 0 when not measured or priced:
	// joules per output token, output tokens per joule, the GPUs the
	// telemetry saw, dollars per 1M output tokens, and the good output
	// tokens (meeting the slo) per joule and per dollar.
	JoulesPerToken     float64 `json:"joules_per_token,omitempty"`
	TokensPerJoule     float64 `json:"output_tokens_per_j,omitempty"`
	GPUs               float64 `json:"gpus,omitempty"`
	USDPerMTok         float64 `json:"usd_per_mtok,omitempty"`
	GoodTokensPerJoule float64 `json:"good_output_tokens_per_j,omitempty"`
	GoodTokensPerUSD   float64 `json:"good_output_tokens_per_usd,omitempty"`
	// Speculative decoding (results.SpecDecode), 0 when the server did
	// not speculate: the acceptance rate (accepted ÷ proposed tokens),
	// the mean acceptance length (tokens per step, the bonus included)
	// and the mean draft length.
	SpecAcceptanceRate float64 `json:"spec_acceptance_rate,omitempty"`
	SpecAcceptLength   float64 `json:"spec_acceptance_length,omitempty"`
	SpecDraftLength    float64 `json:"spec_draft_length,omitempty"`
}

// efficiencyFields are the Metrics fields of the efficiency figures (and
// speculative decoding's), which
// are means over the runs that have them (a run without telemetry does
// not pull the mean to 0) and keep six decimals.
func efficiencyFields(m *Metrics) []*float64 {
	return []*float64{&m.JoulesPerToken, &m.TokensPerJoule, &m.GPUs, &m.USDPerMTok, &m.GoodTokensPerJoule, &m.GoodTokensPerUSD,
		&m.SpecAcceptanceRate, &m.SpecAcceptLength, &m.SpecDraftLength}
}

// plottedMetrics are the budget metrics whose statistics the trade-off
// plot draws, one panel each.
var plottedMetrics = []string{"ttft_ms", "itl_ms"}

// Recommendation is the value to use: among the combinations whose every
// run completed (and met the budgets, when the scenario has budgets; had no
// failed request, when it has none), the one with the highest output-token
// throughput, or the most good output tokens per joule or per dollar
// (sweep.rank_by). Throughputs within 1 % count as equal (an open-loop load
// below capacity gives every value the offered rate), and the lowest E2E
// p50 breaks the tie.
type Recommendation struct {
	Label  string            `json:"label,omitempty"` // empty when no combination qualifies
	Values map[string]string `json:"values,omitempty"`
	// Basis is "budgets" (the budgets were the filter) or "throughput"
	// (no budgets: the filter is completed runs without failed requests),
	// followed by ", good tokens per joule" or ", good tokens per dollar"
	// when those were ranked by.
	Basis  string `json:"basis"`
	Reason string `json:"reason"` // one sentence, for people
}

// metricsOf reads a run's figures from its summary: the overall row, and
// the TTFT and ITL statistics its overall budgets judge.
func metricsOf(s *report.Summary) *Metrics {
	o := &s.Overall
	return (&Metrics{
		OK: float64(o.Requests.OK), Failed: float64(o.Requests.Failed), Dropped: float64(o.Requests.Dropped),
		TTFTP50: o.TTFT.P50, TTFTP99: o.TTFT.P99, ITLP50: o.ITL.P50, ITLP99: o.ITL.P99,
		TPOTP50: o.TPOT.P50, E2EP50: o.E2E.P50, E2EP99: o.E2E.P99,
		OutputTokensPerSec: o.OutputTokensPerSec, RequestsPerSec: o.RequestsPerSec,
	}).withEfficiency(o.Efficiency).withBudgeted(s).withLatencies(o).withCI(&s.Overall)
}

// ciFigures are the figures of Metrics that carry an interval: their JSON
// name and the summary's distribution and statistic they come from (none
// for the throughput).
var ciFigures = []struct{ name, metric, stat string }{
	{"ttft_p50_ms", "ttft_ms", "p50"}, {"ttft_p99_ms", "ttft_ms", "p99"},
	{"itl_p50_ms", "itl_ms", "p50"}, {"itl_p99_ms", "itl_ms", "p99"},
	{"tpot_p50_ms", "tpot_ms", "p50"}, {"e2e_p50_ms", "e2e_ms", "p50"}, {"e2e_p99_ms", "e2e_ms", "p99"},
	{"output_tokens_per_s", "", ""},
}

// Figure returns the figure named key: a ciFigures name or a Budgeted key
// ("ttft_ms.p90"); ok is false for another.
func (m *Metrics) Figure(key string) (v float64, ok bool) {
	switch key {
	case "ttft_p50_ms":
		return m.TTFTP50, true
	case "ttft_p99_ms":
		return m.TTFTP99, true
	case "itl_p50_ms":
		return m.ITLP50, true
	case "itl_p99_ms":
		return m.ITLP99, true
	case "tpot_p50_ms":
		return m.TPOTP50, true
	case "e2e_p50_ms":
		return m.E2EP50, true
	case "e2e_p99_ms":
		return m.E2EP99, true
	case "output_tokens_per_s":
		return m.OutputTokensPerSec, true
	}
	v, ok = m.Budgeted[key]
	return v, ok
}

// Interval returns the 95 % interval of the figure named key (see
// Figure); ok is false when it has none.
func (m *Metrics) Interval(key string) (lo, hi float64, ok bool) {
	iv, ok := m.CI[key]
	return iv[0], iv[1], ok
}

// withCI takes the intervals of the figures from the run's overall row:
// those it has, around the figure.
func (m *Metrics) withCI(o *report.Stage) *Metrics {
	add := func(key, metric, stat string) {
		lo, hi, ok := 0.0, 0.0, false
		switch d := o.Dist(metric); {
		case metric == "" && o.OutputTokensPerSecCI != nil:
			lo, hi, ok = o.OutputTokensPerSecCI[0], o.OutputTokensPerSecCI[1], true
		case d != nil:
			lo, hi, ok = d.Interval(stat)
		}
		if v, have := m.Figure(key); !ok || !have || lo > v || v > hi {
			return
		}
		if m.CI == nil {
			m.CI = map[string][2]float64{}
		}
		m.CI[key] = [2]float64{lo, hi}
	}
	for _, f := range ciFigures {
		add(f.name, f.metric, f.stat)
	}
	for key := range m.Budgeted {
		metric, stat, _ := strings.Cut(key, ".")
		add(key, metric, stat)
	}
	if m.CI != nil {
		m.CIFrom = "run"
	}
	return m
}

// withLatencies adds the p50 and p99 of the latency metrics of the
// stage's Latencies that had samples.
func (m *Metrics) withLatencies(o *report.Stage) *Metrics {
	for name, d := range o.Latencies {
		if d == nil || d.Count == 0 {
			continue
		}
		if m.Latencies == nil {
			m.Latencies = map[string]float64{}
		}
		m.Latencies[name+".p50"], m.Latencies[name+".p99"] = d.P50, d.P99
	}
	return m
}

// withBudgeted adds the TTFT and ITL statistics the run's overall budgets
// judge beyond the p50 and p99.
func (m *Metrics) withBudgeted(s *report.Summary) *Metrics {
	if s.Verdict == nil {
		return m
	}
	for _, c := range s.Verdict.Checks {
		if c.Scope != "overall" || !slices.Contains(plottedMetrics, c.Metric) || c.Stat == "p50" || c.Stat == "p99" {
			continue
		}
		if v, ok := s.Overall.Dist(c.Metric).Stat(c.Stat); ok {
			if m.Budgeted == nil {
				m.Budgeted = map[string]float64{}
			}
			m.Budgeted[c.Metric+"."+c.Stat] = v
		}
	}
	return m
}

// withEfficiency adds a run's efficiency figures.
func (m *Metrics) withEfficiency(e *report.Efficiency) *Metrics {
	if e == nil {
		return m
	}
	if en := e.Energy; en != nil {
		m.JoulesPerToken, m.TokensPerJoule, m.GPUs = e.JoulesPerToken, e.TokensPerJoule, float64(en.GPUs)
	}
	if c := e.Cost; c != nil {
		m.USDPerMTok = c.USDPerMTok
	}
	m.GoodTokensPerJoule, m.GoodTokensPerUSD = e.GoodTokensPerJoule, e.GoodTokensPerUSD
	if sd := e.SpecDecode; sd != nil {
		m.SpecAcceptanceRate, m.SpecAcceptLength, m.SpecDraftLength = sd.AcceptanceRate, sd.AcceptLength, sd.DraftLength
	}
	return m
}

// meanMetrics averages figures field by field.
func meanMetrics(ms []*Metrics) *Metrics {
	if len(ms) == 0 {
		return nil
	}
	var out Metrics
	fields := func(m *Metrics) []*float64 {
		return []*float64{&m.OK, &m.Failed, &m.Dropped, &m.TTFTP50, &m.TTFTP99, &m.ITLP50, &m.ITLP99,
			&m.TPOTP50, &m.E2EP50, &m.E2EP99, &m.OutputTokensPerSec, &m.RequestsPerSec}
	}
	dst := fields(&out)
	for _, m := range ms {
		for i, f := range fields(m) {
			*dst[i] += *f / float64(len(ms))
		}
	}
	for _, f := range dst {
		*f = math.Round(*f*1000) / 1000
	}
	eff := efficiencyFields(&out)
	for i := range eff {
		n := 0
		for _, m := range ms {
			if x := *efficiencyFields(m)[i]; x != 0 {
				*eff[i] += x
				n++
			}
		}
		if n > 0 {
			*eff[i] = math.Round(*eff[i]/float64(n)*1e6) / 1e6
		}
	}
	out.Budgeted = meanMap(ms, func(m *Metrics) map[string]float64 { return m.Budgeted })
	out.Latencies = meanMap(ms, func(m *Metrics) map[string]float64 { return m.Latencies })
	out.CI, out.CIFrom = meanCI(ms, &out)
	return &out
}

// meanCI is the intervals of mean, the figures averaged over ms (see
// Metrics.CIFrom): a single run's own, or over repeats the hull of the
// runs' own intervals averaged bound by bound and of a Student-t interval
// over their values. A figure gets one only when every run has its own
// interval (enough samples in each). The bounds are rounded outward to the
// mean's three decimals, so the rounded figure stays inside.
func meanCI(ms []*Metrics, mean *Metrics) (map[string][2]float64, string) {
	from := "run"
	if len(ms) > 1 {
		from = "repeats"
	}
	var out map[string][2]float64
	for key := range ms[0].CI {
		v, ok := mean.Figure(key)
		if !ok {
			continue
		}
		var lo, hi float64
		xs := make([]float64, 0, len(ms))
		for _, m := range ms {
			l, h, have := m.Interval(key)
			x, _ := m.Figure(key)
			if !have {
				xs = nil
				break
			}
			lo, hi, xs = lo+l/float64(len(ms)), hi+h/float64(len(ms)), append(xs, x)
		}
		if xs == nil {
			continue
		}
		if t := stats.Mean(xs, 0.95); len(ms) > 1 && t.OK {
			lo, hi = min(lo, t.Lo), max(hi, t.Hi)
		}
		lo, hi = math.Floor(lo*1000)/1000, math.Ceil(hi*1000)/1000
		if lo > v || v > hi {
			continue // never an interval that does not hold its figure
		}
		if out == nil {
			out = map[string][2]float64{}
		}
		out[key] = [2]float64{lo, hi}
	}
	if out == nil {
		return nil, ""
	}
	return out, from
}

// meanMap averages the figures of a map of Metrics (of) that every run
// has.
func meanMap(ms []*Metrics, of func(*Metrics) map[string]float64) map[string]float64 {
	var out map[string]float64
	for k := range of(ms[0]) {
		sum, n := 0.0, 0
		for _, m := range ms {
			if v, ok := of(m)[k]; ok {
				sum, n = sum+v, n+1
			}
		}
		if n == len(ms) {
			if out == nil {
				out = map[string]float64{}
			}
			out[k] = math.Round(sum/float64(n)*1000) / 1000
		}
	}
	return out
}

// verdictOf reads a run's budget verdict: nil without budgets (no
// verdict, or one without checks), else whether it passed and the checks
// it missed.
func verdictOf(v *report.Verdict) (pass *bool, inconclusive bool, missed []string) {
	if v == nil || len(v.Checks) == 0 {
		return nil, false, nil
	}
	p := v.Pass
	for _, c := range v.Checks {
		if !c.Pass && c.Status != report.StatusInconclusive {
			missed = append(missed, c.Name)
		}
	}
	return &p, v.Failed == 0 && v.Inconclusive > 0, missed
}

// summarise fills the points and the recommendation from the runs.
func (s *Summary) summarise(plan *Plan) {
	if plan.Search != nil {
		s.Points = s.searchPoints()
		s.Recommendation = searchRecommendation(s.Search)
		return
	}
	s.Points = s.Points[:0]
	byLabel := map[string][]*RunRecord{}
	for i := range s.Runs {
		r := &s.Runs[i]
		byLabel[r.Label] = append(byLabel[r.Label], r)
	}
	for _, vals := range plan.Points {
		pt := Point{Label: label(vals), Values: valueMap(vals)}
		var ms []*Metrics
		for _, r := range byLabel[pt.Label] {
			switch {
			case r.Status == StatusFailed:
				pt.Failed++
			case r.Metrics != nil:
				pt.Runs++
				ms = append(ms, r.Metrics)
			}
			if r.BudgetsPass != nil {
				met := (pt.BudgetsMet == nil || *pt.BudgetsMet) && *r.BudgetsPass
				pt.BudgetsMet = &met
				for _, m := range r.Missed {
					if !slices.Contains(pt.Missed, m) {
						pt.Missed = append(pt.Missed, m)
					}
				}
				for _, c := range r.Checks {
					if c.Status == report.StatusInconclusive && !slices.Contains(pt.Inconclusive, c.Name) {
						pt.Inconclusive = append(pt.Inconclusive, c.Name)
						pt.undecided = append(pt.undecided, c)
					}
				}
			}
		}
		pt.judge()
		pt.Metrics = meanMetrics(ms)
		s.Points = append(s.Points, pt)
	}
	s.Recommendation = recommend(s.Points, s.RankBy)
	s.Warnings = nil
	if w := specDraftWarning(s.Points); w != "" {
		s.Warnings = append(s.Warnings, w)
	}
}

// specDraftWarning warns when the values' speculative decoding drafted
// different lengths: the acceptance rate (accepted ÷ proposed) falls
// arithmetically as drafts grow, whatever the drafter's quality, so the
// values compare by their mean acceptance length (tokens per step). ""
// when the values that speculated drafted alike (within 0.05 tokens) or
// fewer than two did. (compare.SpecDraftWarning says the same of two
// runs.)
func specDraftWarning(points []Point) string {
	var spec []Point
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range points {
		if m := p.Metrics; m != nil && m.SpecDraftLength > 0 {
			spec = append(spec, p)
			lo, hi = math.Min(lo, m.SpecDraftLength), math.Max(hi, m.SpecDraftLength)
		}
	}
	if len(spec) < 2 || hi-lo < 0.05 {
		return ""
	}
	var each []string
	for _, p := range spec {
		m := p.Metrics
		each = append(each, fmt.Sprintf("%s: draft length %.2g, acceptance rate %.1f %%, acceptance length %.3g", p.Label, m.SpecDraftLength, 100*m.SpecAcceptanceRate, m.SpecAcceptLength))
	}
	return fmt.Sprintf("speculative decoding drafted from %.2g to %.2g tokens across the values (%s): the acceptance rate falls as drafts grow whatever the drafter, so compare the values by the mean acceptance length (tokens per step), not the rate",
		lo, hi, strings.Join(each, "; "))
}

// judge sets the point's verdict from its runs' (see Point.Verdict).
func (pt *Point) judge() {
	pt.Inconclusive = slices.DeleteFunc(pt.Inconclusive, func(name string) bool { return slices.Contains(pt.Missed, name) })
	switch {
	case pt.BudgetsMet == nil:
	case *pt.BudgetsMet:
		pt.Verdict = report.StatusMet
	case len(pt.Missed) == 0 && len(pt.Inconclusive) > 0:
		pt.Verdict = report.StatusInconclusive
	default:
		pt.Verdict = report.StatusMissed
	}
	if len(pt.Inconclusive) == 0 {
		pt.Inconclusive = nil
	}
}

// rankOf is the figure a sweep ranks by, its name in sentences, and why
// a point without it is left out.
func rankOf(rankBy string) (figure func(*Metrics) float64, name string, missing func(*Metrics) string) {
	none := func(have float64, why string) func(*Metrics) string {
		return func(m *Metrics) string {
			if have == 0 {
				return why
			}
			return "no request met the slo"
		}
	}
	switch rankBy {
	case scenario.RankGoodputPerJoule:
		return func(m *Metrics) float64 { return m.GoodTokensPerJoule }, "good output tokens per joule",
			func(m *Metrics) string { return none(m.JoulesPerToken, "no energy measured")(m) }
	case scenario.RankGoodputPerDollar:
		return func(m *Metrics) float64 { return m.GoodTokensPerUSD }, "good output tokens per dollar",
			func(m *Metrics) string { return none(m.USDPerMTok, "not priced")(m) }
	}
	return func(m *Metrics) float64 { return m.OutputTokensPerSec }, "throughput", func(*Metrics) string { return "no throughput" }
}

func valueMap(vals []Value) map[string]string {
	m := make(map[string]string, len(vals))
	for _, v := range vals {
		m[v.Name] = v.Value
	}
	return m
}

// tieFrac is the relative throughput difference below which two values
// count as equally fast: an open-loop load below capacity gives every
// value the offered throughput, give or take noise.
const tieFrac = 0.01

// recommend picks the combination with the best throughput among those
// that qualify (see Recommendation), or says why none does. Throughputs
// within tieFrac of the best are a tie, broken by the lowest E2E p50. The
// reason cites the figures with their 95 % intervals and names the
// qualifying values whose throughput intervals overlap the chosen one's:
// the choice stands, but the data do not show it is faster than them.
func recommend(points []Point, rankBy string) Recommendation {
	figure, rankName, missing := rankOf(rankBy)
	budgets := false
	for _, p := range points {
		budgets = budgets || p.BudgetsMet != nil
	}
	rec := Recommendation{Basis: "throughput"}
	if budgets {
		rec.Basis = "budgets"
	}
	var qualified []int
	var why []string
	for i, p := range points {
		if reason := excluded(&p, budgets, figure, missing); reason != "" {
			why = append(why, p.Label+": "+reason)
		} else {
			qualified = append(qualified, i)
		}
	}
	if len(qualified) == 0 {
		rec.Reason = "no value qualifies: " + strings.Join(why, "; ")
		return rec
	}
	top := 0.0
	for _, i := range qualified {
		top = max(top, figure(points[i].Metrics))
	}
	best, tied := -1, 0
	for _, i := range qualified {
		if figure(points[i].Metrics) < top*(1-tieFrac) {
			continue
		}
		tied++
		if best < 0 || points[i].Metrics.E2EP50 < points[best].Metrics.E2EP50 {
			best = i
		}
	}
	p := points[best]
	rec.Label, rec.Values = p.Label, p.Values
	figures := recommendedFigures(p.Metrics)
	switch m := p.Metrics; rankBy {
	case scenario.RankGoodputPerJoule:
		rec.Basis += ", good tokens per joule"
		figures = fmt.Sprintf("%s good output tokens per joule, %s J per token; ", fmtSig(m.GoodTokensPerJoule), fmtSig(m.JoulesPerToken)) + figures
	case scenario.RankGoodputPerDollar:
		rec.Basis += ", good tokens per dollar"
		figures = fmt.Sprintf("%s good output tokens per dollar, $%s per 1M output tokens; ", fmtSig(m.GoodTokensPerUSD), fmtSig(m.USDPerMTok)) + figures
	}
	if budgets {
		rec.Reason = fmt.Sprintf("%s meets every budget with the best %s (%s)%s", p.Label, rankName, figures, ciNote(p.Metrics))
	} else {
		rec.Reason = fmt.Sprintf("%s has the best %s without failed requests (%s)%s; the scenario has no budgets, so judge the latencies yourself",
			p.Label, rankName, figures, ciNote(p.Metrics))
	}
	if tied > 1 {
		rec.Reason += fmt.Sprintf("; %d values were within %g %% of the best %s and it has the lowest E2E p50 of them", tied, tieFrac*100, rankName)
	}
	if rankBy == "" {
		rec.Reason += overlapNote(points, qualified, best)
	}
	if len(why) > 0 {
		rec.Reason += "; excluded: " + strings.Join(why, "; ")
	}
	return rec
}

// excluded says why a point cannot be recommended, "" when it can.
func excluded(p *Point, budgets bool, figure func(*Metrics) float64, missing func(*Metrics) string) string {
	switch {
	case p.Metrics == nil:
		return "no completed run"
	case p.Failed > 0:
		return fmt.Sprintf("%d of %s failed", p.Failed, report.FormatCount(p.Failed+p.Runs, "run", "runs"))
	case budgets && p.Verdict == report.StatusInconclusive:
		return "budgets inconclusive: " + undecidedText(p)
	case budgets && (p.BudgetsMet == nil || !*p.BudgetsMet):
		if len(p.Missed) > 0 {
			return "missed " + strings.Join(p.Missed, ", ")
		}
		return "no verdict"
	case !budgets && p.Metrics.Failed > 0:
		return report.FormatCountOf(p.Metrics.Failed, "failed request", "failed requests")
	case figure(p.Metrics) <= 0:
		return missing(p.Metrics)
	}
	return ""
}

// undecidedText cites each budget a point could not decide, with its
// evidence: the figure and the interval that straddles the limit, or the
// samples too few for an interval.
func undecidedText(p *Point) string {
	var parts []string
	for _, c := range p.undecided {
		op := map[string]string{"<=": "≤", ">=": "≥"}[c.Op]
		unit := ""
		if c.Unit != "" && c.Unit != "fraction" && c.Unit != "count" {
			unit = " " + c.Unit
		}
		switch {
		case c.Measured != nil && c.Interval != nil:
			parts = append(parts, fmt.Sprintf("%s %s%s, 95 %% interval [%s, %s] straddles its limit %s %s",
				c.Name, fmtSig(*c.Measured), unit, fmtSig(c.Interval[0]), fmtSig(c.Interval[1]), op, fmtSig(c.Limit)))
		case c.Measured != nil && c.MinSamples > 0 && c.Samples < int64(c.MinSamples):
			parts = append(parts, fmt.Sprintf("%s %s%s from %d samples, fewer than the %d an interval needs (limit %s %s)",
				c.Name, fmtSig(*c.Measured), unit, c.Samples, c.MinSamples, op, fmtSig(c.Limit)))
		default:
			parts = append(parts, c.Name)
		}
	}
	if len(parts) == 0 {
		return strings.Join(p.Inconclusive, ", ")
	}
	return strings.Join(parts, "; ")
}

// recommendedFigures are the chosen value's figures for the reason, each
// followed by its 95 % interval in brackets when it has one.
func recommendedFigures(m *Metrics) string {
	f := func(key string, v float64, format func(float64) string) string {
		out := format(v)
		if lo, hi, ok := m.Interval(key); ok {
			out += " [" + format(lo) + ", " + format(hi) + "]"
		}
		return out
	}
	tps := func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
	return fmt.Sprintf("%s output tokens/s, TTFT p50 %s p99 %s ms, ITL p50 %s p99 %s ms, E2E p50 %s ms",
		f("output_tokens_per_s", m.OutputTokensPerSec, tps), f("ttft_p50_ms", m.TTFTP50, fmtMs), f("ttft_p99_ms", m.TTFTP99, fmtMs),
		f("itl_p50_ms", m.ITLP50, fmtMs), f("itl_p99_ms", m.ITLP99, fmtMs), f("e2e_p50_ms", m.E2EP50, fmtMs))
}

// ciNote says what the brackets of recommendedFigures are, and which
// figures have none.
func ciNote(m *Metrics) string {
	var none []string
	for _, f := range []struct{ key, name string }{{"output_tokens_per_s", "throughput"}, {"ttft_p50_ms", "TTFT p50"},
		{"ttft_p99_ms", "TTFT p99"}, {"itl_p50_ms", "ITL p50"}, {"itl_p99_ms", "ITL p99"}, {"e2e_p50_ms", "E2E p50"}} {
		if _, _, ok := m.Interval(f.key); !ok {
			none = append(none, f.name)
		}
	}
	if len(none) == 6 {
		return "; no figure has a 95 % interval (too few samples)"
	}
	from := "the run's own samples"
	if m.CIFrom == "repeats" {
		from = "the repeats and their runs' samples"
	}
	note := "; 95 % intervals in brackets, from " + from
	if len(none) > 0 {
		note += " (none for " + strings.Join(none, ", ") + ": too few samples)"
	}
	return note
}

// overlapNote names the other qualifying values whose throughput cannot
// be told apart from the chosen one's: their 95 % intervals overlap, or
// the other has none; when the chosen one has none, it says so.
func overlapNote(points []Point, qualified []int, best int) string {
	blo, bhi, bok := points[best].Metrics.Interval("output_tokens_per_s")
	if !bok {
		if len(qualified) > 1 {
			return "; its throughput has no 95 % interval, so how far it stands from the other qualifying values is not known"
		}
		return ""
	}
	var close []string
	for _, i := range qualified {
		if i == best {
			continue
		}
		m := points[i].Metrics
		lo, hi, ok := m.Interval("output_tokens_per_s")
		switch {
		case !ok:
			close = append(close, fmt.Sprintf("%s (%.1f, no interval)", points[i].Label, m.OutputTokensPerSec))
		case lo <= bhi && blo <= hi:
			close = append(close, fmt.Sprintf("%s (%.1f [%.1f, %.1f])", points[i].Label, m.OutputTokensPerSec, lo, hi))
		}
	}
	if len(close) == 0 {
		return ""
	}
	return "; its throughput is not told apart from that of " + strings.Join(close, ", ") +
		": the 95 % intervals overlap (or the other has none), so the data do not show it faster"
}

// fmtMs formats a latency in ms with three significant digits (whole
// milliseconds from 100 up), as the sweep's table does.
func fmtMs(x float64) string {
	switch {
	case math.Abs(x) >= 100 || x == math.Trunc(x):
		return strconv.FormatFloat(x, 'f', 0, 64)
	case math.Abs(x) >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// fmtSig formats x with four significant digits, in plain notation.
func fmtSig(x float64) string {
	if math.Abs(x) >= 1e4 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// WriteJSON writes the summary as indented JSON (the sweep.json format).
func WriteJSON(w io.Writer, s *Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("write sweep JSON: %w", err)
	}
	return nil
}

// csvHeader is the fixed part of sweep.csv's header; one column per
// parameter comes first.
var csvHeader = []string{"repeat", "status", "ok", "failed", "dropped",
	"ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms", "tpot_p50_ms", "e2e_p50_ms", "e2e_p99_ms",
	"output_tokens_per_s", "requests_per_s", "joules_per_token", "usd_per_mtok", "good_output_tokens_per_j", "good_output_tokens_per_usd",
	"budgets", "dir", "error"}

// ciCells are a run's 95 % intervals in sweep.csv, low and high of each
// figure of ciFigures in turn; empty where it has none.
func ciCells(m *Metrics, num func(float64) string) []string {
	cells := make([]string, 0, 2*len(ciFigures))
	for _, f := range ciFigures {
		lo, hi, ok := 0.0, 0.0, false
		if m != nil {
			lo, hi, ok = m.Interval(f.name)
		}
		if !ok {
			cells = append(cells, "", "")
			continue
		}
		cells = append(cells, num(lo), num(hi))
	}
	return cells
}

// WriteCSV writes one row per run (the sweep.csv format): the parameters'
// values, then csvHeader's columns, then each figure's 95 % interval
// (FIGURE_ci95_lo and FIGURE_ci95_hi for the figures of ciFigures, empty
// where it has none), then the p50 and p99 of the latency
// metrics of the table that have no fixed column (Metrics.Latencies: none
// with today's table), as NAME_p50_ms and NAME_p99_ms. Empty cells mean
// "no figure".
func WriteCSV(w io.Writer, s *Summary) error {
	cw := csv.NewWriter(w)
	head := append(slices.Clone(s.Parameters), csvHeader...)
	for _, f := range ciFigures {
		head = append(head, f.name+"_ci95_lo", f.name+"_ci95_hi")
	}
	more := latencyKeys(s.Runs)
	for _, k := range more {
		name, stat, _ := strings.Cut(k, ".")
		head = append(head, strings.TrimSuffix(name, "_ms")+"_"+stat+"_ms")
	}
	if err := cw.Write(head); err != nil {
		return fmt.Errorf("write sweep CSV: %w", err)
	}
	num := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	for _, r := range s.Runs {
		row := make([]string, 0, len(head))
		for _, p := range s.Parameters {
			row = append(row, r.Values[p])
		}
		row = append(row, strconv.Itoa(r.Repeat), r.Status)
		if m := r.Metrics; m != nil {
			for _, x := range []float64{m.OK, m.Failed, m.Dropped, m.TTFTP50, m.TTFTP99, m.ITLP50, m.ITLP99,
				m.TPOTP50, m.E2EP50, m.E2EP99, m.OutputTokensPerSec, m.RequestsPerSec} {
				row = append(row, num(x))
			}
			for _, x := range []float64{m.JoulesPerToken, m.USDPerMTok, m.GoodTokensPerJoule, m.GoodTokensPerUSD} {
				if x == 0 {
					row = append(row, "") // not measured, not priced
				} else {
					row = append(row, num(x))
				}
			}
		} else {
			row = append(row, make([]string, 16)...)
		}
		budgets := ""
		if r.BudgetsPass != nil {
			budgets = "fail"
			switch {
			case *r.BudgetsPass:
				budgets = "pass"
			case r.Inconclusive:
				budgets = "inconclusive"
			}
		}
		row = append(row, budgets, r.Dir, r.Error)
		row = append(row, ciCells(r.Metrics, num)...)
		for _, k := range more {
			cell := ""
			if v, ok := r.Metrics.latency(k); ok {
				cell = num(v)
			}
			row = append(row, cell)
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("write sweep CSV: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write sweep CSV: %w", err)
	}
	return nil
}

// latencyKeys returns the keys of the runs' Metrics.Latencies, sorted:
// sweep.csv's last columns, after the fixed ones, so that no column moves.
func latencyKeys(runs []RunRecord) []string {
	seen := map[string]bool{}
	for _, r := range runs {
		if r.Metrics != nil {
			for k := range r.Metrics.Latencies {
				seen[k] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// latency returns the figure k of m's Latencies (nil m: none).
func (m *Metrics) latency(k string) (float64, bool) {
	if m == nil {
		return 0, false
	}
	v, ok := m.Latencies[k]
	return v, ok
}

// halfWidth is the larger half-width of the figure key's 95 % interval
// relative to the figure ("±26%"), or "few" when it has none.
func halfWidth(m *Metrics, key string) string {
	v, _ := m.Figure(key)
	lo, hi, ok := m.Interval(key)
	if !ok || v == 0 {
		return "few"
	}
	return fmt.Sprintf("±%.0f%%", 100*max(v-lo, hi-v)/math.Abs(v))
}

// WriteText writes the terminal table: one row per combination (per
// probed value, for a search), then the recommendation or the capacity.
func WriteText(w io.Writer, s *Summary) error {
	if len(s.Search) > 0 {
		return writeSearchText(w, s)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sweep %q over %s (%d runs)\n", s.Scenario, strings.Join(s.Parameters, ", "), len(s.Runs))
	rows := [][]string{{"value", "runs", "ok", "fail", "TTFT p50", "p99", "ITL p50", "p99", "out tok/s", "± 95 %", "budgets"}}
	for _, p := range s.Points {
		row := []string{p.Label, fmt.Sprintf("%d/%d", p.Runs, p.Runs+p.Failed)}
		if m := p.Metrics; m != nil {
			row = append(row, num1(m.OK), num1(m.Failed), num1(m.TTFTP50), num1(m.TTFTP99), num1(m.ITLP50), num1(m.ITLP99),
				num1(m.OutputTokensPerSec), halfWidth(m, "output_tokens_per_s"))
		} else {
			row = append(row, "-", "-", "-", "-", "-", "-", "-", "-")
		}
		switch {
		case p.BudgetsMet == nil:
			row = append(row, "-")
		case *p.BudgetsMet:
			row = append(row, "pass")
		case p.Verdict == report.StatusInconclusive:
			row = append(row, "inconclusive")
		default:
			row = append(row, "FAIL")
		}
		rows = append(rows, row)
	}
	b.WriteString(textable.Format(rows, false))
	b.WriteString("(latencies in ms, means over each value's runs; ± 95 %: the throughput interval's larger half-width, " +
		"\"few\" where the runs were too short for one)\n")
	for _, r := range s.Runs {
		if r.Status == StatusFailed {
			fmt.Fprintf(&b, "failed: %s (repeat %d): %s\n", r.Label, r.Repeat, firstLine(r.Error))
		}
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	if s.Recommendation.Label != "" {
		fmt.Fprintf(&b, "recommended: %s\n  %s\n", s.Recommendation.Label, s.Recommendation.Reason)
	} else {
		fmt.Fprintf(&b, "no recommendation: %s\n", s.Recommendation.Reason)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func num1(x float64) string {
	if x >= 100 || x == math.Trunc(x) {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'f', 1, 64)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
