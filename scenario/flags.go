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

	InputTokens  int    // --input-tokens: a fixed prompt length
	OutputTokens int    // --output-tokens: a fixed max_tokens
	Dataset      string // --dataset: a prompt file, relative to the working directory
}

// loadGiven reports whether any load flag was given.
func (f *Flags) loadGiven() bool {
	return f.Concurrency != 0 || f.Rate != 0 || f.Arrival != "" || f.Requests != 0 || f.Duration != 0
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
	if f.Concurrency == 0 && f.Rate == 0 {
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
		return nil, fmt.Errorf("%s has %d stages and the load flags (--concurrency, --rate, --arrival, --requests, --duration) describe one: set a stage's fields with --set load.stages[I].FIELD=VALUE",
			sc.src.file, stages)
	}
	if f.Concurrency != 0 && f.Rate != 0 {
		return nil, fmt.Errorf("--concurrency %d and --rate %g: choose a closed loop (workers) or an open loop (arrivals per second), not both", f.Concurrency, f.Rate)
	}
	const st = "load.stages[0]."
	if stages == 0 {
		// The stage's name says its load in the summary table.
		switch {
		case f.Concurrency != 0:
			add("--concurrency", st+"name", fmt.Sprintf("concurrency-%d", f.Concurrency))
		case f.Rate != 0:
			add("--rate", st+"name", "rate-"+strconv.FormatFloat(f.Rate, 'g', -1, 64))
		}
	}
	switch {
	case f.Concurrency != 0:
		add("--concurrency", st+"concurrency", strconv.Itoa(f.Concurrency))
		for _, open := range []string{"rate", "arrival", "burstiness", "max_concurrency"} {
			add("--concurrency", st+open, "")
		}
	case f.Rate != 0:
		add("--rate", st+"rate", strconv.FormatFloat(f.Rate, 'g', -1, 64))
		add("--rate", st+"concurrency", "")
	}
	if f.Arrival != "" {
		add("--arrival", st+"arrival", f.Arrival)
	}
	if f.Requests != 0 {
		add("--requests", st+"requests", strconv.Itoa(f.Requests))
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
