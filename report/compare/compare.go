package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
)

// Compare defaults.
const (
	DefaultAlpha     = 0.05 // significance level of the rank test
	defaultMinChange = 0.05 // smallest relative change flagged, as a fraction
	// offeredTolerance is how far apart (relative) two open-loop stages'
	// realised arrival rates may be before the comparison is flagged.
	offeredTolerance = 0.10
	// cacheTolerance is how far apart (absolute) the two runs' shares of
	// prompt tokens served from the prefix cache may be before the
	// comparison is flagged.
	cacheTolerance = 0.10
)

// Options tune Compare. The zero value uses the defaults.
type Options struct {
	// Alpha is the significance level: a change is significant when the
	// rank test's p-value is below it. 0 means DefaultAlpha.
	Alpha float64
	// MinChange is the smallest relative change (a fraction) that is
	// flagged as a regression or improvement, however significant: with
	// thousands of requests, a 1 % shift is significant and still noise on
	// a shared machine. 0 means defaultMinChange; negative means none.
	MinChange float64
	// MaxRegression turns the comparison into a gate: each key
	// "[SCOPE:]METRIC[.STAT]" ("ttft_ms.p99", "closed-8:itl_ms.p50",
	// "output_tokens_per_s") maps to the largest regression allowed, a
	// fraction (0.10 for 10 %). SCOPE defaults to "overall".
	MaxRegression map[string]float64
	// BaseLabel and NewLabel name the two sides in output (default "base"
	// and "new").
	BaseLabel, NewLabel string
	// BaseRuns and NewRuns are each side's runs one by one, when a side
	// pools several (repeats): with at least two on both sides, a change's
	// interval comes from the run-to-run spread (Welch); otherwise from
	// each run's own sampling error, and run-to-run noise is unknown.
	BaseRuns, NewRuns []*report.Aggregate
	// History holds earlier baseline runs' figures (a history file): with
	// at least three runs of the base's workload and no repeats on both
	// sides, a change's interval comes from the spread the history shows.
	History []HistoryRun
	// DifferentWorkloads compares runs whose workloads differ (lengths,
	// API, dataset, stage shapes) instead of refusing: the first line of
	// the output says so.
	DifferentWorkloads bool
}

// ErrDifferentWorkloads is the refusal of a comparison of runs that did
// not ask the same of the server.
var ErrDifferentWorkloads = errors.New("the runs' workloads differ")

// Comparison is a baseline run compared with a candidate, metric by
// metric, benchstat-style.
type Comparison struct {
	BaseLabel string  `json:"base_label"`
	NewLabel  string  `json:"new_label"`
	Alpha     float64 `json:"alpha"`
	MinChange float64 `json:"min_change"`
	// Noise says where the changes' intervals come from: "between runs"
	// (repeats on both sides: run-to-run noise measured) or "within runs"
	// (one run a side: sampling error only, run-to-run noise unknown).
	Noise     string `json:"noise"`
	BaseCount int    `json:"base_runs"`
	NewCount  int    `json:"new_runs"`
	// HistoryRuns is how many runs of the base's workload the history
	// holds (the noise comes from them when Noise is "history": at least
	// three); 0 without a history.
	HistoryRuns int `json:"history_runs,omitempty"`
	// Workload lists how the two sides' workloads differ; empty when they
	// asked the same of the server.
	Workload []string `json:"workload_differences,omitempty"`
	Tables   []Table  `json:"tables"` // overall first, then the stages both runs have, by base order
	// Gates are the --max-regression checks, in key order; Pass is false
	// when one failed.
	Gates []Gate `json:"gates,omitempty"`
	Pass  bool   `json:"pass"`
	// Warnings flag comparisons that may mislead: different offered
	// loads, different models or scenarios, stages only one run has.
	Warnings []string `json:"warnings,omitempty"`
}

// Table compares one scope: the whole run or one stage.
type Table struct {
	Scope string `json:"scope"`
	// BaseLoad and NewLoad describe each side's offered load as the
	// scenario set it and as realised.
	BaseLoad LoadInfo `json:"base_load"`
	NewLoad  LoadInfo `json:"new_load"`
	Rows     []Row    `json:"rows"`
}

// LoadInfo is a scope's offered load: its setting and what was realised.
type LoadInfo struct {
	Setting        string  `json:"setting"`          // "closed, concurrency 8" or "open, poisson 30 req/s"; "" when unknown or several
	ArrivalsPerSec float64 `json:"arrivals_per_s"`   // realised arrival rate: scheduled requests (dropped included) over the span of their scheduled times, per second; 0 for several stages
	RequestsPerSec float64 `json:"requests_per_s"`   // completed requests per second
	Requests       int64   `json:"requests"`         // scheduled, warmup excluded
	Open           bool    `json:"open"`             // open loop: the arrival rate is the load; closed: the server sets it
	DurationS      float64 `json:"duration_s"`       // first send to last end, seconds
	Dropped        int64   `json:"dropped"`          // open-loop arrivals that found no free slot
	Failed         int64   `json:"failed"`           // failed requests
	OK             int64   `json:"ok"`               // completed requests
	Model          string  `json:"model,omitempty"`  // of the run
	Target         string  `json:"target,omitempty"` // of the run
}

// Row is one statistic of one metric on both sides.
type Row struct {
	Metric string  `json:"metric"` // "ttft_ms", "output_tokens_per_s", …
	Stat   string  `json:"stat"`   // "p50", "p99", "mean", …; "" for rates and ratios
	Unit   string  `json:"unit"`
	Base   float64 `json:"base"`
	New    float64 `json:"new"`
	// Change is (new − base) / base; NaN (null in JSON) when base is 0.
	// Lo and Hi bound it at 95 % (NaN when the figure has no interval: a
	// rate of a single run, a percentile with too few samples).
	Change float64 `json:"change"`
	Lo, Hi float64 `json:"-"`
	// P is the rank test's p-value on the metric's per-request samples
	// (shared by the metric's rows), Holm-adjusted for the number of
	// metrics tested in the table; NaN when there is no test (rates,
	// ratios) or too few samples.
	P           float64 `json:"p"`
	NBase, NNew int64   `json:"-"`
	// Significant is true when the change's interval excludes 0 (without
	// an interval: P < alpha with the test's shift in the direction of the
	// change). Verdict is "regression" or "improvement" when significant
	// and the change is at least MinChange, else "~".
	Significant bool   `json:"significant"`
	Verdict     string `json:"verdict"`
	HigherWorse bool   `json:"higher_is_worse"`
}

// MarshalJSON writes NaN figures as null.
func (r Row) MarshalJSON() ([]byte, error) {
	type plain Row
	return json.Marshal(struct {
		plain
		Change *float64 `json:"change"`
		Lo     *float64 `json:"change_lo"`
		Hi     *float64 `json:"change_hi"`
		P      *float64 `json:"p"`
		NBase  int64    `json:"n_base"`
		NNew   int64    `json:"n_new"`
	}{plain(r), finite(r.Change), finite(r.Lo), finite(r.Hi), finite(r.P), r.NBase, r.NNew})
}

func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	x = round(x, 6)
	return &x
}

// Gate is one --max-regression check.
type Gate struct {
	Key    string  `json:"key"`    // as given: "ttft_ms.p99"
	Scope  string  `json:"scope"`  // "overall" or a stage name
	Max    float64 `json:"max"`    // largest regression allowed, a fraction
	Change float64 `json:"change"` // the relative change, signed so that positive is worse
	P      float64 `json:"p"`      // the row's p-value (NaN: no test)
	Pass   bool    `json:"pass"`   // not a regression beyond Max: the interval's worse end within it
	// Inconclusive is true when the change's interval straddles Max: the
	// runs cannot tell whether the regression is beyond the limit.
	Inconclusive bool   `json:"inconclusive,omitempty"`
	Message      string `json:"message"` // one sentence
}

// MarshalJSON writes NaN figures as null.
func (g Gate) MarshalJSON() ([]byte, error) {
	type plain Gate
	return json.Marshal(struct {
		plain
		Change *float64 `json:"change"`
		P      *float64 `json:"p"`
	}{plain(g), finite(g.Change), finite(g.P)})
}

// defaultStats are the latency statistics every table shows.
var defaultStats = []string{"p50", "p99"}

// Compare compares base with cand (each an report.Aggregate of one run or of
// merged files). Latency rows come from the summaries (HdrHistogram
// percentiles, as every report shows them); significance from the
// Mann-Whitney U test on the per-request values (see stats.go).
// A --max-regression gate fails when the change is worse than its limit
// and, for latency rows, significant; rates and ratios have no per-request
// samples and gate on the change alone. It returns an error for a gate key
// that names no metric.
func Runs(base, cand *report.Aggregate, opts Options) (*Comparison, error) {
	opts.defaults()
	gates, err := parseGates(opts.MaxRegression)
	if err != nil {
		return nil, err
	}
	bs, ns := base.Summary(), cand.Summary()
	diffs := workloadDiffs(bs.Workload, ns.Workload)
	if len(diffs) > 0 && !opts.DifferentWorkloads {
		return nil, fmt.Errorf("%w: %s; a comparison would measure the workload, not the server (--different-workloads compares them all the same)",
			ErrDifferentWorkloads, strings.Join(diffs, "; "))
	}
	cp := &comparer{base: base, cand: cand, bs: bs, ns: ns, opts: opts, bLoads: stageSettings(base), nLoads: stageSettings(cand),
		extra: map[string][]string{}, gated: map[string]bool{}, bRuns: summaries(opts.BaseRuns), nRuns: summaries(opts.NewRuns)}
	// A single-stage run's overall table is its stage's.
	alias := map[string]string{}
	if len(bs.Stages) == 1 && len(ns.Stages) == 1 && bs.Stages[0].Name == ns.Stages[0].Name {
		alias[bs.Stages[0].Name] = "overall"
	}
	for i, g := range gates {
		if a, ok := alias[g.scope]; ok {
			gates[i].scope = a
		}
		g = gates[i]
		// Which stats each scope shows: the defaults plus any a gate
		// names; which metrics each scope gates: the family their tests
		// are adjusted in.
		if g.stat != "" {
			cp.extra[g.scope+":"+g.metric] = append(cp.extra[g.scope+":"+g.metric], g.stat)
		}
		cp.gated[g.scope+":"+g.metric] = true
	}
	c := &Comparison{BaseLabel: opts.BaseLabel, NewLabel: opts.NewLabel, Alpha: opts.Alpha, MinChange: opts.MinChange, Pass: true,
		Noise: "within runs", BaseCount: max(len(opts.BaseRuns), 1), NewCount: max(len(opts.NewRuns), 1), Workload: diffs}
	switch {
	case cp.between():
		c.Noise = "between runs"
	case len(opts.History) > 0:
		if cp.hist, c.HistoryRuns = noiseFrom(opts.History, bs); cp.hist != nil {
			c.Noise = "history"
		}
	}
	c.Tables = append(c.Tables, cp.table("overall", &bs.Overall, &ns.Overall, nil, nil))
	tables, warnings := cp.stageTables()
	c.Tables = append(c.Tables, tables...)
	c.Warnings = append(c.Warnings, warnings...)
	c.Warnings = append(c.Warnings, loadWarnings(c, bs, ns)...)
	if w := SpecDraftWarning(c.BaseLabel, bs.Overall.Efficiency, c.NewLabel, ns.Overall.Efficiency); w != "" {
		c.Warnings = append(c.Warnings, w)
	}
	for _, g := range gates {
		cg := g.judge(c)
		c.Pass = c.Pass && cg.Pass
		c.Gates = append(c.Gates, cg)
	}
	return c, nil
}

// summaries are the runs' summaries, in order.
func summaries(runs []*report.Aggregate) []*report.Summary {
	out := make([]*report.Summary, len(runs))
	for i, a := range runs {
		out[i] = a.Summary()
	}
	return out
}

// between reports whether both sides have repeats, so that the changes'
// intervals measure the run-to-run noise.
func (cp *comparer) between() bool { return len(cp.bRuns) >= 2 && len(cp.nRuns) >= 2 }

// defaults fills the options left zero.
func (o *Options) defaults() {
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if o.MinChange == 0 {
		o.MinChange = defaultMinChange
	}
	o.MinChange = max(o.MinChange, 0)
	if o.BaseLabel == "" {
		o.BaseLabel = "base"
	}
	if o.NewLabel == "" {
		o.NewLabel = "new"
	}
}

// comparer builds the tables of one comparison.
type comparer struct {
	base, cand     *report.Aggregate
	bs, ns         *report.Summary
	opts           Options
	bLoads, nLoads map[int]string
	extra          map[string][]string // "scope:metric" → the stats a gate names
	gated          map[string]bool     // "scope:metric" gated
	bRuns, nRuns   []*report.Summary   // each side's runs, when it pools several
	hist           *historyNoise       // the history's noise; nil: none used
}

// stageTables compares the stages the two runs share, by name (when
// either has more than one), and warns of those only one has.
func (cp *comparer) stageTables() (tables []Table, warnings []string) {
	bs, ns := cp.bs, cp.ns
	for i := range bs.Stages {
		bst := &bs.Stages[i]
		j := slices.IndexFunc(ns.Stages, func(s report.Stage) bool { return s.Name == bst.Name })
		if j < 0 {
			warnings = append(warnings, fmt.Sprintf("stage %q is only in %s", bst.Name, cp.opts.BaseLabel))
			continue
		}
		if len(bs.Stages) > 1 || len(ns.Stages) > 1 {
			tables = append(tables, cp.table(bst.Name, bst, &ns.Stages[j], []int{bst.Index}, []int{ns.Stages[j].Index}))
		}
	}
	for _, st := range ns.Stages {
		if !slices.ContainsFunc(bs.Stages, func(s report.Stage) bool { return s.Name == st.Name }) {
			warnings = append(warnings, fmt.Sprintf("stage %q is only in %s", st.Name, cp.opts.NewLabel))
		}
	}
	return tables, warnings
}

// tested is one per-request metric's test.
type tested struct {
	metric   string
	bd, nd   report.Dist
	nb, nn   int64
	p        float64
	shift    int
	adjusted float64
}

// table compares one scope: a row per latency statistic shown, tested
// with Mann-Whitney, then the rates and ratios.
func (cp *comparer) table(scope string, bst, nst *report.Stage, bIdx, nIdx []int) Table {
	bLog, nLog := cp.base.Scope(bIdx), cp.cand.Scope(nIdx)
	t := Table{Scope: scope, BaseLoad: loadInfo(cp.bs, bst, cp.bLoads, bIdx, bLog), NewLoad: loadInfo(cp.ns, nst, cp.nLoads, nIdx, nLog)}
	// Runs pooled from separate times overlap on one timeline: their
	// rates are the means of the runs' own.
	for _, side := range []struct {
		li   *LoadInfo
		runs []*report.Summary
	}{{&t.BaseLoad, cp.bRuns}, {&t.NewLoad, cp.nRuns}} {
		if len(side.runs) > 1 {
			side.li.RequestsPerSec = round(mean(runValues(side.runs, scope, "requests_per_s", "")), 3)
			side.li.ArrivalsPerSec = 0
		}
	}
	var ms []tested
	// The per-request metrics: one value per request to rank.
	for _, m := range cp.base.PerRequestMetrics() {
		bd, nd := *bst.Dist(m.Name), *nst.Dist(m.Name)
		if bd.Count == 0 && nd.Count == 0 {
			continue
		}
		// Time to first content is time to first token unless the model
		// reasons first: show it only when it differs.
		if m.Name == "ttfc_ms" && reflect.DeepEqual(bd, bst.TTFT) && reflect.DeepEqual(nd, nst.TTFT) {
			continue
		}
		bv, nv := bLog.Values(m.Name), nLog.Values(m.Name)
		p, shift := mannWhitney(bv, nv)
		ms = append(ms, tested{metric: m.Name, bd: bd, nd: nd, nb: int64(len(bv)), nn: int64(len(nv)), p: p, shift: shift})
	}
	cp.adjust(scope, ms)
	for _, m := range ms {
		var stats []string // canonical order
		for _, s := range gateStats {
			if slices.Contains(defaultStats, s) || slices.Contains(cp.extra[scope+":"+m.metric], s) {
				stats = append(stats, s)
			}
		}
		for _, stat := range stats {
			b, _ := m.bd.Stat(stat)
			n, _ := m.nd.Stat(stat)
			r := newRow(m.metric, stat, "ms", b, n, m.nb, m.nn, m.adjusted, m.shift, true, cp.opts)
			r.Lo, r.Hi = cp.interval(scope, bst, nst, m.metric, stat, b, r.Change)
			r.judge(cp.opts)
			t.Rows = append(t.Rows, r)
		}
	}
	// Rates and ratios have no per-request samples: no test.
	rows := rateRows()
	if bst.Requests.Inputs > 0 || nst.Requests.Inputs > 0 {
		rows = append(rows, embeddingRows()...)
	}
	for _, name := range rows {
		m, _ := results.MetricByName(name)
		b, _, _ := bst.Figure(name)
		n, _, _ := nst.Figure(name)
		// Runs pooled from separate times overlap on one timeline: a
		// side's rate is the mean of its runs' own.
		if len(cp.bRuns) > 1 {
			b = mean(runValues(cp.bRuns, scope, name, ""))
		}
		if len(cp.nRuns) > 1 {
			n = mean(runValues(cp.nRuns, scope, name, ""))
		}
		r := newRow(name, "", m.Unit, b, n, 0, 0, math.NaN(), 0, !m.HigherIsBetter, cp.opts)
		r.Lo, r.Hi = cp.interval(scope, bst, nst, name, "", b, r.Change)
		r.judge(cp.opts)
		t.Rows = append(t.Rows, r)
	}
	return t
}

// adjust sets each test's Holm-adjusted p-value. The family of a gated
// metric is the metrics gated in its scope, so that a metric added to the
// table (or shown) cannot move an existing gate's verdict; the family of
// every other metric is all the metrics shown in the scope.
func (cp *comparer) adjust(scope string, ms []tested) {
	var all, gated []float64
	var gi []int
	for i := range ms {
		all = append(all, ms[i].p)
		if cp.gated[scope+":"+ms[i].metric] {
			gated, gi = append(gated, ms[i].p), append(gi, i)
		}
	}
	for i, adj := range holm(all) {
		ms[i].adjusted = adj
	}
	for k, adj := range holm(gated) {
		ms[gi[k]].adjusted = adj
	}
}

func newRow(metric, stat, unit string, b, n float64, nb, nn int64, p float64, shift int, higherWorse bool, opts Options) Row {
	r := Row{Metric: metric, Stat: stat, Unit: unit, Base: b, New: n, NBase: nb, NNew: nn, P: p,
		HigherWorse: higherWorse, Change: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Verdict: "~"}
	if b != 0 {
		r.Change = (n - b) / b
	}
	// Significant only when the shift the test found goes the way this
	// row's change does (see stats.go).
	agrees := (shift > 0 && n > b) || (shift < 0 && n < b)
	r.Significant = !math.IsNaN(p) && p < opts.Alpha && agrees
	r.judge(opts)
	return r
}

// judge sets the row's verdict: a regression or an improvement when the
// change is significant (its interval excludes 0, or without one the rank
// test) and at least MinChange.
func (r *Row) judge(opts Options) {
	if !math.IsNaN(r.Lo) && !math.IsNaN(r.Hi) {
		r.Significant = r.Lo > 0 || r.Hi < 0
	}
	r.Verdict = "~"
	if r.Significant && !math.IsNaN(r.Change) && math.Abs(r.Change) >= opts.MinChange {
		worse := r.Change > 0 == r.HigherWorse
		r.Verdict = "improvement"
		if worse {
			r.Verdict = "regression"
		}
	}
}

// stageSettings reads each stage's load setting from the first results
// header's resolved scenario.
func stageSettings(a *report.Aggregate) map[int]string {
	out := map[int]string{}
	if a.Spec() == nil {
		return out
	}
	for i, st := range a.Spec().Load.Stages {
		if tr := st.Trace; tr != nil {
			out[i] = fmt.Sprintf("trace %s at %s× speed, max %d in flight", tr.Path, report.FormatDecimal(tr.Speedup, 3), st.MaxConcurrency)
		} else if st.Open() {
			s := fmt.Sprintf("open, %s %s req/s, max %d in flight", st.Arrival, report.FormatDecimal(st.Rate, 3), st.MaxConcurrency)
			if st.Arrival == "gamma" {
				s += fmt.Sprintf(", burstiness %s", report.FormatDecimal(st.Burstiness, 3))
			}
			out[i] = s
		} else {
			out[i] = fmt.Sprintf("closed, concurrency %d", st.Concurrency)
		}
	}
	return out
}

func loadInfo(s *report.Summary, st *report.Stage, settings map[int]string, idx []int, log *report.Scope) LoadInfo {
	li := LoadInfo{RequestsPerSec: st.RequestsPerSec, Requests: st.Requests.Scheduled, DurationS: st.Duration,
		Dropped: st.Requests.Dropped, Failed: st.Requests.Failed, OK: st.Requests.OK, Model: s.Model, Target: s.Target,
		ArrivalsPerSec: round(log.ArrivalsPerSec(), 3)}
	if len(idx) == 1 {
		li.Setting = settings[idx[0]]
		li.Open = strings.HasPrefix(li.Setting, "open")
	} else if len(s.Stages) == 1 {
		li.Setting = settings[s.Stages[0].Index]
		li.Open = strings.HasPrefix(li.Setting, "open")
	}
	return li
}

// loadWarnings flags tables whose two sides were not offered the same
// load: a different setting, or open-loop arrival rates more than 10 %
// apart. Closed-loop arrival rates follow the server's speed and are not
// flagged.
func loadWarnings(c *Comparison, bs, ns *report.Summary) []string {
	var out []string
	if bs.Model != ns.Model {
		out = append(out, fmt.Sprintf("different models: %s %q, %s %q", c.BaseLabel, bs.Model, c.NewLabel, ns.Model))
	}
	if bs.Scenario != ns.Scenario {
		out = append(out, fmt.Sprintf("different scenarios: %s %q, %s %q", c.BaseLabel, bs.Scenario, c.NewLabel, ns.Scenario))
	}
	// A second run of the same prompts finds them in the server's prefix
	// cache: its TTFT falls for a reason that is not the change compared.
	share := func(t report.Tokens) float64 {
		if t.Prompt == 0 {
			return 0
		}
		return float64(t.Cached) / float64(t.Prompt)
	}
	if b, n := share(bs.Overall.Tokens), share(ns.Overall.Tokens); math.Abs(n-b) > cacheTolerance {
		out = append(out, fmt.Sprintf("the prefix cache served %s of %s's prompt tokens and %s of %s's: TTFT is not comparable "+
			"(a second run of the same prompts hits the cache; give each run its own prompts.salt, or salt: random)",
			report.FormatPercent(b), c.BaseLabel, report.FormatPercent(n), c.NewLabel))
	}
	for _, t := range c.Tables {
		b, n := t.BaseLoad, t.NewLoad
		switch {
		case b.Setting != n.Setting && b.Setting != "" && n.Setting != "":
			out = append(out, fmt.Sprintf("%s: different offered loads: %s %s (%s req/s realised), %s %s (%s req/s realised)",
				t.Scope, c.BaseLabel, b.Setting, report.FormatDecimal(b.ArrivalsPerSec, 2), c.NewLabel, n.Setting, report.FormatDecimal(n.ArrivalsPerSec, 2)))
		case b.Open && n.Open && b.ArrivalsPerSec > 0 &&
			math.Abs(n.ArrivalsPerSec-b.ArrivalsPerSec)/b.ArrivalsPerSec > offeredTolerance:
			out = append(out, fmt.Sprintf("%s: realised arrival rates differ by more than %d %%: %s %s req/s, %s %s req/s",
				t.Scope, int(offeredTolerance*100), c.BaseLabel, report.FormatDecimal(b.ArrivalsPerSec, 2), c.NewLabel, report.FormatDecimal(n.ArrivalsPerSec, 2)))
		}
	}
	return out
}

// gateKey is a parsed --max-regression key.
type gateKey struct {
	key, scope, metric, stat string
	max                      float64
}

// rateRows are the figures compared without a rank test, in table order:
// rates and ratios of a stage summary, which have no per-request samples.
func rateRows() []string { return []string{"output_tokens_per_s", "requests_per_s", "error_rate"} }

// embeddingRows are the rate rows added when either run embedded texts.
func embeddingRows() []string { return []string{"inputs_per_s", "total_tokens_per_s"} }

// gateMetrics are the metrics a table shows and a gate may name, from the
// metric table: the per-request latencies (which take a statistic) and the
// rate rows.
func gateMetrics() map[string]bool {
	out := map[string]bool{}
	for _, m := range results.Metrics() {
		switch {
		case m.Class == results.Latency && m.Budget:
			out[m.Name] = true
		case slices.Contains(rateRows(), m.Name), slices.Contains(embeddingRows(), m.Name):
			out[m.Name] = false
		}
	}
	return out
}

// gateStats are the statistics of a latency row, in canonical order.
var gateStats = results.Metric{Class: results.Latency}.Stats()

func parseGates(m map[string]float64) ([]gateKey, error) {
	var out []gateKey
	for _, key := range slices.Sorted(maps.Keys(m)) {
		g := gateKey{key: key, scope: "overall", max: m[key]}
		rest := key
		if i := strings.LastIndex(key, ":"); i >= 0 {
			g.scope, rest = key[:i], key[i+1:]
		}
		g.metric, g.stat, _ = strings.Cut(rest, ".")
		metrics := gateMetrics()
		takesStat, ok := metrics[g.metric]
		switch {
		case !ok:
			return nil, fmt.Errorf("max regression %q: unknown metric %q (want one of %s)", key, g.metric, strings.Join(slices.Sorted(maps.Keys(metrics)), ", "))
		case takesStat && !slices.Contains(gateStats, g.stat):
			return nil, fmt.Errorf("max regression %q: %s needs a statistic, one of %s (like %s.p99)", key, g.metric, strings.Join(gateStats, ", "), g.metric)
		case !takesStat && g.stat != "":
			return nil, fmt.Errorf("max regression %q: %s takes no statistic", key, g.metric)
		case math.IsNaN(g.max) || g.max < 0:
			return nil, fmt.Errorf("max regression %q: want a limit ≥ 0 %%", key)
		}
		out = append(out, g)
	}
	return out, nil
}

// ParseMaxRegression parses one --max-regression flag value,
// "[SCOPE:]METRIC[.STAT]=N%" (or a fraction without %), into its key and
// limit (a fraction).
func ParseMaxRegression(s string) (key string, limit float64, err error) {
	key, val, ok := strings.Cut(s, "=")
	if !ok || key == "" {
		return "", 0, fmt.Errorf("max regression %q: want METRIC.STAT=N%%, like ttft_ms.p99=10%%", s)
	}
	val = strings.TrimSpace(val)
	pct := strings.HasSuffix(val, "%")
	x, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(val, "%")), 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		return "", 0, fmt.Errorf("max regression %q: want a percentage ≥ 0, like 10%%", s)
	}
	if pct {
		x /= 100
	}
	if _, _, err := parseOne(key, x); err != nil {
		return "", 0, err
	}
	return key, x, nil
}

func parseOne(key string, x float64) (string, float64, error) {
	_, err := parseGates(map[string]float64{key: x})
	return key, x, err
}

// judge evaluates one gate on the comparison's rows.
func (g gateKey) judge(c *Comparison) Gate {
	cg := Gate{Key: g.key, Scope: g.scope, Max: g.max, Change: math.NaN(), P: math.NaN()}
	ti := slices.IndexFunc(c.Tables, func(t Table) bool { return t.Scope == g.scope })
	if ti < 0 {
		cg.Message = fmt.Sprintf("%s: no scope %q in both runs", g.key, g.scope)
		return cg
	}
	rows := c.Tables[ti].Rows
	ri := slices.IndexFunc(rows, func(r Row) bool { return r.Metric == g.metric && r.Stat == g.stat })
	if ri < 0 {
		cg.Message = fmt.Sprintf("%s: not measured in both runs", g.key)
		return cg
	}
	r := rows[ri]
	cg.P = r.P
	worse := r.Change
	if !r.HigherWorse {
		worse = -worse
	}
	if r.Base == 0 {
		// No relative change from zero: any worsening is unbounded.
		worse = 0
		if (r.New > 0) == r.HigherWorse && r.New != 0 {
			worse = math.Inf(1)
		}
	}
	cg.Change = worse
	limit := report.FormatDecimal(g.max*100, 2) + " %"
	// The interval of the change, signed so that positive is worse.
	wl, wh := r.Lo, r.Hi
	if !r.HigherWorse {
		wl, wh = -r.Hi, -r.Lo
	}
	switch {
	case r.Base == 0 || math.IsNaN(wl) || math.IsNaN(wh):
		// No interval: the value decides, as the rank test does for a
		// latency (a regression beyond the limit must also be significant).
		tested := !math.IsNaN(r.P)
		over := worse > g.max
		cg.Pass = !over || (tested && !r.Significant)
		switch {
		case !over:
			cg.Message = fmt.Sprintf("%s: %s, within %s (no interval)", g.key, changeText(worse), limit)
		case cg.Pass:
			cg.Message = fmt.Sprintf("%s: %s, beyond %s but not significant (p=%s ≥ %g)", g.key, changeText(worse), limit, pText(r.P), c.Alpha)
		default:
			cg.Message = fmt.Sprintf("%s: %s, beyond %s (no interval)", g.key, changeText(worse), limit)
		}
	case wh <= g.max:
		cg.Pass = true
		cg.Message = fmt.Sprintf("%s: %s (95 %% interval %s), within %s", g.key, changeText(worse), intervalText(wl, wh), limit)
	case wl > g.max:
		cg.Message = fmt.Sprintf("%s: %s (95 %% interval %s), beyond %s", g.key, changeText(worse), intervalText(wl, wh), limit)
	default:
		cg.Inconclusive = true
		cg.Message = fmt.Sprintf("%s: %s (95 %% interval %s) straddles %s: the runs cannot tell (%s)", g.key, changeText(worse),
			intervalText(wl, wh), limit, c.Noise)
	}
	return cg
}

// intervalText formats a change's interval, worse positive: "+3.1 % to
// +12.4 %".
func intervalText(lo, hi float64) string {
	return signed(lo*100) + " % to " + signed(hi*100) + " %"
}

func changeText(worse float64) string {
	switch {
	case math.IsInf(worse, 1):
		return "worse from zero"
	case worse > 0:
		return report.FormatDecimal(worse*100, 1) + " % worse"
	case worse < 0:
		return report.FormatDecimal(-worse*100, 1) + " % better"
	}
	return "unchanged"
}

func pText(p float64) string {
	if math.IsNaN(p) {
		return "-"
	}
	if p < 0.001 {
		return "0.000"
	}
	return fmt.Sprintf("%.3f", p)
}

// WriteText writes the comparison as benchstat-style tables:
// per scope, one row per statistic with both values, the change and the
// p-value; "~" marks a change that is not significant (or smaller than the
// minimum change). The offered loads, gates and warnings follow.
func WriteText(w io.Writer, c *Comparison) error {
	var b strings.Builder
	if len(c.Workload) > 0 {
		fmt.Fprintf(&b, "DIFFERENT WORKLOADS: %s: the changes below measure the workload as much as the server\n\n", strings.Join(c.Workload, "; "))
	}
	for i, t := range c.Tables {
		if i > 0 {
			b.WriteString("\n")
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "%s\t%s\t%s\tchange\t95 %% interval\tp\t\t\n", t.Scope, c.BaseLabel, c.NewLabel)
		for _, r := range t.Rows {
			name := r.Metric
			if r.Stat != "" {
				name += " " + r.Stat
			}
			change := "-"
			if !math.IsNaN(r.Change) {
				change = signed(r.Change*100) + " %"
			}
			n := ""
			if r.NBase > 0 || r.NNew > 0 {
				n = fmt.Sprintf("n=%d+%d", r.NBase, r.NNew)
			}
			verdict := r.Verdict
			if math.IsNaN(r.P) && verdict == "~" {
				verdict = ""
			}
			iv := "-"
			if !math.IsNaN(r.Lo) && !math.IsNaN(r.Hi) {
				iv = fmt.Sprintf("[%s, %s] %%", signed(r.Lo*100), signed(r.Hi*100))
			}
			if !math.IsNaN(r.Lo) && verdict == "" {
				verdict = "~"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, compareValue(r.Base, r.Unit), compareValue(r.New, r.Unit),
				change, iv, pText(r.P), n, verdict)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(&b, "load: %s %s; %s %s\n", c.BaseLabel, loadText(t.BaseLoad), c.NewLabel, loadText(t.NewLoad))
	}
	noise := fmt.Sprintf("between runs (%d against %d): run-to-run noise measured, Welch's interval over the runs' figures", c.BaseCount, c.NewCount)
	switch c.Noise {
	case "history":
		noise = fmt.Sprintf("the run-to-run spread of %d baseline runs in the history (%d against %d here)", c.HistoryRuns, c.BaseCount, c.NewCount)
	case "within runs":
		noise = "within runs: each run's own sampling error; run-to-run noise is unknown (give several runs a side: BASE… vs NEW…, or a --history)"
		if c.HistoryRuns > 0 {
			noise = fmt.Sprintf("within runs: each run's own sampling error; the history holds %d run(s) of this workload, %d are needed to measure the run-to-run noise", c.HistoryRuns, minHistory)
		}
	}
	fmt.Fprintf(&b, "(latencies in ms; 95 %% interval of the change: %s; p: Mann-Whitney U on per-request values, Holm-adjusted; ~: the interval holds 0 or the change is under %s %%)\n",
		noise, report.FormatDecimal(c.MinChange*100, 1))
	for _, g := range c.Gates {
		mark := "ok"
		switch {
		case g.Inconclusive:
			mark = "??"
		case !g.Pass:
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "gate %s: %s\n", mark, g.Message)
	}
	for _, warn := range c.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", warn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func loadText(l LoadInfo) string {
	s := l.Setting
	if s == "" {
		s = "load as run"
	}
	if l.ArrivalsPerSec > 0 {
		s += ", " + report.FormatDecimal(l.ArrivalsPerSec, 2) + " arrivals/s"
	}
	return s + ", " + report.FormatDecimal(l.RequestsPerSec, 2) + " ok/s"
}

func compareValue(x float64, unit string) string {
	switch unit {
	case "fraction":
		return report.FormatDecimal(x*100, 2) + " %"
	case "ms":
		return report.FormatMS(x, 1)
	}
	return report.FormatDecimal(x, 1)
}

func signed(x float64) string {
	s := report.FormatDecimal(x, 1)
	if x > 0 && s != "0" {
		return "+" + s
	}
	return s
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

// SpecDraftWarning warns when two runs' speculative decoding used
// different draft lengths: the acceptance rate (accepted ÷ proposed)
// falls arithmetically as drafts grow, whatever the drafter's quality, so
// the mean acceptance length (tokens per step) is what compares. "" when
// they drafted alike or either did not speculate.
func SpecDraftWarning(baseLabel string, base *report.Efficiency, newLabel string, cand *report.Efficiency) string {
	if base == nil || cand == nil || base.SpecDecode == nil || cand.SpecDecode == nil {
		return ""
	}
	b, n := base.SpecDecode, cand.SpecDecode
	if b.DraftLength == 0 || n.DraftLength == 0 || math.Abs(b.DraftLength-n.DraftLength) < 0.05 {
		return ""
	}
	return fmt.Sprintf("speculative decoding drafted %.2g tokens in %s and %.2g in %s: the acceptance rate (%.1f %% against %.1f %%) falls as drafts grow whatever the drafter, so compare the mean acceptance length, %.3g against %.3g tokens per step",
		b.DraftLength, baseLabel, n.DraftLength, newLabel, 100*b.AcceptanceRate, 100*n.AcceptanceRate, b.AcceptLength, n.AcceptLength)
}
