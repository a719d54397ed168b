package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/servebench/servebench/internal/simurl"
	"github.com/servebench/servebench/internal/textable"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/sim"
)

// Search outcomes (SearchResult.Status).
const (
	SearchFound       = "found"       // the capacity lies inside the range, bracketed to the resolution
	SearchBelowRange  = "below_range" // even the low end failed its budgets
	SearchAboveRange  = "above_range" // even the high end passed
	SearchInterrupted = "interrupted" // the search was stopped before it finished
)

// Confidence levels of a search's answer (SearchResult.Confidence).
const (
	ConfidenceHigh   = "high"   // both probes that bound the answer were decided clearly or unanimously
	ConfidenceMedium = "medium" // a bounding probe was decided by a split majority of its runs
	ConfidenceLow    = "low"    // a bounding probe's deciding percentile was judged on too few samples
	// ConfidenceIndeterminate: the probe above the answer could not be
	// told passing or failing (its budgets' intervals straddled their
	// limits in every run): the answer is a lower bound.
	ConfidenceIndeterminate = "indeterminate"
)

// ErrOverSaturated is the cause a probe is stopped with when the server is
// plainly over-saturated (see saturation.go).
var ErrOverSaturated = errors.New("over-saturated: requests in flight and TTFT both kept growing")

// SearchResult is one SLA search: for one combination of the sweep's
// parameters, the highest value of the searched parameter whose budgets
// pass, the bracket the capacity was narrowed to, and how sure that is.
type SearchResult struct {
	Label      string            `json:"label"` // the combination ("" for a search without parameters)
	Values     map[string]string `json:"values,omitempty"`
	Parameter  string            `json:"parameter"`
	Unit       string            `json:"unit"` // "requests/s" or "workers"; "sessions/s" or "sessions" for a session stage
	Low        float64           `json:"low"`  // the range searched
	High       float64           `json:"high"`
	Resolution float64           `json:"resolution"`
	Status     string            `json:"status"`
	// Answer is the highest value probed whose budgets passed; nil when
	// even the low end failed (or the search stopped before any passed).
	Answer *float64 `json:"answer"`
	// Bracket is where the capacity lies: from the highest passing value
	// (0 when none passed) to the lowest failing one (nil when none
	// failed); its width is at most Resolution when Status is found.
	Bracket [2]*float64 `json:"bracket"`
	// Confidence is how surely the two probes bounding the answer were
	// decided (high, medium or low), and Reason says it in a sentence.
	Confidence string  `json:"confidence"`
	Reason     string  `json:"reason"`
	Probes     []Probe `json:"probes"` // in the order they ran
}

// Probe is one searched value: its runs and the decision they made.
type Probe struct {
	Value float64  `json:"value"`
	Label string   `json:"label"` // the point's label, searched value included
	Dirs  []string `json:"dirs"`  // its runs' directories
	// Passed and Failed count its runs by budget verdict (a run that
	// failed to run counts as failed).
	Passed int  `json:"passed"`
	Failed int  `json:"failed"`
	Pass   bool `json:"pass"`
	// Decided says how: "clear" (one run, every deciding budget beyond
	// the margin), "unanimous" (repeated near the boundary, every run
	// agreeing), "majority" (runs disagreed; a tie fails),
	// "indeterminate" (no run's budgets could be told met or missed: their
	// intervals straddled the limits; it counts as not passing),
	// "over-saturated" (stopped early) or "run failed".
	Decided string `json:"decided"`
	// Near names what made the probe repeat: budgets within the margin of
	// their limits, or percentiles judged on too few samples.
	Near []string `json:"near,omitempty"`
	// FewSamples is true when a deciding percentile had fewer samples than
	// its minimum in every run.
	FewSamples bool     `json:"few_samples,omitempty"`
	Missed     []string `json:"missed,omitempty"`
	Metrics    *Metrics `json:"metrics,omitempty"` // means over its runs with figures
}

// searchGrid is the values a search may probe: low + k·resolution for k in
// [0, steps], the last one capped at high.
type searchGrid struct {
	low, high, res float64
	steps          int
	integer        bool
}

func newGrid(s *scenario.SweepSearch) searchGrid {
	g := searchGrid{low: s.Low(), high: s.High(), res: s.Resolution, integer: s.Integer()}
	g.steps = int(math.Ceil((g.high-g.low)/g.res - 1e-9))
	return g
}

func (g searchGrid) value(k int) float64 {
	x := min(g.low+float64(k)*g.res, g.high)
	if g.integer {
		return math.Round(x)
	}
	return math.Round(x*1e9) / 1e9
}

// executeSearch runs the plan's search once per combination.
func (p *Plan) executeSearch(ctx context.Context, opts Options, s *Summary, log func(string), save func()) {
	for i, vals := range p.Points {
		res := &SearchResult{Label: label(vals), Values: valueMap(vals), Parameter: p.Search.Parameter,
			Unit: p.unit, Low: p.Search.Low(), High: p.Search.High(), Resolution: p.Search.Resolution}
		s.Search = append(s.Search, *res)
		p.searchOne(ctx, opts, s, i, len(s.Search)-1, log, save)
		r := &s.Search[len(s.Search)-1]
		log(fmt.Sprintf("%s: %s", orAll(r.Label), r.Reason))
	}
}

func orAll(label string) string {
	if label == "" {
		return "search"
	}
	return label
}

// searchOne brackets and bisects one combination's capacity: the low end
// must pass and the high end fail, then the passing-failing pair is
// narrowed on the grid until they are neighbours.
func (p *Plan) searchOne(ctx context.Context, opts Options, s *Summary, point, idx int, log func(string), save func()) {
	g := newGrid(p.Search)
	res := func() *SearchResult { return &s.Search[idx] }
	probe := func(k int) *Probe {
		pr := p.probe(ctx, opts, s, point, g.value(k), log, save)
		res().Probes = append(res().Probes, pr)
		return &pr // a copy: later appends do not move it
	}
	interrupted := func() bool {
		if ctx.Err() == nil {
			return false
		}
		res().Status = SearchInterrupted
		return true
	}
	lo, hi := 0, g.steps
	var pass, fail *Probe
	pr := probe(lo)
	switch {
	case interrupted():
		p.conclude(res(), g, nil, nil)
		return
	case !pr.Pass:
		res().Status = SearchBelowRange
		p.conclude(res(), g, nil, pr)
		return
	}
	pass = pr
	pr = probe(hi)
	switch {
	case interrupted():
		p.conclude(res(), g, pass, nil)
		return
	case pr.Pass:
		res().Status = SearchAboveRange
		p.conclude(res(), g, pr, nil)
		return
	}
	fail = pr
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		pr := probe(mid)
		if interrupted() {
			break
		}
		if pr.Pass {
			lo, pass = mid, pr
		} else {
			hi, fail = mid, pr
		}
	}
	if res().Status == "" {
		res().Status = SearchFound
	}
	p.conclude(res(), g, pass, fail)
}

// conclude fills the answer, bracket, confidence and sentence of a search
// from its bounding probes (nil when there is none).
func (p *Plan) conclude(r *SearchResult, g searchGrid, pass, fail *Probe) {
	f := func(x float64) *float64 { return &x }
	zero := 0.0
	r.Bracket = [2]*float64{&zero, nil}
	if pass != nil {
		r.Answer = f(pass.Value)
		r.Bracket[0] = f(pass.Value)
	}
	if fail != nil {
		r.Bracket[1] = f(fail.Value)
	}
	r.Confidence = ConfidenceHigh
	var notes []string
	for _, pr := range []*Probe{pass, fail} {
		if pr == nil {
			continue
		}
		switch {
		case pr.Decided == "indeterminate":
			r.Confidence = ConfidenceIndeterminate
			notes = append(notes, fmt.Sprintf("at %s the budgets could not be told met or missed in %s (their 95 %% intervals straddle the limits): the capacity is at least the answer and may be higher",
				fmtVal(pr.Value), report.FormatCount(pr.Failed, "run", "runs")))
		case pr.FewSamples:
			if r.Confidence != ConfidenceIndeterminate {
				r.Confidence = ConfidenceLow
			}
			notes = append(notes, fmt.Sprintf("%s was judged on too few samples for its percentiles", fmtVal(pr.Value)))
		case pr.Decided == "majority":
			if r.Confidence == ConfidenceHigh {
				r.Confidence = ConfidenceMedium
			}
			notes = append(notes, fmt.Sprintf("%s was decided by %d of %s", fmtVal(pr.Value), max(pr.Passed, pr.Failed), report.FormatCount(pr.Passed+pr.Failed, "run", "runs")))
		default:
			notes = append(notes, fmt.Sprintf("%s %s (%s)", fmtVal(pr.Value), passWord(pr), pr.Decided))
		}
	}
	unit := r.Unit
	name := r.Parameter
	switch r.Status {
	case SearchFound:
		r.Reason = fmt.Sprintf("capacity %s %s: the highest %s whose budgets pass; it lies in [%s, %s) %s (resolution %s); confidence %s: %s",
			fmtVal(pass.Value), unit, name, fmtVal(pass.Value), fmtVal(fail.Value), unit, fmtVal(r.Resolution), r.Confidence, strings.Join(notes, "; "))
	case SearchBelowRange:
		r.Confidence = confidenceOf(fail)
		r.Reason = fmt.Sprintf("below the range: even %s %s missed the budgets (%s); capacity is under %s %s, lower sweep.search.between",
			fmtVal(g.low), unit, strings.Join(fail.Missed, ", "), fmtVal(g.low), unit)
		switch fail.Decided {
		case "indeterminate":
			r.Reason = fmt.Sprintf("indeterminate at the low end: at %s %s the budgets could not be told met or missed (their 95 %% intervals straddle the limits); longer probes (more requests) or a lower sweep.search.between can decide",
				fmtVal(g.low), unit)
		case "run failed", "over-saturated":
			r.Reason = fmt.Sprintf("below the range: the run at %s %s %s; capacity is under %s %s, or the server does not work",
				fmtVal(g.low), unit, fail.Decided, fmtVal(g.low), unit)
		}
	case SearchAboveRange:
		r.Confidence = confidenceOf(pass)
		r.Reason = fmt.Sprintf("above the range: even %s %s met the budgets; capacity is at least %s %s, raise sweep.search.between",
			fmtVal(g.high), unit, fmtVal(g.high), unit)
	default:
		r.Confidence = ConfidenceLow
		switch {
		case pass != nil && fail != nil:
			r.Reason = fmt.Sprintf("interrupted: the capacity lies in [%s, %s) %s", fmtVal(pass.Value), fmtVal(fail.Value), unit)
		case pass != nil:
			r.Reason = fmt.Sprintf("interrupted: %s %s passed; the high end was not probed", fmtVal(pass.Value), unit)
		default:
			r.Reason = "interrupted before a probe was decided"
		}
	}
}

func confidenceOf(pr *Probe) string {
	switch {
	case pr == nil:
		return ConfidenceLow
	case pr.Decided == "indeterminate":
		return ConfidenceIndeterminate
	case pr.FewSamples:
		return ConfidenceLow
	case pr.Decided == "majority":
		return ConfidenceMedium
	}
	return ConfidenceHigh
}

func passWord(pr *Probe) string {
	if pr.Pass {
		return "passed"
	}
	return "failed"
}

// fmtVal formats a searched value without float noise.
func fmtVal(x float64) string { return fmtMs(math.Round(x*1e6) / 1e6) }

// probe decides one value: it runs it once, and again, up to the
// search's repeats, while it is near the boundary and the majority is not
// yet certain.
func (p *Plan) probe(ctx context.Context, opts Options, s *Summary, point int, value float64, log func(string), save func()) Probe {
	sr := p.Search
	base := &p.Jobs[point]
	valStr := scenario.FormatSearchValue(value, sr.Integer())
	vals := append(slices.Clone(base.Values), Value{Name: sr.Parameter, Value: valStr})
	pr := Probe{Value: value, Label: label(vals)}
	derived := base.Scenario.Clone()
	if err := derived.Set(sr.Parameter, valStr); err != nil {
		// Validate checked both ends of the range; a value between them
		// cannot fail, but say so if it does.
		pr.Decided, pr.Failed = "run failed", 1
		pr.Missed = []string{err.Error()}
		return pr
	}
	var ms []*Metrics
	var passes, fails, undecided int
	for r := 1; r <= max(sr.Repeats, 1); r++ {
		dir := dirName(pr.Label)
		if r > 1 {
			dir += fmt.Sprintf(",repeat=%d", r)
		}
		sc := derived
		if r > 1 {
			sc = reseeded(derived, r)
		}
		j := &Job{Point: point, Values: vals, Repeat: r, Label: pr.Label, Dir: dir, Scenario: sc}
		prefix := fmt.Sprintf("[probe] %s", pr.Label)
		if r > 1 {
			prefix += fmt.Sprintf(" (run %d)", r)
		}
		rec, saturated := p.probeRun(ctx, opts, j, prefix, log)
		s.Runs = append(s.Runs, rec)
		save()
		pr.Dirs = append(pr.Dirs, dir)
		if rec.Metrics != nil {
			ms = append(ms, rec.Metrics)
		}
		for _, m := range rec.Missed {
			if !slices.Contains(pr.Missed, m) {
				pr.Missed = append(pr.Missed, m)
			}
		}
		if ctx.Err() != nil && !saturated {
			pr.Decided = "interrupted"
			break
		}
		switch {
		case saturated:
			fails++
			pr.Decided = "over-saturated"
		case rec.Status == StatusFailed:
			fails++
			pr.Decided = "run failed"
		case rec.Inconclusive:
			undecided++
		default:
			ok := rec.BudgetsPass != nil && *rec.BudgetsPass
			if ok {
				passes++
			} else {
				fails++
			}
			near, few := nearBoundary(rec.Checks, ok, sr.Margin)
			pr.FewSamples = few && (r == 1 || pr.FewSamples)
			for _, n := range near {
				if !slices.Contains(pr.Near, n) {
					pr.Near = append(pr.Near, n)
				}
			}
			if r == 1 && len(near) == 0 {
				pr.Decided = "clear"
			}
		}
		if pr.Decided == "clear" || pr.Decided == "over-saturated" || pr.Decided == "run failed" {
			break
		}
		// Stop as soon as the majority of Repeats runs is certain.
		need := sr.Repeats/2 + 1
		if passes >= need || fails >= (sr.Repeats+1)/2 {
			break
		}
	}
	pr.Passed, pr.Failed = passes, fails+undecided
	pr.Pass = passes > fails+undecided
	switch {
	case pr.Decided != "":
	case passes == 0 && fails == 0 && undecided > 0:
		pr.Decided = "indeterminate"
	case passes > 0 && fails+undecided > 0:
		pr.Decided = "majority"
	default:
		pr.Decided = "unanimous"
	}
	pr.Metrics = meanMetrics(ms)
	return pr
}

// reseeded is the scenario of a probe's r-th run. A repeat replays the
// same workload, so that only the server's noise differs, as it does
// between two runs against a real server; the simulator, whose noise is
// seeded, gets its next seed (sim://…?seed=), or it would reproduce the
// first run exactly.
func reseeded(sc *scenario.Scenario, r int) *scenario.Scenario {
	u, err := simurl.Parse(sc.SimTarget())
	if err != nil {
		return sc // not the simulator
	}
	cfg, err := sim.ConfigFromURL(u.String())
	if err != nil {
		return sc
	}
	out := sc.Clone()
	if err := out.Set("target.url", u.With("seed", strconv.FormatUint(cfg.Seed+uint64(r-1), 10)).String()); err != nil {
		return sc
	}
	return out
}

// probeRun makes one run of a probe, watching its records for plain
// over-saturation when the search stops such probes early. saturated is
// true when it was stopped for that.
func (p *Plan) probeRun(ctx context.Context, opts Options, j *Job, prefix string, log func(string)) (rec RunRecord, saturated bool) {
	logf := func(format string, args ...any) { log(prefix + ": " + fmt.Sprintf(format, args...)) }
	if opts.Resume && ctx.Err() == nil && j.Done(opts.Dir) {
		if r, ok := p.resumed(opts.Dir, j); ok {
			logf("%s", describe(&r))
			return r, false
		}
	}
	probeCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var watch func(results.Record, int)
	if t, _ := p.Search.Target(); p.Search.Saturation() && j.Scenario.Load.Stages[t.Stage].Open() {
		w := newSaturation(t.Stage, &j.Scenario.Load.Stages[t.Stage])
		watch = func(r results.Record, inFlight int) {
			if !saturated && w.add(r, inFlight) {
				saturated = true
				cancel(ErrOverSaturated)
			}
		}
	}
	runOpts := opts
	probeRunner := opts.Probe
	runOpts.Run = func(ctx context.Context, sc *scenario.Scenario, dir string) (*report.Summary, error) {
		return probeRunner(ctx, sc, dir, watch)
	}
	rec = p.runJob(probeCtx, runOpts, j, logf)
	if saturated {
		rec.Status = StatusOverSaturated
		rec.Error = ErrOverSaturated.Error() + " (stopped early)"
		f := false
		rec.BudgetsPass = &f
	}
	logf("%s", describe(&rec))
	return rec, saturated
}

// nearBoundary says why a run's verdict might flip with noise: for a
// passing run, any check within margin of its limit; for a failing run,
// every failed check within margin (one clear miss decides it). few is
// true when the deciding percentiles had too few samples.
func nearBoundary(checks []CheckMargin, pass bool, margin float64) (near []string, few bool) {
	var deciding []CheckMargin
	for _, c := range checks {
		if pass || !c.Pass {
			deciding = append(deciding, c)
		}
	}
	if len(deciding) == 0 {
		return nil, false
	}
	allNear, allFew := true, true
	anyFew := false
	for _, c := range deciding {
		isNear := c.Margin != nil && math.Abs(*c.Margin) < margin
		isFew := c.MinSamples > 0 && c.Samples < int64(c.MinSamples)
		if isNear {
			near = append(near, fmt.Sprintf("%s within %.0f %% of its limit", c.Name, math.Abs(*c.Margin)*100))
		}
		if isFew {
			anyFew = true
			near = append(near, fmt.Sprintf("%s from %d samples (fewer than %d)", c.Name, c.Samples, c.MinSamples))
		}
		allNear = allNear && (isNear || isFew)
		allFew = allFew && isFew
	}
	if pass {
		return near, anyFew
	}
	if !allNear {
		return nil, false // a clear miss decides a failing run
	}
	return near, allFew
}

// CheckMargin is one budget check of a run, as a search weighs it.
type CheckMargin struct {
	Name string `json:"name"`
	Pass bool   `json:"pass"`
	// Margin is the headroom as a fraction of the limit (negative when
	// missed); nil when the figure was not measured or the limit is 0.
	Margin     *float64 `json:"margin,omitempty"`
	Samples    int64    `json:"samples"`
	MinSamples int      `json:"min_samples,omitempty"`
	// Status is the check's report.Check status ("met", "missed",
	// "inconclusive", "not measured"); Measured, Limit and Interval (its
	// 95 % interval, when it has one) are the check's, in its unit, so a
	// verdict can be cited with its evidence.
	Status   string      `json:"status,omitempty"`
	Measured *float64    `json:"measured,omitempty"`
	Limit    float64     `json:"limit"`
	Op       string      `json:"op,omitempty"`
	Unit     string      `json:"unit,omitempty"`
	Interval *[2]float64 `json:"interval,omitempty"`
}

// checkMargins reads the checks of a verdict.
func checkMargins(v *report.Verdict) []CheckMargin {
	if v == nil {
		return nil
	}
	out := make([]CheckMargin, 0, len(v.Checks))
	for _, c := range v.Checks {
		cm := CheckMargin{Name: c.Name, Pass: c.Pass, Samples: c.Samples, MinSamples: c.MinSamples,
			Status: c.Status, Measured: c.Measured, Limit: c.Limit, Op: c.Op, Unit: c.Unit, Interval: c.Interval}
		if c.Margin != nil && c.Limit != 0 {
			m := math.Round(*c.Margin/math.Abs(c.Limit)*1e4) / 1e4
			cm.Margin = &m
		}
		out = append(out, cm)
	}
	return out
}

// ProbeFunc runs one probe of a search like RunFunc, handing every record
// to observe (run.Options.Observe) when observe is not nil, so that an
// over-saturated probe can be stopped early by canceling ctx.
type ProbeFunc func(ctx context.Context, sc *scenario.Scenario, dir string, observe func(results.Record, int)) (*report.Summary, error)

// defaultProbe runs a probe with run.Run; in-flight requests of a stopped
// probe are canceled at once (an over-saturated server has nothing useful
// left to say).
func defaultProbe(virtual bool) ProbeFunc {
	return func(ctx context.Context, sc *scenario.Scenario, dir string, observe func(results.Record, int)) (*report.Summary, error) {
		return run.Run(ctx, sc, run.Options{Dir: dir, Observe: observe, Grace: -1, Virtual: virtual})
	}
}

// searchPoints are the sweep's points of a search: one per probed value,
// by combination then value, with the means of its runs.
func (s *Summary) searchPoints() []Point {
	var out []Point
	for _, r := range s.Search {
		probes := slices.Clone(r.Probes)
		slices.SortFunc(probes, func(a, b Probe) int { return cmpFloat(a.Value, b.Value) })
		for _, pr := range probes {
			vals := map[string]string{}
			for k, v := range r.Values {
				vals[k] = v
			}
			vals[r.Parameter] = fmtVal(pr.Value)
			met := pr.Pass
			pt := Point{Label: pr.Label, Values: vals, Runs: pr.Passed + pr.Failed, Metrics: pr.Metrics, BudgetsMet: &met, Missed: pr.Missed,
				Verdict: report.StatusMissed}
			switch {
			case pr.Pass:
				pt.Verdict = report.StatusMet
			case pr.Decided == "indeterminate":
				pt.Verdict = report.StatusInconclusive
			}
			for _, run := range s.Runs {
				if run.Label == pr.Label && run.Status == StatusFailed {
					pt.Failed++
					pt.Runs--
				}
			}
			out = append(out, pt)
		}
	}
	return out
}

// searchRecommendation names the combination with the highest capacity
// (the only one without parameters); ties go to the first.
func searchRecommendation(rs []SearchResult) Recommendation {
	rec := Recommendation{Basis: "capacity"}
	best := -1
	var why []string
	for i, r := range rs {
		if r.Answer == nil {
			why = append(why, orAll(r.Label)+": "+r.Reason)
			continue
		}
		if best < 0 || *r.Answer > *rs[best].Answer {
			best = i
		}
	}
	if best < 0 {
		rec.Reason = "no capacity found: " + strings.Join(why, "; ")
		return rec
	}
	r := rs[best]
	rec.Label, rec.Values = r.Label, r.Values
	if len(rs) == 1 {
		rec.Reason = r.Reason
		return rec
	}
	rec.Reason = fmt.Sprintf("%s has the highest capacity: %s", r.Label, r.Reason)
	return rec
}

// writeSearchText writes a search's terminal table: every probe, by
// combination and value, then each combination's answer.
func writeSearchText(w io.Writer, s *Summary) error {
	var b strings.Builder
	fmt.Fprintf(&b, "search %q of %s (%d runs)\n", s.Scenario, s.Search[0].Parameter, len(s.Runs))
	rows := [][]string{{"value", "runs", "TTFT p50", "p99", "ITL p50", "p99", "out tok/s", "budgets", "decided"}}
	for _, r := range s.Search {
		probes := slices.Clone(r.Probes)
		slices.SortFunc(probes, func(a, b Probe) int { return cmpFloat(a.Value, b.Value) })
		for _, pr := range probes {
			row := []string{pr.Label, fmt.Sprintf("%d", pr.Passed+pr.Failed)}
			if m := pr.Metrics; m != nil {
				row = append(row, num1(m.TTFTP50), num1(m.TTFTP99), num1(m.ITLP50), num1(m.ITLP99), num1(m.OutputTokensPerSec))
			} else {
				row = append(row, "-", "-", "-", "-", "-")
			}
			verdict := "FAIL"
			if pr.Pass {
				verdict = "pass"
			}
			if pr.Passed+pr.Failed > 1 {
				verdict += fmt.Sprintf(" %d/%d", pr.Passed, pr.Passed+pr.Failed)
			}
			row = append(row, verdict, pr.Decided)
			rows = append(rows, row)
		}
	}
	b.WriteString(textable.Format(rows, false))
	b.WriteString("(latencies in ms, means over each value's runs)\n")
	for _, r := range s.Search {
		fmt.Fprintf(&b, "%s: %s\n", orAll(r.Label), r.Reason)
	}
	if len(s.Search) > 1 && s.Recommendation.Label != "" {
		fmt.Fprintf(&b, "recommended: %s\n", s.Recommendation.Label)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
