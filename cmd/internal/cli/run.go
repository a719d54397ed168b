package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/servebench/servebench/live"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/chart"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
)

const runUsage = `Usage: bench run SCENARIO [--target URL] [--out DIR [--force]] [--virtual] [--set path=value ...] [--dry-run]
                 [--shard I/N [--start-at TIME] [--scrape-shard K]]
       bench run --target URL [--model M] --concurrency N | --rate R [--arrival poisson]
                 --requests N | --duration D --input-tokens N --output-tokens N [--dataset F]

Runs a scenario file: sends its load to the target, streams one record per
request (and per /metrics scrape) to DIR/results.jsonl as each finishes, then
writes DIR/summary.json, the plots and DIR/report.html, and prints a summary
table, the conclusion and the findings to act on first (--verbose: every
finding and the analyst's detail, which report.html also lists).

Without a file, the flags are the scenario: one stage, a closed loop of
--concurrency workers or an open loop of --rate arrivals per second, bounded
by --requests and/or --duration, with prompts of --input-tokens tokens
asking for --output-tokens (or taken from --dataset). With a file, the same
flags change its stage (a one-stage file) and its prompts. The file comes
first, then the flags, then --set. Either way the results header records
the resolved scenario. --dry-run validates, prints the resolved scenario and
the plan, and sends nothing.

The target is target.url unless --target overrides it:
  sim://PRESET            the built-in simulator, in-process ('bench help sim'
                          lists the presets)
  sim://./twin.yaml       the simulator with a preset file, such as the twin
                          'bench calibrate' writes (relative to the scenario
                          file when written in it, else to the working
                          directory)
  http://127.0.0.1:8000   any OpenAI-compatible server (vLLM, SGLang, TGI,
                          llama.cpp, …) on this machine
Load goes elsewhere only with --allow-remote (or target.allow_remote: true);
the run then prints the host and the load before it starts.

With --virtual a sim:// target runs in virtual time: the simulator's engine
steps on a virtual clock with no HTTP and no client, so a ten-minute load
takes seconds; the outputs are the same files, marked virtual, and the
figures are the engine's own timings (no network or client overhead).

With a budgets block the run is judged after the load: the verdict goes to
stdout, summary.json, DIR/junit.xml and DIR/verdict.md, and a missed budget
exits 3 ('bench help check' re-judges saved results).

--shard I/N runs shard I (from 0) of N load generators sharing the load:
each sends 1/N of every stage (a closed loop's workers and requests split
evenly, every Nth arrival of an open loop) with prompts no other shard
sends. --start-at TIME (RFC 3339) starts the shards together; --scrape-shard
K lets only shard K scrape. Shards are not judged: 'bench merge' builds the
run's summary, plots and report from them.

Ctrl-C stops new requests, lets in-flight ones finish briefly (5 s), writes
the summary and exits 130; a second Ctrl-C cancels them at once, records
them as canceled and skips the plots. Records are never lost: 'bench report
DIR' rebuilds the summary from them.

Examples:
  bench run scenarios/quickstart.yaml
  bench run --target sim://tiny --concurrency 4 --requests 20 --input-tokens 128 --output-tokens 32
  bench run --target http://127.0.0.1:8000 --rate 5 --duration 1m --input-tokens 1024 --output-tokens 256
  bench run scenarios/quickstart.yaml --dry-run
  bench run scenarios/quickstart.yaml --out runs/try1
  bench run my.yaml --target http://127.0.0.1:8000 --set load.stages[0].concurrency=64
  bench run my.yaml --set prompts.input_tokens.value=4096 --set request.max_tokens=256
  bench run scenarios/release-gate.yaml --target http://127.0.0.1:8000   # exit 3 if a budget is missed, 4 if one cannot be told
  bench run my.yaml --target http://10.0.0.7:8000 --allow-remote --header X-Tenant:bench
  bench run my.yaml --shard 0/4 --start-at 2026-11-22T03:00:00Z --scrape-shard 0 --out runs/big/shard-0
  bench run my.yaml --target sim://./twin.yaml --virtual --set load.stages[0].duration=10m
`

func runCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "run", runUsage)
	var flags scenario.Flags
	load := scenarioFlagsInto(fs, &flags)
	runLoadFlags(fs, &flags)
	dryRun := fs.Bool("dry-run", false, "validate, print the resolved scenario and the plan, and send nothing")
	outDir := fs.String("out", "", "output directory (default runs/NAME-YYYYMMDD-HHMMSS)")
	quiet := fs.Bool("quiet", false, "no progress output")
	metricsAddr := fs.String("metrics-addr", "", "serve the run's client-side figures live at http://`ADDR`/metrics (Prometheus text format; loopback, e.g. 127.0.0.1:9464)")
	force := fs.Bool("force", false, "write into an --out directory that already holds a run, replacing its files")
	shard := fs.String("shard", "", "run shard `I/N` of N load generators sharing the load (I counts from 0)")
	startAt := fs.String("start-at", "", "begin the load at this wall-clock `time` (RFC 3339, within an hour), so shards start together")
	scrapeShard := fs.Int("scrape-shard", -1, "with --shard: only shard `K` scrapes the server's /metrics (default: every shard)")
	virtual := fs.Bool("virtual", false, "run a sim:// target in virtual time (no HTTP; seconds for minutes of load)")
	fromVLLM := fs.String("from-vllm", "", "run what the `'vllm bench serve …'` command line would (its closest equivalent, printed first)")
	verbose := fs.Bool("verbose", false, "print every finding and the analyst's detail (decode law, Pearson r, throughput by KV-cache usage, cross-checks)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageFor(fs, "run: want one scenario file (or none, with the flags of a run), got %d", len(pos))
	}
	file := ""
	if len(pos) == 1 {
		file = pos[0]
	}
	sc, err := loadRun(e, load, &flags, file, *fromVLLM)
	if err != nil {
		return err
	}
	sh, start, err := shardFlags(*shard, *startAt, *scrapeShard)
	if err != nil {
		return err
	}
	if *dryRun {
		return runDry(ctx, e, sc, sh, *metricsAddr)
	}
	if sc.Sweep != nil {
		fmt.Fprintf(e.stderr, "note: %s has a sweep: block; 'bench run' makes one run with the scenario's own settings (use 'bench sweep' to run every value)\n", file)
	}
	dir, created, err := runDir(sc.Name, *outDir, *force)
	if err != nil {
		return err
	}
	opts, err := runOptions(e, sc, dir, *quiet)
	if err != nil {
		return err
	}
	opts.Shard, opts.StartAt = sh, start
	opts.Virtual = *virtual
	opts.NoScrape = *scrapeShard >= 0 && sh.Index != *scrapeShard
	if *metricsAddr != "" {
		lm, err := listenLive(*metricsAddr, sc.Target.AllowRemote, opts.Progress)
		if err != nil {
			return usageError{err: err}
		}
		defer lm.Close()
		opts.Observer = lm
	}
	if *quiet && sc.Target.AllowRemote {
		// Load leaving this machine is announced, quiet or not.
		fmt.Fprint(e.stderr, run.Describe(sc, sh))
	}
	// A second Ctrl-C cancels the requests in flight at once; they are
	// still recorded, as canceled, before the process exits.
	abort, done := make(chan struct{}), make(chan struct{})
	opts.Abort = abort
	remove := e.aborts.add(func() {
		close(abort)
		select {
		case <-done:
			fmt.Fprintf(e.stderr, "in-flight requests recorded as canceled in %s\n", filepath.Join(dir, run.FileResults))
		case <-time.After(abortWait):
			fmt.Fprintf(e.stderr, "the run did not end within %v: %s may lack the requests in flight\n", abortWait, filepath.Join(dir, run.FileResults))
		}
	})
	sum, runErr := run.Run(ctx, sc, opts)
	close(done)
	remove()
	return runOutcome(ctx, e, report.Text{Verbose: *verbose}, sum, dir, created, runErr)
}

// runDry validates what a run would, prints the resolved scenario and
// the plan, and sends nothing: --metrics-addr is checked as the run checks
// it, without listening.
func runDry(ctx context.Context, e env, sc *scenario.Scenario, sh scenario.Shard, metricsAddr string) error {
	if metricsAddr != "" {
		if err := live.CheckAddr(metricsAddr, sc.Target.AllowRemote); err != nil {
			return usageError{err: err}
		}
	}
	if err := run.DryRun(ctx, e.stdout, sc, sh); err != nil {
		return usageError{err: err}
	}
	return nil
}

// loadRun loads the run's scenario: file (or none) with the flags, or the
// translation of a vllm bench serve command line under the flags given
// beside it, which win.
func loadRun(e env, load func(string, ...string) (*scenario.Scenario, error), flags *scenario.Flags, file, fromVLLM string) (*scenario.Scenario, error) {
	if fromVLLM == "" {
		return load(file)
	}
	if file != "" {
		return nil, usagef("run: --from-vllm describes the whole run: give no scenario file with it")
	}
	cmd, err := scenario.ParseVLLMCommand(fromVLLM)
	if err != nil {
		return nil, usagef("--from-vllm: %v", err)
	}
	flags.Underlay(cmd.Flags)
	fmt.Fprintf(e.stderr, "vllm bench serve, translated: %s\n", e.named("bench run "+strings.Join(cmd.Args, " ")))
	for _, n := range cmd.Notes {
		fmt.Fprintf(e.stderr, "  note: %s\n", n)
	}
	return load("", cmd.Sets...)
}

// runDir is the run's output directory, --out or a new one under runs/,
// created or checked to hold no earlier run (unless force); created says
// whether it made the directory.
func runDir(name, out string, force bool) (dir string, created bool, err error) {
	dir = out
	if dir == "" {
		dir = filepath.Join("runs", fmt.Sprintf("%s-%s", safeName(name), time.Now().Format("20060102-150405")))
	}
	_, statErr := os.Stat(dir)
	if err := run.PrepareDir(dir, force, chart.Renderer{}); err != nil {
		var used *run.UsedDirError
		if errors.As(err, &used) {
			return "", false, usageError{err: err}
		}
		return "", false, fmt.Errorf("run: %w", err)
	}
	return dir, errors.Is(statErr, os.ErrNotExist), nil
}

// runOutcome prints a run's summary, its files and its verdict, and
// returns its exit: interrupted, a scenario error, failed, budgets missed
// or nil. A run that wrote nothing (stopped or refused before its first
// record) leaves no empty directory it made (created) behind.
func runOutcome(ctx context.Context, e env, text report.Text, sum *report.Summary, dir string, created bool, runErr error) error {
	if ctx.Err() != nil && !errors.Is(runErr, errInterrupted) {
		runErr = errors.Join(runErr, errInterrupted)
	}
	var cfgErr *run.ConfigError
	if errors.As(runErr, &cfgErr) {
		runErr = usageError{err: runErr}
	}
	if sum == nil {
		if created {
			_ = os.Remove(dir) // only if still empty
		}
		return runErr
	}
	if err := text.Write(e.stdout, sum); err != nil {
		return errors.Join(runErr, err)
	}
	printOutputs(e.stdout, dir)
	// A missed budget decides the exit code only when the run itself
	// completed: a failed or interrupted run keeps its own code.
	if err := printVerdict(e, sum, dir); runErr == nil {
		runErr = err
	}
	return runErr
}

// printOutputs names the run's results, summary and report files that
// are there (a full disk, or an abort that skips the plots, leaves some
// unwritten: they are said to be so, not named).
func printOutputs(w io.Writer, dir string) {
	for _, f := range []struct{ label, name string }{
		{"results:", run.FileResults}, {"summary:", run.FileSummary}, {"report: ", chart.HTMLName},
	} {
		path := filepath.Join(dir, f.name)
		if _, err := os.Stat(path); err != nil {
			path = "not written"
		}
		fmt.Fprintf(w, "%s %s\n", f.label, path)
	}
}

// abortWait bounds how long an abort waits for the run to record its
// requests in flight before the process exits.
const abortWait = 5 * time.Second

// shardFlags reads --shard, --start-at and --scrape-shard.
func shardFlags(shard, startAt string, scrapeShard int) (scenario.Shard, time.Time, error) {
	var sh scenario.Shard
	var start time.Time
	var err error
	if shard != "" {
		if sh, err = scenario.ParseShard(shard); err != nil {
			return sh, start, usagef("--shard %w", err)
		}
	}
	if startAt != "" {
		if start, err = time.Parse(time.RFC3339, startAt); err != nil {
			return sh, start, usagef("--start-at %q: want an RFC 3339 time such as 2026-11-22T03:00:00Z", startAt)
		}
	}
	switch {
	case scrapeShard < -1:
		return sh, start, usagef("--scrape-shard %d: want a shard index", scrapeShard)
	case scrapeShard >= 0 && sh.Count == 0:
		return sh, start, usagef("--scrape-shard applies to a shard (--shard I/N)")
	case scrapeShard >= sh.Count && sh.Count > 0:
		return sh, start, usagef("--scrape-shard %d: want a shard of the %d, 0 to %d", scrapeShard, sh.Count, sh.Count-1)
	}
	return sh, start, nil
}

// runOptions are the run library's options for a run from the command
// line: the API key from the environment, progress on stderr.
func runOptions(e env, sc *scenario.Scenario, dir string, quiet bool) (run.Options, error) {
	o := run.Options{Dir: dir, Terminal: e.isTerminal, Render: chart.Renderer{}, NoPlots: e.noPlots}
	key, err := run.APIKey(sc, e.getenv)
	if err != nil {
		return o, usageError{err: err}
	}
	o.APIKey = key
	if !quiet {
		o.Progress = e.stderr
	}
	return o, nil
}

// scenarioFlags registers the flags that change the scenario (--target,
// --allow-remote, --header, --set) and returns the function that loads a
// scenario file with them applied (scenario.ApplyFlags): every override at
// once, validated together, so overrides valid only together (a min and a
// max) work in any order.
func scenarioFlags(fs *flag.FlagSet) func(path string, extra ...string) (*scenario.Scenario, error) {
	return scenarioFlagsInto(fs, &scenario.Flags{})
}

// scenarioFlagsInto is scenarioFlags with the flags' values kept in f,
// where a command may register more of them (runLoadFlags). The loader
// builds the scenario from f alone when path is empty (scenario.FromFlags).
func scenarioFlagsInto(fs *flag.FlagSet, f *scenario.Flags) func(path string, extra ...string) (*scenario.Scenario, error) {
	fs.StringVar(&f.Target, "target", "", "override target.url (http://HOST:PORT or sim://PRESET)")
	fs.BoolVar(&f.AllowRemote, "allow-remote", false, "allow a target that is not this machine (target.allow_remote)")
	var sets, headers multiFlag
	fs.Var(&headers, "header", "send a header with every request, `Name:value` (repeatable; target.headers)")
	fs.Var(&sets, "set", "override a scenario field, `path=value` (repeatable), e.g. load.stages[0].rate=20")
	return func(path string, extra ...string) (*scenario.Scenario, error) {
		f.Headers = headers
		all := append(slices.Clone(extra), sets...)
		if path == "" {
			sc, err := scenario.FromFlags(*f, all...)
			if err != nil {
				return nil, usageError{err: err}
			}
			return sc, nil
		}
		sc, err := scenario.Load(path)
		if err != nil {
			return nil, usageError{err: err}
		}
		if err := sc.ApplyFlags(*f, all...); err != nil {
			return nil, usageError{err: err}
		}
		return sc, nil
	}
}

// runLoadFlags registers the flags that describe a run without a
// scenario file (or change a one-stage file's stage) into f.
func runLoadFlags(fs *flag.FlagSet, f *scenario.Flags) {
	fs.StringVar(&f.Model, "model", "", "the model `name` (target.model; default: the first of GET /v1/models)")
	fs.IntVar(&f.Concurrency, "concurrency", 0, "a closed loop of `N` workers")
	fs.Float64Var(&f.Rate, "rate", 0, "an open loop of `R` arrivals per second")
	choiceVar(fs, &f.Arrival, "arrival", "", []string{"poisson", "constant", "gamma"}, "the open loop's arrival process: poisson (default), constant or gamma")
	fs.IntVar(&f.Requests, "requests", 0, "stop the stage after `N` requests")
	fs.DurationVar(&f.Duration, "duration", 0, "stop the stage after `D` (30s, 5m)")
	fs.IntVar(&f.InputTokens, "input-tokens", 0, "prompts of `N` tokens")
	fs.IntVar(&f.OutputTokens, "output-tokens", 0, "ask for `N` output tokens (max_tokens)")
	fs.StringVar(&f.Dataset, "dataset", "", "take the prompts from `FILE` (ShareGPT JSON, or JSONL)")
	// The flags vllm bench serve users type, with vLLM's meaning.
	fs.IntVar(&f.MaxConcurrency, "max-concurrency", 0, "at most `N` requests in flight; with --rate, excess arrivals wait client-side (as vLLM's --max-concurrency), alone a closed loop of N")
	choiceVar(fs, &f.Overflow, "overflow", "", []string{"queue", "drop"}, "what an open loop does with an arrival finding the cap: queue (wait client-side) or drop (record it, never sent)")
	fs.Float64Var(&f.Burstiness, "burstiness", 0, "gamma arrivals of shape `B` (vLLM's --burstiness; 1 is Poisson, below 1 burstier)")
	fs.IntVar(&f.Warmups, "num-warmups", 0, "send `N` warmup requests first, left out of the figures (added to --requests)")
	fs.StringVar(&f.Seed, "seed", "", "the prompts' and arrivals' `seed` (prompts.seed)")
	fs.StringVar(&f.Tokenizer, "tokenizer", "", "count prompts with `T`: o200k_base, cl100k_base, server, or a tokenizer.json")
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
