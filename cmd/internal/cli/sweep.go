package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/sweep"
)

const sweepUsage = `Usage: bench sweep SCENARIO [--out DIR] [--dry-run] [--resume] [--virtual] [--set path=value ...]
       bench sweep SCENARIO --search load.stages[N].rate|concurrency --between LO,HI [--resolution R] [--repeats N] ...

Runs a scenario once per value of the parameters in its sweep: block (every
combination, each 'repeats' times) and recommends a value. Each run goes
into its own directory, DIR/NAME=VALUE, with the files 'bench run' writes.

With --search (or a sweep.search block) it answers the capacity question
instead: the highest rate (open loop) or concurrency (closed loop) of one
stage whose budgets pass. It probes LO (which must pass) and HI (which
must fail), then bisects to the resolution; every probe is a full run in
DIR/PARAM=VALUE. A probe whose deciding budget is within 10 % of its limit,
or whose percentile was judged on too few samples, runs again (up to
--repeats runs; the simulator with its next seed) and the majority decides.
An open-loop probe whose requests in flight and TTFT both keep growing is
stopped early as over-saturated. The answer comes with the bracket it was
narrowed to and its confidence; with sweep.parameters, each combination
gets its own search (a launched server is started for every probe).

  sweep:
    search:
      parameter: "load.stages[0].rate"
      between: [1, 64]
      resolution: 1

  sweep:
    parameters:
      max_num_batched_tokens: [1024, 2048, 4096, 8192, 16384]
    server:                      # optional: launch the server for each run
      command: ["vllm", "serve", "MODEL", "--port", "{{.port}}",
                "--max-num-batched-tokens", "{{.max_num_batched_tokens}}"]
      ready_timeout: 10m         # polls http://127.0.0.1:{{.port}}/health

With a server section the command (a list, or one string for /bin/sh -c
in which every value is substituted single-quoted: write {{.name}} bare) is
started in its own process group for every run (output in
DIR/NAME=VALUE/server.log) and loaded once its readiness URL answers 2xx;
then the group gets SIGTERM and, after stop_timeout, SIGKILL. {{.port}} is a
free loopback port. A one-command string is exec'd; a string of several
(a && b) should exec its server itself. A second Ctrl-C kills the server's
process group at once. Without a server section a sim:// target gets each
value as a simulator setting, and a parameter named like a scenario field
(load.stages[0].rate) is set on the scenario.

With --virtual (a sim:// target, no server section) every run is made in
virtual time (see 'bench help run'): a sweep of minutes-long runs takes
seconds.

A run whose server fails to start, exits or serves nothing fails for its
value and the sweep goes on. DIR/sweep.json, .csv, .png/.svg (TTFT, ITL
and throughput against the value, budget lines, each value's verdict) and
sweep.html (the answer, the table, load curves, a Pareto plot of output
tok/s per user against the total) are rewritten after every run. The
recommendation: the best output throughput among values that met the
budgets (or, without any, had no failed request).

Exit codes: 0 done (see the table for failed runs), 1 every run failed, 2
bad scenario or flags, 3 no value met the budgets (a search: even LO
missed them), 130 interrupted (--resume continues).

Examples:
  bench sweep scenarios/mnbt-sweep.yaml --out runs/mnbt
  bench sweep scenarios/mnbt-sweep.yaml --dry-run
  bench sweep scenarios/mnbt-sweep.yaml --out runs/mnbt --resume
  bench sweep vllm-sweep.yaml --set 'sweep.parameters.max_num_batched_tokens=[2048, 8192]'
  bench sweep scenarios/release-gate.yaml --search 'load.stages[1].rate' --between 5,80 --virtual
  bench sweep my.yaml --search 'load.stages[0].concurrency' --between 1,128 --target http://127.0.0.1:8000
`

func sweepCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "sweep", sweepUsage)
	outDir := fs.String("out", "", "output directory (default runs/NAME[-sweep]-YYYYMMDD-HHMMSS)")
	dryRun := fs.Bool("dry-run", false, "print each run's directory, target and server command, and run nothing")
	resume := fs.Bool("resume", false, "skip runs whose directory under --out already holds a summary.json")
	quiet := fs.Bool("quiet", false, "no per-run progress output")
	load := scenarioFlags(fs)
	virtual := fs.Bool("virtual", false, "run a sim:// target in virtual time (no server section)")
	search := fs.String("search", "", "search the highest `load.stages[N].rate|concurrency` whose budgets pass")
	between := fs.String("between", "", "the search's range, `LO,HI`")
	resolution := fs.Float64("resolution", 0, "the search's resolution (default (HI-LO)/32)")
	repeats := fs.Int("repeats", 0, "the most runs deciding a probe near the boundary (default 3)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageFor(fs, "sweep: want exactly one scenario file, got %d", len(pos))
	}
	searchSets, err := searchOverrides(*search, *between, *resolution, *repeats)
	if err != nil {
		return err
	}
	sc, err := load(pos[0], searchSets...)
	if err != nil {
		return err
	}
	if sc.Sweep == nil {
		return usagef("sweep: %s has no sweep block (see 'bench help sweep'); use 'bench run' for a single run", pos[0])
	}
	plan, err := sweep.NewPlan(ctx, sc)
	if err != nil {
		return usageError{err: err}
	}
	dir, err := sweepDir(sc.Name, *outDir, *resume)
	if err != nil {
		return err
	}
	if *virtual && !plan.Sim {
		return usagef("sweep: --virtual needs a sim:// target and no sweep.server section")
	}
	if *dryRun {
		return plan.DryRun(e.stdout, dir, *resume)
	}
	runOne, probe := sweepRunners(e, *quiet, *virtual)
	log := e.stderr
	if plan.Search != nil {
		fmt.Fprintf(log, "search %q: %s in [%g, %g] → %s\n", sc.Name, plan.Search.Parameter, plan.Search.Low(), plan.Search.High(), dir)
	} else {
		fmt.Fprintf(log, "sweep %q: %d runs → %s\n", sc.Name, len(plan.Jobs), dir)
	}
	// An abort exits without waiting for the sweep to stop its server:
	// the server's process group is killed first.
	servers := &sweep.Servers{}
	defer e.aborts.add(func() {
		if n := servers.Kill(); n > 0 {
			fmt.Fprintf(log, "killed the server's process group\n")
		}
	})()
	s, execErr := plan.Execute(ctx, sweep.Options{Dir: dir, Run: runOne, Probe: probe, Resume: *resume, Log: log, Environ: os.Environ(), Servers: servers})
	return sweepOutcome(ctx, e, s, dir, execErr)

}

// sweepDir is the sweep's output directory: --out, or a new one under
// runs/ (not with --resume, which continues a given one).
func sweepDir(name, out string, resume bool) (string, error) {
	if out != "" {
		return out, nil
	}
	if resume {
		return "", usagef("sweep: --resume needs --out DIR, the directory of the sweep to continue")
	}
	name = safeName(name)
	if !strings.Contains(name, "sweep") {
		name += "-sweep"
	}
	return filepath.Join("runs", name+"-"+time.Now().Format("20060102-150405")), nil
}

// sweepRunners are the functions that run one value of a sweep and one
// probe of a search, from the command line.
func sweepRunners(e env, quiet, virtual bool) (sweep.RunFunc, sweep.ProbeFunc) {
	runOne := func(ctx context.Context, sc *scenario.Scenario, dir string) (*report.Summary, error) {
		opts, err := runOptions(e, sc, dir, quiet)
		if err != nil {
			return nil, err
		}
		opts.Virtual = virtual
		return run.Run(ctx, sc, opts)
	}
	probe := func(ctx context.Context, sc *scenario.Scenario, dir string, observe func(results.Record, int)) (*report.Summary, error) {
		opts, err := runOptions(e, sc, dir, quiet)
		if err != nil {
			return nil, err
		}
		opts.Virtual, opts.Observe, opts.Grace = virtual, observe, -1
		return run.Run(ctx, sc, opts)
	}
	return runOne, probe
}

// sweepOutcome prints a finished (or interrupted) sweep's table and files
// and returns its exit: interrupted, failed, budgets missed or nil.
func sweepOutcome(ctx context.Context, e env, s *sweep.Summary, dir string, execErr error) error {
	if s == nil {
		return execErr
	}
	if err := sweep.WriteText(e.stdout, s); err != nil {
		return errors.Join(execErr, err)
	}
	// Name only what was written: an interrupted sweep may have no plot.
	var written []string
	for _, name := range []string{sweep.FileJSON, sweep.FileCSV, sweep.FilePNG, sweep.FileHTML} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			written = append(written, filepath.Join(dir, name))
		}
	}
	fmt.Fprintf(e.stdout, "sweep: %s\n", strings.Join(written, ", "))
	switch {
	case ctx.Err() != nil:
		return errors.Join(execErr, errInterrupted)
	case execErr != nil:
		return execErr
	}
	completed := false
	for _, r := range s.Runs {
		completed = completed || r.Status == sweep.StatusOK || r.Status == sweep.StatusResumed || r.Status == sweep.StatusOverSaturated
	}
	switch {
	case !completed:
		return reported{fmt.Errorf("sweep: every run failed")}
	case s.Recommendation.Label == "" && s.Recommendation.Basis == "budgets":
		return reported{fmt.Errorf("%w: no value of the sweep met the budgets", errBudget)}
	case len(s.Search) > 0 && s.Recommendation.Reason != "" && s.Recommendation.Values == nil && allBelow(s.Search):
		return reported{fmt.Errorf("%w: even the low end of the search missed the budgets", errBudget)}
	}
	return nil
}

// allBelow reports whether no search found a passing value.
func allBelow(rs []sweep.SearchResult) bool {
	for _, r := range rs {
		if r.Answer != nil {
			return false
		}
	}
	return true
}

// searchOverrides turns --search, --between, --resolution and --repeats
// into sweep.search overrides.
func searchOverrides(param, between string, resolution float64, repeats int) ([]string, error) {
	if param == "" {
		if between != "" || resolution != 0 || repeats != 0 {
			return nil, usagef("sweep: --between, --resolution and --repeats go with --search")
		}
		return nil, nil
	}
	lo, hi, ok := strings.Cut(between, ",")
	if !ok {
		return nil, usagef("sweep: --search needs --between LO,HI (got %q)", between)
	}
	sets := []string{"sweep.search.parameter=" + param, fmt.Sprintf("sweep.search.between=[%s, %s]", strings.TrimSpace(lo), strings.TrimSpace(hi))}
	if resolution != 0 {
		sets = append(sets, fmt.Sprintf("sweep.search.resolution=%g", resolution))
	}
	if repeats != 0 {
		sets = append(sets, fmt.Sprintf("sweep.search.repeats=%d", repeats))
	}
	return sets, nil
}
