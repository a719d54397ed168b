package twin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/servebench/servebench/internal/textable"
	"github.com/servebench/servebench/sim"
)

// Options are what the runs cannot show, given explicitly. Zero values are
// unknown.
type Options struct {
	// BlockSize is the KV-cache block size in tokens (default 16, vLLM's
	// CUDA default).
	BlockSize int
	// KVBlocks is the number of usable KV-cache blocks; 0 estimates it
	// from the scraped KV-cache usage.
	KVBlocks int
	// MaxNumSeqs is the batch limit; 0 reads it from the scrapes (running
	// while requests waited), else assumes vLLM's 256.
	MaxNumSeqs int
	// MaxNumBatchedTokens is the token budget per step; 0 assumes
	// DefaultBudget, or more when a step was seen to compute more.
	MaxNumBatchedTokens int
	// MaxModelLen is the context limit; 0 takes the KV capacity, at most
	// DefaultMaxModelLen.
	MaxModelLen int
	// Holdout names stages left out of the fit (see Holdout).
	Holdout []string
	// Name is the twin's preset name (default "twin").
	Name string
	// Origins says where a setting given above came from, by simulator
	// setting name (FromLog fills it); a setting without one was given
	// explicitly.
	Origins map[string]string
}

// Defaults for what the runs cannot show (vLLM's where it has one).
const (
	DefaultBlockSize   = 16
	DefaultMaxNumSeqs  = 256
	DefaultBudget      = 2048
	DefaultMaxModelLen = 131072
)

// Estimate is one fitted or assumed setting.
type Estimate struct {
	Name   string  // the simulator setting
	Value  float64 // in the setting's unit
	StdErr float64 // standard error; 0 when given or assumed
	Unit   string
	Source string // "fitted", "measured", "given" or "assumed"
	Note   string // how, in a few words
}

// RelErr is StdErr over Value (0 when either is 0).
func (e Estimate) RelErr() float64 {
	if e.Value == 0 || e.StdErr == 0 {
		return 0
	}
	return e.StdErr / math.Abs(e.Value)
}

// Result is a calibration: the estimates, the simulator configuration
// they make, and what the fit saw and lacked.
type Result struct {
	Sources   []string
	Config    sim.Config    // the twin, Calibration filled
	Estimates []Estimate    // cost coefficients first, then capacity
	Notes     []string      // what was missing or assumed
	Segments  int           // timed observations fitted
	Trimmed   int           // set aside as outliers
	Steps     int           // engine steps reconstructed
	Requests  int           // requests used
	Skipped   int           // records not usable (failed, not streamed)
	Batch     [2]int        // smallest and largest decode batch seen
	Tolerance time.Duration // the median time per token of a stream
	Holdout   []string
	// Between is the run-to-run variation among repeated loads; nil when
	// no load was repeated.
	Between *sim.BetweenRuns
	// power is the power model's fit; nil without GPU telemetry.
	power *sim.PowerFit
}

// Estimate returns the estimate of a setting by name.
func (r *Result) Estimate(name string) (Estimate, bool) {
	for _, e := range r.Estimates {
		if e.Name == name {
			return e, true
		}
	}
	return Estimate{}, false
}

// Calibrate fits the simulator to the runs in paths (results files or run
// directories). See the package documentation for the method.
func Calibrate(paths []string, opts Options) (*Result, error) {
	runs, err := readRuns(paths, opts.Holdout)
	if err != nil {
		return nil, err
	}
	if err := checkStages(runs, opts.Holdout); err != nil {
		return nil, err
	}
	res := &Result{Holdout: opts.Holdout}
	for _, rd := range runs {
		res.Sources = append(res.Sources, rd.path)
		res.Requests += len(rd.reqs)
		res.Skipped += rd.skipped
	}
	if res.Requests == 0 {
		return nil, errors.New("calibrate: no completed streamed request with chunk times in the runs (calibration needs target.stream: true)")
	}
	obs := observe(runs, opts.MaxNumBatchedTokens)
	fit, err := fitSegments(obs.segs, nil)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	res.Segments, res.Trimmed = fit.n, fit.trim
	res.Steps, res.Batch, res.Tolerance = obs.steps, [2]int{obs.minBatch, obs.maxBatch}, obs.tolerance

	cfg := sim.Defaults()
	cfg.Name = opts.Name
	if cfg.Name == "" {
		cfg.Name = "twin"
	}
	res.costModel(&cfg, fit)
	res.costNotes(fit, obs)
	res.capacity(&cfg, runs, opts, obs.maxStepTokens)
	res.powerModel(&cfg, runs)
	if hdr := runs[0].header; hdr != nil && hdr.Model != "" {
		cfg.ServedModelName, cfg.Model = hdr.Model, hdr.Model
	}
	cfg.MeanOutputTokens = 0 // a twin answers max_tokens: the runs measure speed, not answer lengths
	cfg.Seed = 1
	res.calibration(&cfg, fit, obs)
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("calibrate: the fitted simulator is not valid: %w", err)
	}
	res.Config = cfg
	return res, nil
}

// costModel fills the four cost coefficients (fitted, or the simulator's
// defaults where the runs cannot tell them) and the jitter.
func (res *Result) costModel(cfg *sim.Config, fit *linearFit) {
	defaults := []float64{cfg.StepOverheadUS, cfg.PerSeqUS, cfg.PerKVTokenNS, cfg.PerPrefillTokenUS}
	units := []string{"µs per step", "µs per sequence per step", "ns per context token per sequence", "µs per prompt token"}
	notes := []string{
		"the fixed cost of every step",
		"the cost of each request in a step",
		"the cost of each token of context attention reads (decode is memory-bound)",
		"the cost of each prompt token prefilled",
	}
	values := make([]float64, len(Coefficients))
	for j, name := range Coefficients {
		e := Estimate{Name: name, Unit: units[j], Source: "fitted", Note: notes[j]}
		if fit.used[j] {
			e.Value = max(fit.beta[j], 0)
			e.StdErr = math.Sqrt(max(fit.cov[j][j], 0))
		} else {
			e.Value, e.Source = defaults[j], "assumed"
			e.Note = "not measurable from these runs; the simulator's default"
		}
		values[j] = e.Value
		res.Estimates = append(res.Estimates, e)
	}
	cfg.StepOverheadUS, cfg.PerSeqUS, cfg.PerKVTokenNS, cfg.PerPrefillTokenUS = values[0], values[1], values[2], values[3]
	if cfg.StepOverheadUS+cfg.PerSeqUS <= 0 {
		cfg.StepOverheadUS = 1
	}
	cfg.JitterFrac = math.Min(math.Round(fit.relSD*1e4)/1e4, 0.5)
	res.Estimates = append(res.Estimates, Estimate{Name: "jitter_frac", Value: cfg.JitterFrac, Unit: "fraction of a step", Source: "measured",
		Note: "robust scatter of step times around the fit (network and client noise included, so an upper bound)"})
}

// costNotes says what the cost model could not see.
func (res *Result) costNotes(fit *linearFit, obs *observations) {
	batches := slices.Sorted(slices.Values(obs.decodeBatches))
	switch {
	case !fit.used[1]:
		res.Notes = append(res.Notes, "every run had one batch size: per_seq_us cannot be told from step_overhead_us; calibrate from runs at two or more concurrencies")
	case len(batches) > 0 && batches[len(batches)*95/100]-batches[len(batches)*5/100] < 2:
		res.Notes = append(res.Notes, fmt.Sprintf("nine in ten decode steps had %d to %d requests: per_seq_us and step_overhead_us are barely told apart (see their uncertainty), so other batch sizes are extrapolated; add a run at another concurrency",
			batches[len(batches)*5/100], batches[len(batches)*95/100]))
	}
	switch {
	case !fit.used[3]:
		res.Notes = append(res.Notes, "no step prefilled a prompt: per_prefill_token_us is the simulator's default")
	case obs.prefillOne < 10:
		res.Notes = append(res.Notes, fmt.Sprintf("only %d prompts were prefilled in a single step: per_prefill_token_us is uncertain; add a low-load run", obs.prefillOne))
	case obs.prefillLow < 10:
		res.Notes = append(res.Notes, "no low-load run: every prompt was prefilled beside several decoding requests, so per_prefill_token_us is less certain (see its error); add a run at concurrency 1")
	}
	if obs.prefillMany > obs.prefillOne {
		res.Notes = append(res.Notes, fmt.Sprintf("%d prompts took several steps to their first token (queued, or chunked prefill): their steps were fitted together; calibrate below saturation for sharper estimates", obs.prefillMany))
	}
	if obs.decodeSteps < 50 {
		res.Notes = append(res.Notes, fmt.Sprintf("only %d decode-only steps could be timed: the decode cost is uncertain", obs.decodeSteps))
	}
}

// capacity fills the capacity settings: given, told by the server (its
// log, its GET /props), measured from the scrapes, or assumed (and said
// so in the notes).
func (res *Result) capacity(cfg *sim.Config, runs []*runData, opts Options, maxTok int) {
	bs := opts.BlockSize
	bsSource := "given"
	if bs == 0 {
		bs, bsSource = DefaultBlockSize, "assumed"
	}
	res.Estimates = append(res.Estimates, Estimate{Name: "block_size", Value: float64(bs), Unit: "tokens", Source: bsSource,
		Note: map[string]string{"given": opts.given("block_size"), "assumed": "vLLM's CUDA default (set --block-size)"}[bsSource]})
	cfg.BlockSize = bs

	e := res.batchLimit(runs, opts)
	res.Estimates = append(res.Estimates, e)
	cfg.MaxNumSeqs = int(e.Value)

	budget := opts.MaxNumBatchedTokens
	e = Estimate{Name: "max_num_batched_tokens", Unit: "tokens per step", Value: float64(budget), Source: "given", Note: opts.given("max_num_batched_tokens")}
	if budget == 0 {
		e.Value, e.Source = float64(max(DefaultBudget, maxTok)), "assumed"
		e.Note = fmt.Sprintf("the largest step seen computed %d tokens; vLLM's default on most GPUs", maxTok)
		res.Notes = append(res.Notes, "max_num_batched_tokens: not measurable from client timings; assumed "+fmt.Sprint(e.Value)+" (set --max-num-batched-tokens)")
	}
	e.Value = max(e.Value, float64(cfg.MaxNumSeqs))
	res.Estimates = append(res.Estimates, e)
	cfg.MaxNumBatchedTokens = int(e.Value)

	res.kvCapacity(cfg, runs, opts, bs)
}

// batchLimit is the max_num_seqs estimate: given; told by the server
// (llama.cpp's slots, read at the start of the run); measured (requests
// running while others waited, with KV cache to spare); else assumed.
func (res *Result) batchLimit(runs []*runData, opts Options) Estimate {
	e := Estimate{Name: "max_num_seqs", Unit: "requests", Value: float64(opts.MaxNumSeqs), Source: "given", Note: opts.given("max_num_seqs")}
	if opts.MaxNumSeqs > 0 {
		return e
	}
	for _, rd := range runs {
		if sl := rd.header.Slots; sl != nil && sl.N > 0 {
			e.Value, e.Source, e.Note = float64(sl.N), "measured", fmt.Sprintf("the server's own word: %s = %d", sl.Source, sl.N)
			return e
		}
	}
	limit, reached, seen := batchLimit(runs)
	if reached {
		e.Value, e.Source, e.Note = float64(limit), "measured", "requests running while others waited with KV cache to spare"
		return e
	}
	e.Value, e.Source = float64(max(DefaultMaxNumSeqs, seen)), "assumed"
	e.Note = fmt.Sprintf("never reached (at most %d running): vLLM's default", seen)
	if seen == 0 {
		e.Note = "no running gauge was scraped: vLLM's default"
	}
	res.Notes = append(res.Notes, "max_num_seqs: "+e.Note+"; set --max-num-seqs")
	return e
}

// kvCapacity fills the KV-cache blocks and max_model_len.
func (res *Result) kvCapacity(cfg *sim.Config, runs []*runData, opts Options, bs int) {
	var pts []kvPoint
	for _, rd := range runs {
		pts = append(pts, kvPoints(rd, bs)...)
	}
	usable, usableErr, kvOK := fitBlocks(pts)
	e := Estimate{Name: "num_gpu_blocks_override", Unit: "blocks (one is vLLM's reserved null block)"}
	switch {
	case opts.KVBlocks > 0:
		e.Value, e.Source, e.Note = float64(opts.KVBlocks+1), "given", opts.given("num_gpu_blocks_override")
	case kvOK:
		e.Value, e.StdErr, e.Source = math.Round(usable)+1, usableErr, "measured"
		if usableErr < 1e-6*usable {
			e.StdErr = 0 // exact: every scrape agrees
		}
		e.Note = fmt.Sprintf("from %d scrapes of KV-cache usage against the blocks the requests in flight held", len(pts))
	default:
		blocks := math.Ceil(max(4*peakContext(runs), 8*float64(DefaultMaxModelLen)/16) / float64(bs))
		e.Value, e.Source = blocks+1, "assumed"
		e.Note = "no KV-cache usage was scraped: ample, so the twin never preempts"
		res.Notes = append(res.Notes, "KV-cache capacity: "+e.Note+" (set --kv-blocks)")
	}
	res.Estimates = append(res.Estimates, e)
	cfg.NumGPUBlocksOverride = int(e.Value)
	cfg.NumLayers, cfg.NumKVHeads, cfg.HeadDim, cfg.KVDtypeBytes = 1, 1, 1, 2
	cfg.SlidingWindow, cfg.SlidingWindowLayers = 0, 0
	cfg.KVCacheMemoryBytes = int64(cfg.NumGPUBlocksOverride) * int64(2*bs*2)

	mml := opts.MaxModelLen
	if mml == 0 {
		mml = min(DefaultMaxModelLen, (cfg.NumGPUBlocksOverride-1)*bs)
	}
	cfg.MaxModelLen = mml
	res.Estimates = append(res.Estimates, Estimate{Name: "max_model_len", Value: float64(mml), Unit: "tokens",
		Source: map[bool]string{true: "given", false: "assumed"}[opts.MaxModelLen > 0],
		Note:   map[bool]string{true: opts.given("max_model_len"), false: "the KV capacity (at most 131,072)"}[opts.MaxModelLen > 0]})
}

// calibration writes the calibration block: the covariance predict draws
// its bands from (the fit's, plus the run-to-run variation the repeated
// loads show), what the runs covered, and what was assumed.
func (res *Result) calibration(cfg *sim.Config, fit *linearFit, obs *observations) {
	beta := []float64{cfg.StepOverheadUS, cfg.PerSeqUS, cfg.PerKVTokenNS, cfg.PerPrefillTokenUS}
	br := betweenRuns(obs, fit)
	cov := make([][]float64, len(Coefficients))
	for i := range cov {
		cov[i] = make([]float64, len(Coefficients))
		for j := range cov[i] {
			c := fit.cov[i][j]
			if br != nil && fit.used[i] && fit.used[j] {
				// A new run's level differs from the fitted mean level by the
				// run-to-run variation, and the mean is known to 1/√repeats
				// of it: every fitted coefficient scales together.
				reps := float64(br.Instances) / float64(br.Loads)
				c += br.RelSD * br.RelSD * (1 + 1/reps) * beta[i] * beta[j]
			}
			cov[i][j] = roundSig(c, 6)
		}
	}
	stderr := map[string]float64{}
	assumed := map[string]string{}
	for _, e := range res.Estimates {
		if e.StdErr > 0 {
			stderr[e.Name] = roundSig(e.StdErr, 4)
		}
		if e.Source == "assumed" {
			assumed[e.Name] = e.Note
		}
	}
	if br == nil {
		res.Notes = append(res.Notes, "no load was run twice: the bands bench predict draws are the fit's uncertainty only, without the run-to-run variation of a real server; repeat the runs (or stages) to include it")
	} else {
		res.Notes = append(res.Notes, fmt.Sprintf("run-to-run variation: repeated runs of the same load differed by %.1f %% (relative standard deviation, %d degrees of freedom from %d stages of %d loads); the bands include it",
			100*br.RelSD, br.DF, br.Instances, br.Loads))
	}
	res.Between = br
	cfg.Calibration = &sim.Calibration{Sources: res.Sources, Segments: fit.n, Coefficients: Coefficients, Covariance: cov,
		StdErr: stderr, Notes: res.Notes, Assumed: assumed, BetweenRuns: br,
		Range: &sim.CalibratedRange{BatchMin: obs.minBatch, BatchMax: obs.maxBatch, PromptMin: obs.promptMin, PromptMax: obs.promptMax, OutputMax: obs.outputMax},
		Power: res.power}
}

// roundSig rounds x to n significant digits.
func roundSig(x float64, n int) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	p := math.Pow(10, float64(n)-math.Ceil(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}

// WriteConfig writes the twin as a simulator preset file: every setting,
// the fitted ones with their uncertainty in a comment, and the
// calibration block.
func WriteConfig(w io.Writer, r *Result) error {
	c := r.Config
	var b strings.Builder
	fmt.Fprintf(&b, "# servebench twin, fitted by `bench calibrate` from %d run(s):\n", len(r.Sources))
	for _, s := range r.Sources {
		fmt.Fprintf(&b, "#   %s\n", s)
	}
	b.WriteString("# Run it with target.url: sim://./THIS_FILE.yaml (bench run --virtual for virtual time),\n")
	b.WriteString("# or bench predict SCENARIO --twin THIS_FILE.yaml. Step cost, per engine step:\n")
	b.WriteString("#   step_overhead_us + per_seq_us·requests + per_kv_token_ns/1000·context tokens + per_prefill_token_us·prompt tokens\n")
	est := map[string]Estimate{}
	for _, e := range r.Estimates {
		est[e.Name] = e
	}
	comment := func(name string) string {
		e, ok := est[name]
		if !ok {
			return ""
		}
		s := " # " + e.Source
		if e.StdErr > 0 {
			s += fmt.Sprintf(" ± %s (%.1f %%)", fmtNum(e.StdErr), 100*e.RelErr())
		}
		if e.Note != "" && e.Note != e.Source {
			s += ": " + e.Note
		}
		return s
	}
	line := func(key string, v any) {
		fmt.Fprintf(&b, "%s: %v%s\n", key, v, comment(key))
	}
	quoted := func(s string) string {
		q, _ := yaml.Marshal(s)
		return strings.TrimSpace(string(q))
	}
	line("name", quoted(c.Name))
	line("model", quoted(c.Model))
	line("served_model_name", quoted(c.ServedModelName))
	line("vllm_version", quoted(c.VLLMVersion))
	line("architecture", quoted(c.Architecture))
	line("seed", c.Seed)
	b.WriteString("\n# Capacity\n")
	line("max_model_len", c.MaxModelLen)
	line("max_num_seqs", c.MaxNumSeqs)
	line("max_num_batched_tokens", c.MaxNumBatchedTokens)
	line("enable_chunked_prefill", c.EnableChunkedPrefill)
	line("enable_prefix_caching", c.EnablePrefixCaching)
	line("block_size", c.BlockSize)
	line("num_gpu_blocks_override", c.NumGPUBlocksOverride)
	b.WriteString("# A uniform model with one layer: the KV cache is counted in blocks (num_gpu_blocks_override).\n")
	line("kv_cache_memory_bytes", c.KVCacheMemoryBytes)
	line("num_layers", c.NumLayers)
	line("num_kv_heads", c.NumKVHeads)
	line("head_dim", c.HeadDim)
	line("kv_dtype_bytes", c.KVDtypeBytes)
	b.WriteString("\n# Cost model\n")
	for _, k := range []struct {
		key string
		v   float64
	}{{StepOverhead, c.StepOverheadUS}, {PerSeq, c.PerSeqUS}, {PerKVToken, c.PerKVTokenNS}, {PerPrefill, c.PerPrefillTokenUS}, {"jitter_frac", c.JitterFrac}} {
		line(k.key, fmtNum(k.v))
	}
	if c.PowerModel() {
		b.WriteString("\n# Power model (GPU telemetry), a GPU: idle_power_w between steps,\n")
		b.WriteString("#   idle_power_w + (max_power_w − idle_power_w)·occupancy during a step\n")
		line("gpus", c.GPUs)
		line("idle_power_w", fmtNum(c.IdlePowerW))
		line("max_power_w", fmtNum(c.MaxPowerW))
	}
	b.WriteString("\n")
	line("mean_output_tokens", c.MeanOutputTokens)
	line("log_stats_interval", c.LogStatsInterval)
	cal, err := yaml.Marshal(map[string]*sim.Calibration{"calibration": c.Calibration})
	if err != nil {
		return fmt.Errorf("write twin: %w", err)
	}
	b.WriteString("\n# How the fit was made: standard errors, the covariance bench predict draws its bands from,\n# and what the runs could not show.\n")
	b.Write(cal)
	_, err = io.WriteString(w, b.String())
	return err
}

func fmtNum(x float64) string {
	return fmt.Sprint(roundSig(x, 5))
}

// WriteReport writes the calibration for people: each setting with its
// uncertainty and source, then what was missing.
func WriteReport(w io.Writer, r *Result) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "calibrated from %d run(s): %d requests (%d records not usable), %d engine steps, %d timed segments (%d outliers set aside); decode batches %d–%d; a token every %v (median)\n",
		len(r.Sources), r.Requests, r.Skipped, r.Steps, r.Segments, r.Trimmed, r.Batch[0], r.Batch[1], r.Tolerance.Round(time.Microsecond))
	if len(r.Holdout) > 0 {
		fmt.Fprintf(&b, "held out: %s\n", strings.Join(r.Holdout, ", "))
	}
	rows := [][]string{{"setting", "value", "± stderr", "", "source", "unit / how"}}
	for _, e := range r.Estimates {
		se, rel := "", ""
		if e.StdErr > 0 {
			se = fmtNum(e.StdErr)
			rel = fmt.Sprintf("%.1f %%", 100*e.RelErr())
		}
		how := e.Unit
		if e.Note != "" && e.Note != e.Source {
			how += "; " + e.Note
		}
		rows = append(rows, []string{e.Name, fmtNum(e.Value), se, rel, e.Source, how})
	}
	b.WriteString(textable.Format(rows, true))
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := w.Write(b.Bytes())
	return err
}
