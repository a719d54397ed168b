package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/chart"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
)

const runUsage = `Usage: bench run SCENARIO [--target URL] [--out DIR [--force]] [--virtual] [--set path=value ...]

Runs a scenario file: sends its load to the target, streams one record per
request (and one per /metrics scrape) to DIR/results.jsonl as each finishes,
then writes DIR/summary.json, the plots (timeline, decay, latency, stages as
PNG and SVG) and DIR/report.html, and prints a summary table with the
correlation findings.

The target is the scenario's target.url unless --target overrides it:
  sim://PRESET            the built-in vLLM-like simulator, started in-process
                          on a free loopback port (presets: tiny,
                          gpt-oss-120b-h100, gpt-oss-20b-a100, deepseek-r1-32b)
  sim://./twin.yaml       the simulator with a preset file, such as the twin
                          'bench calibrate' writes (relative to the scenario
                          file when written in it, else to the working
                          directory)
  http://127.0.0.1:8000   any OpenAI-compatible server (vLLM, SGLang, TGI,
                          llama.cpp, …) on this machine; load is only ever
                          sent to loopback addresses

With --virtual a sim:// target runs in virtual time: the simulator's engine
steps on a virtual clock with no HTTP and no client, so a ten-minute load
takes seconds; the outputs are the same files, marked virtual. The figures
are the engine's own timings (no network or client overhead).

When the scenario has a budgets block, the run is judged after the load:
the verdict is printed, written into summary.json, DIR/junit.xml and
DIR/verdict.md, and a missed budget gives exit code 3 (see 'bench help
check', which judges saved results again).

Ctrl-C stops new requests, gives in-flight ones a short grace period, then
writes the summary and exits with code 130; a second Ctrl-C aborts at once.
Records already written are never lost: 'bench report DIR' rebuilds the
summary from them.

Examples:
  bench run scenarios/quickstart.yaml
  bench run scenarios/quickstart.yaml --out runs/try1
  bench run my.yaml --target http://127.0.0.1:8000 --set load.stages[0].concurrency=64
  bench run my.yaml --set prompts.input_tokens.value=4096 --set request.max_tokens=256
  bench run scenarios/release-gate.yaml --target http://127.0.0.1:8000   # exit 3 if a budget is missed
  bench run my.yaml --target sim://./twin.yaml --virtual --set load.stages[0].duration=10m
`

func runCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "run", runUsage)
	target := fs.String("target", "", "override target.url (http://HOST:PORT or sim://PRESET)")
	outDir := fs.String("out", "", "output directory (default runs/NAME-YYYYMMDD-HHMMSS)")
	quiet := fs.Bool("quiet", false, "no progress output")
	force := fs.Bool("force", false, "write into an --out directory that already holds a run, replacing its files")
	virtual := fs.Bool("virtual", false, "run a sim:// target in virtual time (no HTTP; seconds for minutes of load)")
	var sets multiFlag
	fs.Var(&sets, "set", "override a scenario field, `path=value` (repeatable), e.g. load.stages[0].rate=20")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return usagef("run: want exactly one scenario file, got %d", len(pos))
	}
	sc, err := loadScenario(pos[0], *target, sets)
	if err != nil {
		return err
	}
	if sc.Sweep != nil {
		fmt.Fprintf(e.stderr, "note: %s has a sweep: block; 'bench run' makes one run with the scenario's own settings (use 'bench sweep' to run every value)\n", pos[0])
	}
	dir := *outDir
	if dir == "" {
		dir = filepath.Join("runs", fmt.Sprintf("%s-%s", safeName(sc.Name), time.Now().Format("20060102-150405")))
	}
	if err := run.PrepareDir(dir, *force); err != nil {
		var used *run.UsedDirError
		if errors.As(err, &used) {
			return usageError{err}
		}
		return fmt.Errorf("run: %w", err)
	}
	opts := runOptions(e, sc, dir, *quiet)
	opts.Virtual = *virtual
	sum, runErr := run.Run(ctx, sc, opts)
	if ctx.Err() != nil && !errors.Is(runErr, errInterrupted) {
		runErr = errors.Join(runErr, errInterrupted)
	}
	var cfgErr *run.ConfigError
	if errors.As(runErr, &cfgErr) {
		runErr = usageError{runErr}
	}
	if sum == nil {
		return runErr
	}
	if err := report.WriteText(e.stdout, sum); err != nil {
		return errors.Join(runErr, err)
	}
	fmt.Fprintf(e.stdout, "results: %s\nsummary: %s\nreport:  %s\n", filepath.Join(dir, run.FileResults),
		filepath.Join(dir, run.FileSummary), filepath.Join(dir, chart.HTMLName))
	// A missed budget decides the exit code only when the run itself
	// completed: a failed or interrupted run keeps its own code.
	if err := printVerdict(e, sum, dir); runErr == nil {
		runErr = err
	}
	return runErr
}

// runOptions are the run library's options for a run from the command
// line: the API key from the environment, progress on stderr.
func runOptions(e env, sc *scenario.Scenario, dir string, quiet bool) run.Options {
	o := run.Options{Dir: dir, Terminal: e.isTerminal}
	if sc.Target.APIKeyEnv != "" {
		o.APIKey = e.getenv(sc.Target.APIKeyEnv)
	}
	if !quiet {
		o.Progress = e.stderr
	}
	return o
}

// loadScenario loads the file and applies the command-line overrides:
// --target first, then every --set at once, validated together, so
// overrides that are valid only together (a min and a max) work in any
// order.
func loadScenario(path, target string, sets []string) (*scenario.Scenario, error) {
	sc, err := scenario.Load(path)
	if err != nil {
		return nil, usageError{err}
	}
	if target != "" {
		if err := sc.Set("target.url", target); err != nil {
			return nil, usageError{fmt.Errorf("--target %s: %w", target, err)}
		}
	}
	if err := sc.Override(sets...); err != nil {
		return nil, usageError{err}
	}
	return sc, nil
}

func safeName(s string) string {
	if s == "" {
		return "run"
	}
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r == ':' {
			return '_'
		}
		return r
	}, s)
}
