package scenario

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// FlagsName is the name of a scenario built from flags alone (FromFlags):
// its runs go to runs/flags-TIME by default.
const FlagsName = "flags"

// Flags are the scenario fields the command line sets directly, as
// `bench run` takes them. A zero field is a flag not given. They apply
// over a scenario file and under --set: file < flags < --set.
type Flags struct {
	Target      string   // --target: target.url
	AllowRemote bool     // --allow-remote: target.allow_remote
	Headers     []string // --header Name:value: target.headers.Name
	Model       string   // --model: target.model

	// The load flags describe one stage: a closed loop of Concurrency
	// workers or an open loop at Rate requests per second (with
	// Arrival), bounded by Requests and/or Duration.
	Concurrency int           // --concurrency
	Rate        float64       // --rate, requests per second
	Arrival     string        // --arrival: constant, poisson or gamma
	Requests    int           // --requests
	Duration    time.Duration // --duration

	// The flags `vllm bench serve` users type, with vLLM's meaning:
	// MaxConcurrency is a cap on requests in flight whose excess arrivals
	// wait client-side (overflow queue, unless Overflow says drop); with
	// no --rate and no --concurrency it is a closed loop of that many
	// workers (vLLM's --request-rate inf). Burstiness makes the arrivals
	// gamma-distributed with that shape (1: Poisson). Warmups are extra
	// requests sent first and left out of the figures.
	MaxConcurrency int     // --max-concurrency
	Overflow       string  // --overflow: drop or queue
	Burstiness     float64 // --burstiness
	Warmups        int     // --num-warmups
	Seed           string  // --seed: prompts.seed
	Tokenizer      string  // --tokenizer: prompts.tokenizer

	InputTokens  int    // --input-tokens: a fixed prompt length
	OutputTokens int    // --output-tokens: a fixed max_tokens
	Dataset      string // --dataset: a prompt file, relative to the working directory
}

// loadGiven reports whether any load flag was given.
func (f *Flags) loadGiven() bool {
	return f.Concurrency != 0 || f.Rate != 0 || f.Arrival != "" || f.Requests != 0 || f.Duration != 0 ||
		f.MaxConcurrency != 0 || f.Overflow != "" || f.Burstiness != 0 || f.Warmups != 0
}

// FromFlags builds a scenario from flags alone (no file), then applies
// sets (--set path=value, which win), Defaults, and validates. It needs
// a target, a loop (--concurrency or --rate), a bound (--requests and/or
// --duration) and the prompts' lengths (--input-tokens and
// --output-tokens) or a dataset. The scenario is named FlagsName.
func FromFlags(f Flags, sets ...string) (*Scenario, error) {
	var missing []string
	if f.Target == "" {
		missing = append(missing, "--target URL (sim://tiny for the built-in simulator)")
	}
	if f.Concurrency == 0 && f.Rate == 0 && f.MaxConcurrency == 0 {
		missing = append(missing, "--concurrency N (closed loop) or --rate R (open loop, requests per second)")
	}
	if f.Requests == 0 && f.Duration == 0 {
		missing = append(missing, "--requests N, --duration D or both")
	}
	if f.Dataset == "" && f.InputTokens == 0 {
		missing = append(missing, "--input-tokens N (or --dataset FILE)")
	}
	if f.Dataset == "" && f.OutputTokens == 0 {
		missing = append(missing, "--output-tokens N")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("a run without a scenario file needs %s", strings.Join(missing, "; "))
	}
	raw, err := decode(FlagsName, []byte("name: "+FlagsName+"\n"))
	if err != nil {
		return nil, err
	}
	raw.src.dir = "" // a --dataset path is taken as given
	sc := clone(raw)
	sc.raw = raw
	return sc, sc.ApplyFlags(f, sets...)
}

// ApplyFlags applies f over the scenario (as written in its file), then
// sets (--set path=value, which win), Defaults, and validates; on error
// the scenario is unchanged. The load flags set the fields of the
// scenario's one stage (the others keep the file's values; --concurrency
// makes it a closed loop and --rate an open one); a scenario of several
// stages refuses them.
func (sc *Scenario) ApplyFlags(f Flags, sets ...string) error {
	items, err := f.assignments(sc)
	if err != nil {
		return err
	}
	var errs []error
	for _, a := range sets {
		path, value, ok := strings.Cut(a, "=")
		if !ok {
			errs = append(errs, &FieldError{File: SetFile, Msg: fmt.Sprintf("want path=value, got %q", a)})
			continue
		}
		items = append(items, assignment{from: SetFile, path: strings.TrimSpace(path), value: value})
	}
	return sc.override(items, errs...)
}

// assignments turns the flags into overrides of sc, each naming its flag.
func (f *Flags) assignments(sc *Scenario) ([]assignment, error) {
	var out []assignment
	add := func(flag, path, value string) { out = append(out, assignment{from: flag, path: path, value: value}) }
	if f.Target != "" {
		add("--target", "target.url", f.Target)
	}
	if f.AllowRemote {
		add("--allow-remote", "target.allow_remote", "true")
	}
	for _, h := range f.Headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(value) == "" {
			return nil, fmt.Errorf("--header %q: want Name:value, both not empty", h)
		}
		out = append(out, assignment{from: "--header", header: strings.TrimSpace(name), value: strings.TrimSpace(value)})
	}
	if f.Model != "" {
		add("--model", "target.model", f.Model)
	}
	if f.Seed != "" {
		add("--seed", "prompts.seed", f.Seed)
	}
	if f.Tokenizer != "" {
		tok := f.Tokenizer
		if strings.HasSuffix(strings.ToLower(tok), ".json") {
			// Typed on the command line: relative to the working directory.
			abs, err := filepath.Abs(tok)
			if err != nil {
				return nil, fmt.Errorf("--tokenizer %s: %w", tok, err)
			}
			tok = abs
		}
		add("--tokenizer", "prompts.tokenizer", tok)
	}
	if f.InputTokens != 0 {
		add("--input-tokens", "prompts.input_tokens", fmt.Sprintf("{dist: fixed, value: %d}", f.InputTokens))
	}
	if f.OutputTokens != 0 {
		add("--output-tokens", "prompts.output_tokens", fmt.Sprintf("{dist: fixed, value: %d}", f.OutputTokens))
	}
	if f.Dataset != "" {
		// Typed on the command line: relative to the working directory,
		// not to the scenario file.
		path, err := filepath.Abs(f.Dataset)
		if err != nil {
			return nil, fmt.Errorf("--dataset %s: %w", f.Dataset, err)
		}
		add("--dataset", "prompts.dataset.path", path)
	}
	if !f.loadGiven() {
		return out, nil
	}
	written := sc.raw // the scenario as its file has it
	if written == nil {
		written = sc
	}
	stages := len(written.Load.Stages)
	if stages > 1 {
		return nil, fmt.Errorf("%s has %d stages and the load flags (--concurrency, --rate, --arrival, --max-concurrency, --requests, --duration, …) describe one: set a stage's fields with --set load.stages[I].FIELD=VALUE",
			sc.src.file, stages)
	}
	loop, err := f.loopAssignments(stages == 0)
	if err != nil {
		return nil, err
	}
	out = append(out, loop...)
	const st = "load.stages[0]."
	if f.Requests != 0 {
		// vLLM's warmups are sent before its --num-prompts: N + W in all,
		// the first W left out of the figures.
		add("--requests", st+"requests", strconv.Itoa(f.Requests+f.Warmups))
	}
	if f.Duration != 0 {
		add("--duration", st+"duration", f.Duration.String())
		if f.Duration >= DefaultMaxDuration && written.Load.MaxDuration == 0 {
			// The run's safety bound must not cut the stage short.
			add("--duration", "load.max_duration", (f.Duration + time.Minute).String())
		}
	}
	return out, nil
}

// loopAssignments are the overrides of the load flags that choose the
// stage's loop: --concurrency, --rate, --arrival, --burstiness,
// --max-concurrency, --overflow and --num-warmups. named is true when the
// scenario has no stage yet, whose name the flags then choose.
func (f *Flags) loopAssignments(named bool) ([]assignment, error) {
	var out []assignment
	add := func(flag, path, value string) { out = append(out, assignment{from: flag, path: path, value: value}) }
	const st = "load.stages[0]."
	conc := f.Concurrency
	switch {
	case f.Concurrency != 0 && f.Rate != 0:
		return nil, fmt.Errorf("--concurrency %d and --rate %g: choose a closed loop (workers) or an open loop (arrivals per second), not both", f.Concurrency, f.Rate)
	case f.Concurrency != 0 && f.MaxConcurrency != 0:
		return nil, fmt.Errorf("--concurrency %d and --max-concurrency %d: a closed loop's workers are already its cap; give --max-concurrency with --rate (an open loop's cap) or alone (a closed loop of that many, as vLLM's --request-rate inf)", f.Concurrency, f.MaxConcurrency)
	case f.Rate == 0 && f.MaxConcurrency != 0:
		conc = f.MaxConcurrency // vLLM's --request-rate inf: every request at once, at most N in flight
	}
	if named {
		// The stage's name says its load in the summary table.
		switch {
		case conc != 0:
			add("--concurrency", st+"name", fmt.Sprintf("concurrency-%d", conc))
		case f.Rate != 0:
			add("--rate", st+"name", "rate-"+strconv.FormatFloat(f.Rate, 'g', -1, 64))
		}
	}
	switch {
	case conc != 0:
		add("--concurrency", st+"concurrency", strconv.Itoa(conc))
		for _, open := range []string{"rate", "arrival", "burstiness", "max_concurrency", "overflow"} {
			add("--concurrency", st+open, "")
		}
	case f.Rate != 0:
		add("--rate", st+"rate", strconv.FormatFloat(f.Rate, 'g', -1, 64))
		add("--rate", st+"concurrency", "")
	}
	if f.MaxConcurrency != 0 && f.Rate != 0 {
		add("--max-concurrency", st+"max_concurrency", strconv.Itoa(f.MaxConcurrency))
		if f.Overflow == "" {
			add("--max-concurrency", st+"overflow", OverflowQueue) // vLLM's semaphore
		}
	}
	if f.Overflow != "" {
		add("--overflow", st+"overflow", f.Overflow)
	}
	if f.Arrival != "" {
		add("--arrival", st+"arrival", f.Arrival)
	}
	if f.Burstiness != 0 {
		if f.Arrival == "" {
			arrival := ArrivalGamma
			if f.Burstiness == 1 {
				arrival = ArrivalPoisson
			}
			add("--burstiness", st+"arrival", arrival)
		}
		if f.Burstiness != 1 || f.Arrival == ArrivalGamma {
			add("--burstiness", st+"burstiness", strconv.FormatFloat(f.Burstiness, 'g', -1, 64))
		}
	}
	if f.Warmups != 0 {
		add("--num-warmups", st+"warmup.requests", strconv.Itoa(f.Warmups))
	}
	return out, nil
}

// Underlay fills the fields of f that are not given with g's: flags typed
// beside a translated command line win over the translation.
func (f *Flags) Underlay(g Flags) {
	pick := func(dst *string, src string) {
		if *dst == "" {
			*dst = src
		}
	}
	pick(&f.Target, g.Target)
	pick(&f.Model, g.Model)
	pick(&f.Arrival, g.Arrival)
	pick(&f.Overflow, g.Overflow)
	pick(&f.Seed, g.Seed)
	pick(&f.Tokenizer, g.Tokenizer)
	pick(&f.Dataset, g.Dataset)
	for _, p := range []struct{ dst, src *int }{{&f.Concurrency, &g.Concurrency}, {&f.Requests, &g.Requests},
		{&f.MaxConcurrency, &g.MaxConcurrency}, {&f.Warmups, &g.Warmups}, {&f.InputTokens, &g.InputTokens}, {&f.OutputTokens, &g.OutputTokens}} {
		if *p.dst == 0 {
			*p.dst = *p.src
		}
	}
	if f.Rate == 0 {
		f.Rate = g.Rate
	}
	if f.Burstiness == 0 {
		f.Burstiness = g.Burstiness
	}
	if f.Duration == 0 {
		f.Duration = g.Duration
	}
	f.AllowRemote = f.AllowRemote || g.AllowRemote
}
