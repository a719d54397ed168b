package twin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
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
	"github.com/servebench/servebench/sweep"
)

// bandZ is the half-width of a prediction's band in standard deviations
// (a 95 % interval under a normal approximation).
const bandZ = 1.96

// Figures are predicted (or measured) figures of a run or a value;
// latencies in milliseconds.
type Figures struct {
	TTFTP50            float64 `json:"ttft_p50_ms"`
	TTFTP99            float64 `json:"ttft_p99_ms"`
	ITLP50             float64 `json:"itl_p50_ms"`
	ITLP99             float64 `json:"itl_p99_ms"`
	TPOTP50            float64 `json:"tpot_p50_ms"`
	E2EP50             float64 `json:"e2e_p50_ms"`
	OutputTokensPerSec float64 `json:"output_tokens_per_s"`
	RequestsPerSec     float64 `json:"requests_per_s"`
	// JoulesPerToken and USDPerMTok are predicted when the twin has a
	// power model (fitted from GPU telemetry) and the scenario a price;
	// 0 otherwise.
	JoulesPerToken float64 `json:"joules_per_token,omitempty"`
	USDPerMTok     float64 `json:"usd_per_mtok,omitempty"`
	// Latencies are the p50 and p99 of the metric table's latency metrics
	// that have no field above (report.Stage.Latencies,
	// sweep.Metrics.Latencies), by metric and stat ("NAME_ms.p99"): a
	// metric added to the table is predicted, with its band, and held
	// out without a line here. Absent with today's table.
	Latencies map[string]float64 `json:"latencies,omitempty"`
}

// figureNames are the figures in the order tables show them.
var figureNames = []string{"ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms", "tpot_p50_ms", "e2e_p50_ms", "output_tokens_per_s", "requests_per_s",
	"joules_per_token", "usd_per_mtok"}

func (f *Figures) fields() []*float64 {
	return []*float64{&f.TTFTP50, &f.TTFTP99, &f.ITLP50, &f.ITLP99, &f.TPOTP50, &f.E2EP50, &f.OutputTokensPerSec, &f.RequestsPerSec,
		&f.JoulesPerToken, &f.USDPerMTok}
}

// names returns the names of f's figures: figureNames, then the keys of
// Latencies, sorted.
func (f *Figures) names() []string {
	return append(slices.Clone(figureNames), slices.Sorted(maps.Keys(f.Latencies))...)
}

// get returns the figure called name (0 when f has none).
func (f *Figures) get(name string) float64 {
	if i := slices.Index(figureNames, name); i >= 0 {
		return *f.fields()[i]
	}
	return f.Latencies[name]
}

// set sets the figure called name.
func (f *Figures) set(name string, v float64) {
	if i := slices.Index(figureNames, name); i >= 0 {
		*f.fields()[i] = v
		return
	}
	if f.Latencies == nil {
		f.Latencies = map[string]float64{}
	}
	f.Latencies[name] = v
}

// clone returns a copy of f that shares no map with it.
func (f Figures) clone() Figures {
	f.Latencies = maps.Clone(f.Latencies)
	return f
}

func figuresOf(m *sweep.Metrics) Figures {
	return Figures{TTFTP50: m.TTFTP50, TTFTP99: m.TTFTP99, ITLP50: m.ITLP50, ITLP99: m.ITLP99, TPOTP50: m.TPOTP50,
		E2EP50: m.E2EP50, OutputTokensPerSec: m.OutputTokensPerSec, RequestsPerSec: m.RequestsPerSec,
		JoulesPerToken: m.JoulesPerToken, USDPerMTok: m.USDPerMTok, Latencies: maps.Clone(m.Latencies)}
}

func figuresOfStage(st *report.Stage) Figures {
	f := Figures{TTFTP50: st.TTFT.P50, TTFTP99: st.TTFT.P99, ITLP50: st.ITL.P50, ITLP99: st.ITL.P99, TPOTP50: st.TPOT.P50,
		E2EP50: st.E2E.P50, OutputTokensPerSec: st.OutputTokensPerSec, RequestsPerSec: st.RequestsPerSec}
	if e := st.Efficiency; e != nil {
		f.JoulesPerToken = e.JoulesPerToken
		if e.Cost != nil {
			f.USDPerMTok = e.Cost.USDPerMTok
		}
	}
	for name, d := range st.Latencies {
		if d != nil && d.Count > 0 {
			f.set(name+".p50", d.P50)
			f.set(name+".p99", d.P99)
		}
	}
	return f
}

// powerVar is the relative variance of a GPU's power at mean power w
// (watts a GPU) from the power model's fit: its occupancy x = (w − idle)
// / (max − idle), and P = (1 − x)·idle + x·max with the fit's
// covariance, and the line's miss of the fitted windows or, when larger,
// of the calibration stages (sim.PowerFit.StageMiss). Step
// costs' uncertainty is in the perturbed twins; this is the power law's
// own, added to joules per token's band.
func powerVar(cfg sim.Config, w float64) float64 {
	k := cfg.Calibration
	if k == nil || k.Power == nil || len(k.Power.Covariance) != 2 || w <= 0 || cfg.MaxPowerW <= cfg.IdlePowerW {
		return 0
	}
	x := math.Min(1, math.Max(0, (w-cfg.IdlePowerW)/(cfg.MaxPowerW-cfg.IdlePowerW)))
	c := k.Power.Covariance
	v := (1-x)*(1-x)*c[0][0] + 2*x*(1-x)*c[0][1] + x*x*c[1][1]
	// The law's own miss, at the larger of its two scales: a window's
	// spread about the line (a linear law in the requests batched leaves
	// out what else moves the power), and the twin's in-sample miss of
	// whole calibration stages (what a predicted stage misses by even
	// when its occupancy is right).
	v += max(k.Power.ResidualW*k.Power.ResidualW, k.Power.StageMiss*k.Power.StageMiss*w*w)
	return v / (w * w)
}

// PredictedPoint is one value of a predicted sweep (or search probe):
// the central prediction and its band.
type PredictedPoint struct {
	Label     string            `json:"label"`
	Values    map[string]string `json:"values,omitempty"`
	Central   Figures           `json:"central"`
	Low       Figures           `json:"low"`
	High      Figures           `json:"high"`
	Pass      *bool             `json:"budgets_met,omitempty"`
	Missed    []string          `json:"missed,omitempty"`
	BandRuns  int               `json:"band_runs"`  // sigma-point runs that had this value
	BandFails int               `json:"band_fails"` // of which missed the budgets
	// Extrapolated says why the value lies beyond what the twin was
	// calibrated on, or rests on a setting it assumed ("up to 8 requests
	// at once, calibrated on 1–4"); such a value has no band (Low and
	// High are the central figures): its error is not the fit's.
	Extrapolated string `json:"extrapolated,omitempty"`
}

// PredictedSearch is a search run on the twin, its answer with a band.
type PredictedSearch struct {
	sweep.SearchResult
	// AnswerLow and AnswerHigh bound the answer over the fit's
	// uncertainty (the sigma-point searches' spread).
	AnswerLow  *float64 `json:"answer_low,omitempty"`
	AnswerHigh *float64 `json:"answer_high,omitempty"`
}

// Prediction is a scenario's sweep or search run on a twin in virtual
// time.
type Prediction struct {
	Scenario   string            `json:"scenario"`
	Twin       string            `json:"twin"`
	Parameters []string          `json:"parameters,omitempty"`
	Points     []PredictedPoint  `json:"points"`
	Searches   []PredictedSearch `json:"search,omitempty"`
	// BandRuns is how many perturbed twins ran (two per fitted direction
	// of the covariance); 0 without a band.
	BandRuns int `json:"band_runs"`
	// Band says what the bands are: 95 % intervals over the fit's
	// uncertainty and the run-to-run variation the calibration measured,
	// or over the fit's alone ("fit-only") when it measured none.
	Band  string   `json:"band,omitempty"`
	Notes []string `json:"notes,omitempty"`
	// Summary is the central sweep (sweep.json in the output directory).
	Summary *sweep.Summary `json:"-"`
}

// PredictOptions configure Predict.
type PredictOptions struct {
	// Dir receives the central prediction: a run directory per value (or
	// probe) and sweep.json, sweep.csv, sweep.png and sweep.html. It is
	// created if needed.
	Dir string
	// NoBand skips the band (one sweep instead of 2k+1).
	NoBand bool
	// Log receives one line per run; nil discards.
	Log io.Writer
}

// Predict runs the scenario's sweep or search (or the scenario once,
// without a sweep block) on the twin in virtual time, then again on twins
// perturbed along each principal direction of the calibration's
// covariance by one standard deviation either way, and gives every figure
// a 95 % band propagated from those runs (a linear approximation). The
// covariance holds the fit's uncertainty and, when the calibration had
// repeated loads, the run-to-run variation they showed; the band's width
// then uses Student's t for that variation's degrees of freedom. A value
// beyond what the twin was calibrated on (more requests at once, longer
// prompts or responses) or resting on an assumed setting is marked
// extrapolated and gets no band. A launched server (sweep.server) is
// replaced by the twin: its parameters must be simulator settings
// (vLLM's names).
func Predict(ctx context.Context, sc *scenario.Scenario, twinPath string, opts PredictOptions) (*Prediction, error) {
	abs, err := filepath.Abs(twinPath)
	if err != nil {
		return nil, err
	}
	cfg, err := sim.LoadConfig(abs)
	if err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	base := simurl.URL{File: abs}
	pred, sets, err := predictCentral(ctx, sc, cfg, base, opts.Dir, log)
	if err != nil {
		return nil, err
	}
	pred.Twin = twinPath
	defer func() {
		if sc.Sweep == nil {
			// One value: named after the scenario, not the twin's seed
			// the plan carried it by.
			pred.Parameters = nil
			for i := range pred.Points {
				pred.Points[i].Label, pred.Points[i].Values = sc.Name, nil
			}
		}
	}()
	markExtrapolated(pred, cfg, opts.Dir)
	if opts.NoBand {
		return pred, nil
	}
	if len(sigmaPoints(cfg)) == 0 {
		pred.Notes = append(pred.Notes, "the twin has no covariance (no calibration block): no band")
		return pred, nil
	}
	return pred, predictBand(ctx, pred, sc, cfg, base, sets, opts.Dir, log)
}

// predictCentral runs the scenario on the twin itself into dir.
func predictCentral(ctx context.Context, sc *scenario.Scenario, cfg sim.Config, base simurl.URL, dir string, log io.Writer) (*Prediction, []string, error) {
	pred := &Prediction{Scenario: sc.Name}
	sets := []string{"target.url=" + base.String()}
	if sc.Sweep != nil && sc.Sweep.Server != nil {
		sets = append(sets, "sweep.server=")
		pred.Notes = append(pred.Notes, "the sweep's launched server is replaced by the twin; its parameters are the twin's settings")
	}
	if sc.Sweep == nil {
		// One value: the scenario as it is.
		sets = append(sets, "sweep.parameters.seed="+strconv.FormatUint(cfg.Seed, 10))
	}
	central := sc.Clone()
	if err := central.Override(sets...); err != nil {
		return nil, nil, err
	}
	if central.Sweep.Search == nil {
		central.Sweep.Repeats = 1
	}
	s, err := predictSweep(ctx, central, dir, false, log)
	if err != nil {
		return nil, nil, err
	}
	pred.Summary = s
	pred.Parameters = s.Parameters
	for _, p := range s.Points {
		if p.Metrics == nil {
			continue
		}
		f := figuresOf(p.Metrics)
		pred.Points = append(pred.Points, PredictedPoint{Label: p.Label, Values: p.Values, Central: f, Low: f.clone(), High: f.clone(),
			Pass: p.BudgetsMet, Missed: p.Missed})
	}
	for _, r := range s.Search {
		pred.Searches = append(pred.Searches, PredictedSearch{SearchResult: r})
	}
	return pred, sets, nil
}

// bandAcc accumulates one value's half-differences along the sigma
// points.
type bandAcc struct {
	sq        map[string]float64 // by figure name (Figures.names)
	runs, bad int
}

// predictBand runs the perturbed twins and sets every point's band (but
// an extrapolated one's) and every search's spread.
func predictBand(ctx context.Context, pred *Prediction, sc *scenario.Scenario, cfg sim.Config, base simurl.URL, sets []string, dir string, log io.Writer) error {
	dirs := sigmaPoints(cfg)
	bandDir, err := os.MkdirTemp(dir, ".band-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bandDir)
	accs := map[string]*bandAcc{}
	answers := make([][]float64, len(pred.Searches))
	for i, d := range dirs {
		var sums [2]*sweep.Summary
		for k, sign := range []float64{1, -1} {
			s, err := perturbedRun(ctx, sc, cfg, base, sets, d, sign, filepath.Join(bandDir, fmt.Sprintf("%d-%d", i, k)))
			if err != nil {
				return fmt.Errorf("band: %w", err)
			}
			fmt.Fprintf(log, "band: twin %d of %d\n", 2*i+k+1, 2*len(dirs))
			sums[k] = s
			for si, r := range s.Search {
				if si < len(answers) && r.Answer != nil {
					answers[si] = append(answers[si], *r.Answer)
				}
			}
		}
		pred.BandRuns += 2
		accumulate(accs, sums)
	}
	z, band := bandWidth(cfg)
	pred.Band = band
	for i := range pred.Points {
		p := &pred.Points[i]
		a := accs[p.Label]
		if a == nil {
			continue
		}
		p.BandRuns, p.BandFails = a.runs, a.bad
		if p.Extrapolated != "" {
			continue
		}
		p.setBand(a, z, cfg)
	}
	for i, as := range answers {
		if len(as) == 0 || pred.Searches[i].Answer == nil {
			continue
		}
		lo, hi := slices.Min(as), slices.Max(as)
		c := *pred.Searches[i].Answer
		lo, hi = min(lo, c), max(hi, c)
		pred.Searches[i].AnswerLow, pred.Searches[i].AnswerHigh = &lo, &hi
	}
	return nil
}

// setBand sets p's Low and High from the half-differences a holds, z
// standard deviations wide, every figure of the central prediction
// (Figures.names) alike; joules per token adds the power law's own
// variance.
func (p *PredictedPoint) setBand(a *bandAcc, z float64, cfg sim.Config) {
	for _, name := range p.Central.names() {
		c, sq := p.Central.get(name), a.sq[name]
		if name == "joules_per_token" {
			// Mean power a GPU: joules per token × tokens per second.
			w := c * p.Central.OutputTokensPerSec / float64(cfg.NumGPUs())
			sq += c * c * powerVar(cfg, w)
		}
		half := z * math.Sqrt(sq)
		p.Low.set(name, max(c-half, 0))
		p.High.set(name, c+half)
	}
}

// perturbedRun runs the scenario on the twin moved by sign·d along the
// cost coefficients, quietly, into dir.
func perturbedRun(ctx context.Context, sc *scenario.Scenario, cfg sim.Config, base simurl.URL, sets []string, d []float64, sign float64, dir string) (*sweep.Summary, error) {
	u := base
	for j, name := range Coefficients {
		if d[j] != 0 {
			u = u.With(name, strconv.FormatFloat(max(coefficient(cfg, name)+sign*d[j], 0), 'g', 8, 64))
		}
	}
	pert := sc.Clone()
	s2 := slices.Clone(sets)
	s2[0] = "target.url=" + u.String()
	if !needsScrapes(sc.Budgets) && !cfg.PowerModel() {
		// The band compares figures the client measures: the virtual
		// /metrics pages would only cost time. (With a power model,
		// joules per token is read from the GPU pages: a perturbed twin
		// without them would measure none, and its band would leave out
		// how energy per token moves with the speed.)
		s2 = append(s2, "scrape.enabled=false")
	}
	if err := pert.Override(s2...); err != nil {
		return nil, err
	}
	if pert.Sweep.Search == nil {
		pert.Sweep.Repeats = 1
	}
	return predictSweep(ctx, pert, dir, true, io.Discard)
}

// accumulate adds the half-differences of a pair of perturbed sweeps.
func accumulate(accs map[string]*bandAcc, sums [2]*sweep.Summary) {
	plus, minus := pointsByLabel(sums[0]), pointsByLabel(sums[1])
	for label, pp := range plus {
		mp, ok := minus[label]
		if !ok {
			continue
		}
		a := accs[label]
		if a == nil {
			a = &bandAcc{sq: map[string]float64{}}
			accs[label] = a
		}
		fp, fm := figuresOf(pp.Metrics), figuresOf(mp.Metrics)
		for _, name := range fp.names() {
			h := (fp.get(name) - fm.get(name)) / 2
			a.sq[name] += h * h
		}
		a.runs += 2
		for _, p := range []sweep.Point{pp, mp} {
			if p.BudgetsMet != nil && !*p.BudgetsMet {
				a.bad++
			}
		}
	}
}

// bandWidth returns the half-width of a 95 % band in standard deviations
// and says what the band is: Student's t for the run-to-run variation's
// degrees of freedom when the calibration measured one, else the normal
// 1.96 over the fit's uncertainty alone.
func bandWidth(cfg sim.Config) (float64, string) {
	k := cfg.Calibration
	if k != nil && k.BetweenRuns != nil && k.BetweenRuns.DF > 0 {
		br := k.BetweenRuns
		z := tQuantile975(br.DF)
		return z, fmt.Sprintf("95 %% over the fit's uncertainty and the run-to-run variation of %d repeated stages (%.1f %%, t = %.2f for %d degrees of freedom)",
			br.Instances, 100*br.RelSD, z, br.DF)
	}
	return bandZ, "95 % over the fit's uncertainty only (fit-only: the calibration repeated no load, so the run-to-run variation of a real server is not in it)"
}

// tQuantile975 is Student's t 97.5th percentile for df degrees of
// freedom: exact to three decimals for 1 and 2, and the Cornish–Fisher
// expansion around the normal's 1.96 from 3 on (within 1 %).
func tQuantile975(df int) float64 {
	switch {
	case df <= 1:
		return 12.706
	case df == 2:
		return 4.303
	}
	z, n := bandZ, float64(df)
	return z + (z*z*z+z)/(4*n) + (5*math.Pow(z, 5)+16*z*z*z+3*z)/(96*n*n) + (3*math.Pow(z, 7)+19*math.Pow(z, 5)+17*z*z*z-15*z)/(384*n*n*n)
}

// markExtrapolated marks every predicted value that lies beyond what the
// twin was calibrated on (CalibratedRange: more requests decoding at once,
// longer prompts or responses) or rests on a setting the calibration
// assumed; it reads what each value's central run did from its summary
// in dir.
func markExtrapolated(pred *Prediction, cfg sim.Config, dir string) {
	k := cfg.Calibration
	if k == nil || k.Range == nil || pred.Summary == nil {
		return
	}
	for i := range pred.Points {
		p := &pred.Points[i]
		sum := centralSummary(pred.Summary, p.Label, dir)
		if sum == nil {
			continue
		}
		p.Extrapolated = extrapolation(k, cfg.MaxNumSeqs, sum)
	}
}

// centralSummary reads the summary of the first central run of a value.
func centralSummary(s *sweep.Summary, label, dir string) *report.Summary {
	for _, r := range s.Runs {
		if r.Label != label || r.Dir == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, r.Dir, "summary.json"))
		if err != nil {
			return nil
		}
		var sum report.Summary
		if json.Unmarshal(b, &sum) != nil {
			return nil
		}
		return &sum
	}
	return nil
}

// extrapolation says why a run of the twin lies beyond its calibration,
// or "".
func extrapolation(k *sim.Calibration, maxNumSeqs int, sum *report.Summary) string {
	r := k.Range
	var why []string
	// The requests the twin ran at once: those in flight, up to its batch
	// limit (the scrapes' running gauge is a mean over a window, which
	// hides a short run's peak).
	batch := sum.Overall.PeakInFlight
	batch = min(batch, maxNumSeqs)
	if batch > r.BatchMax {
		s := fmt.Sprintf("up to %d requests at once, calibrated on %d–%d", batch, r.BatchMin, r.BatchMax)
		if note, ok := k.Assumed["max_num_seqs"]; ok {
			s += fmt.Sprintf(", and the batch limit is assumed (max_num_seqs %d: %s)", maxNumSeqs, note)
		}
		why = append(why, s)
	}
	if c := sum.Overall.Tokens.PromptPerRequest; c != nil && r.PromptMax > 0 && c.Max > int64(math.Ceil(1.1*float64(r.PromptMax))) {
		why = append(why, fmt.Sprintf("prompts up to %d tokens, calibrated up to %d", c.Max, r.PromptMax))
	}
	if c := sum.Overall.Tokens.OutputPerRequest; c != nil && r.OutputMax > 0 && c.Max > int64(math.Ceil(1.1*float64(r.OutputMax))) {
		why = append(why, fmt.Sprintf("responses up to %d tokens, calibrated up to %d", c.Max, r.OutputMax))
	}
	for _, name := range Coefficients {
		if note, ok := k.Assumed[name]; ok {
			why = append(why, fmt.Sprintf("%s is assumed (%s)", name, note))
		}
	}
	return strings.Join(why, "; ")
}

// needsScrapes reports whether budgets judge server metrics (preemptions,
// KV-cache usage), which come from the scrapes.
func needsScrapes(b *results.Budgets) bool {
	if b == nil {
		return false
	}
	sets := []*results.BudgetSet{b.Overall}
	for _, s := range b.Stages {
		sets = append(sets, s)
	}
	for _, s := range sets {
		if s.Get("preemptions") != nil || s.Get("kv_usage") != nil {
			return true
		}
	}
	return false
}

func pointsByLabel(s *sweep.Summary) map[string]sweep.Point {
	out := map[string]sweep.Point{}
	for _, p := range s.Points {
		if p.Metrics != nil {
			out[p.Label] = p
		}
	}
	return out
}

// coefficient reads a cost setting of cfg by name.
func coefficient(cfg sim.Config, name string) float64 {
	switch name {
	case StepOverhead:
		return cfg.StepOverheadUS
	case PerSeq:
		return cfg.PerSeqUS
	case PerKVToken:
		return cfg.PerKVTokenNS
	case PerPrefill:
		return cfg.PerPrefillTokenUS
	}
	return 0
}

// sigmaPoints are the directions to perturb the twin along: one standard
// deviation along each principal axis of the calibration's covariance,
// in Coefficients order.
func sigmaPoints(cfg sim.Config) [][]float64 {
	k := cfg.Calibration
	if k == nil || len(k.Covariance) == 0 {
		return nil
	}
	idx := make([]int, len(Coefficients))
	for i, name := range Coefficients {
		idx[i] = slices.Index(k.Coefficients, name)
	}
	cov := newMat(len(Coefficients))
	for i := range cov {
		for j := range cov {
			if idx[i] >= 0 && idx[j] >= 0 && idx[i] < len(k.Covariance) && idx[j] < len(k.Covariance[idx[i]]) {
				cov[i][j] = k.Covariance[idx[i]][idx[j]]
			}
		}
	}
	vals, vecs := eigenSym(cov)
	var out [][]float64
	for c, l := range vals {
		if l <= 0 {
			continue
		}
		d := make([]float64, len(vals))
		for r := range d {
			d[r] = math.Sqrt(l) * vecs[r][c]
		}
		out = append(out, d)
	}
	return out
}

// predictSweep executes one sweep of the twin in virtual time into dir.
// quiet runs (a band's) write each run's summary.json only; the central
// one writes each run's results.jsonl and summary.json, and the sweep's
// page (each run's plots are left out: `bench plot DIR` draws them).
func predictSweep(ctx context.Context, sc *scenario.Scenario, dir string, quiet bool, log io.Writer) (*sweep.Summary, error) {
	plan, err := sweep.NewPlan(ctx, sc)
	if err != nil {
		return nil, err
	}
	probe := func(ctx context.Context, sc *scenario.Scenario, dir string, observe func(results.Record, int)) (*report.Summary, error) {
		if !quiet {
			return run.Run(ctx, sc, run.Options{Dir: dir, Virtual: true, Observe: observe, Grace: -1, NoPlots: true})
		}
		cfg, err := sim.ConfigFromURL(sc.SimTarget())
		if err != nil {
			return nil, err
		}
		sum, err := run.Simulate(ctx, sc, cfg, observe)
		if sum != nil {
			err = errors.Join(err, run.WriteSummaryFiles(dir, sum))
		}
		return sum, err
	}
	one := func(ctx context.Context, sc *scenario.Scenario, dir string) (*report.Summary, error) {
		return probe(ctx, sc, dir, nil)
	}
	s, err := plan.Execute(ctx, sweep.Options{Dir: dir, Run: one, Probe: probe, Log: log, NoPlots: quiet})
	if s == nil {
		return nil, err
	}
	return s, err
}

// WritePrediction writes the prediction for people: per value, each
// figure with its band, then each search's answer.
func WritePrediction(w io.Writer, p *Prediction) error {
	var b strings.Builder
	fmt.Fprintf(&b, "prediction of %q on the twin %s (virtual time", p.Scenario, p.Twin)
	if p.BandRuns > 0 {
		fmt.Fprintf(&b, "; bands: %s, from %d perturbed twins", p.Band, p.BandRuns)
	}
	b.WriteString(")\n")
	band := func(c, lo, hi float64) string {
		if hi-lo < 1e-9*math.Max(1, c) {
			return fmtFig(c)
		}
		return fmt.Sprintf("%s [%s, %s]", fmtFig(c), fmtFig(lo), fmtFig(hi))
	}
	energy := false
	for _, pt := range p.Points {
		energy = energy || pt.Central.JoulesPerToken > 0 || pt.Central.USDPerMTok > 0
	}
	rows := [][]string{{"value", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "out tok/s", "budgets"}}
	if energy {
		rows[0] = append(rows[0][:6], "J/token", "$/1M tok", "budgets")
	}
	var extrapolated []string
	for _, pt := range p.Points {
		c, lo, hi := pt.Central, pt.Low, pt.High
		label := pt.Label
		if pt.Extrapolated != "" {
			label += " *"
			extrapolated = append(extrapolated, fmt.Sprintf("* %s: extrapolated, no band: %s\n", pt.Label, pt.Extrapolated))
		}
		verdict := "-"
		if pt.Pass != nil {
			verdict = map[bool]string{true: "pass", false: "FAIL"}[*pt.Pass]
			if pt.BandRuns > 0 && pt.BandFails > 0 && *pt.Pass {
				verdict += fmt.Sprintf(" (fails in %d of %d)", pt.BandFails, pt.BandRuns)
			} else if pt.BandRuns > 0 && pt.BandFails < pt.BandRuns && !*pt.Pass {
				verdict += fmt.Sprintf(" (passes in %d of %d)", pt.BandRuns-pt.BandFails, pt.BandRuns)
			}
		}
		row := []string{label, band(c.TTFTP50, lo.TTFTP50, hi.TTFTP50), band(c.TTFTP99, lo.TTFTP99, hi.TTFTP99),
			band(c.ITLP50, lo.ITLP50, hi.ITLP50), band(c.ITLP99, lo.ITLP99, hi.ITLP99),
			band(c.OutputTokensPerSec, lo.OutputTokensPerSec, hi.OutputTokensPerSec)}
		if energy {
			row = append(row, bandOrDash(band, c.JoulesPerToken, lo.JoulesPerToken, hi.JoulesPerToken), bandOrDash(band, c.USDPerMTok, lo.USDPerMTok, hi.USDPerMTok))
		}
		rows = append(rows, append(row, verdict))
	}
	var bb strings.Builder
	bb.WriteString(textable.Format(rows, false))
	b.WriteString(bb.String())
	b.WriteString("(latencies in ms)\n")
	for _, x := range extrapolated {
		b.WriteString(x)
	}
	for _, s := range p.Searches {
		name := s.Label
		if name == "" {
			name = "search"
		}
		fmt.Fprintf(&b, "%s: %s\n", name, s.Reason)
		switch {
		case s.AnswerLow == nil:
		case *s.AnswerLow == *s.AnswerHigh:
			fmt.Fprintf(&b, "  every perturbed twin found the same capacity (the fit's uncertainty is below the resolution)\n")
		default:
			fmt.Fprintf(&b, "  over the fit's uncertainty the capacity ranges %s to %s %s\n", fmtFig(*s.AnswerLow), fmtFig(*s.AnswerHigh), s.Unit)
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// bandOrDash is band's text, "-" for a figure not predicted.
func bandOrDash(band func(c, lo, hi float64) string, c, lo, hi float64) string {
	if c == 0 {
		return "-"
	}
	return band(c, lo, hi)
}

func fmtFig(x float64) string {
	switch {
	case x >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case x >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}
