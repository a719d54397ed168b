package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/sweep"
)

const sweepUsage = `Usage: bench sweep SCENARIO [--out DIR] [--dry-run] [--resume] [--virtual] [--set path=value ...]

Runs a scenario once per value of the parameters in its sweep: block (every
combination, each 'repeats' times) and recommends a value. Each run goes
into its own directory, DIR/NAME=VALUE, with the files 'bench run' writes.

  sweep:
    parameters:
      max_num_batched_tokens: [1024, 2048, 4096, 8192, 16384]
    server:                      # optional: launch the server for each run
      command: ["vllm", "serve", "MODEL", "--port", "{{.port}}",
                "--max-num-batched-tokens", "{{.max_num_batched_tokens}}"]
      ready_timeout: 10m         # polls http://127.0.0.1:{{.port}}/health

With a server section the command (a list, or one string for /bin/sh -c)
is started in its own process group for every run, with its output in
DIR/NAME=VALUE/server.log; once its readiness URL answers 2xx the load
runs against it, then the whole group gets SIGTERM and, after stop_timeout,
SIGKILL. {{.port}} is a free loopback port unless server.port sets one.
Without a server section a sim:// target gets each value as a simulator
setting (sim://PRESET?max_num_batched_tokens=2048), and a parameter named
like a scenario field (load.stages[0].rate) is set on the scenario.

With --virtual (a sim:// target, no server section) every run is made in
virtual time (see 'bench help run'): a sweep of minutes-long runs takes
seconds.

A run whose server fails to start, exits, or serves no request is recorded
as failed for its value and the sweep goes on. DIR/sweep.json and
DIR/sweep.csv are rewritten after every run; DIR/sweep.png and sweep.svg
plot TTFT and ITL (p50, p99) and throughput against the value. The
recommendation is the value with the best output throughput among those
that met the scenario's budgets (or, without budgets, that had no failed
request).

Exit codes: 0 done (some runs may have failed: see the table), 1 every run
failed, 2 bad scenario or flags, 3 no value met the budgets, 130
interrupted (the outputs so far are written; --resume continues).

Examples:
  bench sweep scenarios/mnbt-sweep.yaml --out runs/mnbt
  bench sweep scenarios/mnbt-sweep.yaml --dry-run
  bench sweep scenarios/mnbt-sweep.yaml --out runs/mnbt --resume
  bench sweep vllm-sweep.yaml --set 'sweep.parameters.max_num_batched_tokens=[2048, 8192]'
`

func sweepCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "sweep", sweepUsage)
	outDir := fs.String("out", "", "output directory (default runs/NAME[-sweep]-YYYYMMDD-HHMMSS)")
	dryRun := fs.Bool("dry-run", false, "print each run's directory, target and server command, and run nothing")
	resume := fs.Bool("resume", false, "skip runs whose directory under --out already holds a summary.json")
	quiet := fs.Bool("quiet", false, "no per-run progress output")
	target := fs.String("target", "", "override target.url (when the sweep has no server section)")
	virtual := fs.Bool("virtual", false, "run a sim:// target in virtual time (no server section)")
	var sets multiFlag
	fs.Var(&sets, "set", "override a scenario field, `path=value` (repeatable), e.g. sweep.repeats=3")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return usagef("sweep: want exactly one scenario file, got %d", len(pos))
	}
	sc, err := loadScenario(pos[0], *target, sets)
	if err != nil {
		return err
	}
	if sc.Sweep == nil {
		return usagef("sweep: %s has no sweep block (see 'bench help sweep'); use 'bench run' for a single run", pos[0])
	}
	plan, err := sweep.NewPlan(sc)
	if err != nil {
		return usageError{err}
	}
	dir := *outDir
	if dir == "" {
		if *resume {
			return usagef("sweep: --resume needs --out DIR, the directory of the sweep to continue")
		}
		name := safeName(sc.Name)
		if !strings.Contains(name, "sweep") {
			name += "-sweep"
		}
		dir = filepath.Join("runs", name+"-"+time.Now().Format("20060102-150405"))
	}
	if *virtual && !plan.Sim {
		return usagef("sweep: --virtual needs a sim:// target and no sweep.server section")
	}
	if *dryRun {
		return plan.DryRun(e.stdout, dir, *resume)
	}
	runOne := func(ctx context.Context, sc *scenario.Scenario, dir string) (*report.Summary, error) {
		opts := runOptions(e, sc, dir, *quiet)
		opts.Virtual = *virtual
		return run.Run(ctx, sc, opts)
	}
	log := e.stderr
	fmt.Fprintf(log, "sweep %q: %d runs → %s\n", sc.Name, len(plan.Jobs), dir)
	s, execErr := plan.Execute(ctx, sweep.Options{Dir: dir, Run: runOne, Resume: *resume, Log: log, Environ: os.Environ()})
	if s == nil {
		return execErr
	}
	if err := sweep.WriteText(e.stdout, s); err != nil {
		return errors.Join(execErr, err)
	}
	// Name only what was written: an interrupted sweep may have no plot.
	var written []string
	for _, name := range []string{sweep.FileJSON, sweep.FileCSV, sweep.FilePNG} {
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
		completed = completed || r.Status == sweep.StatusOK || r.Status == sweep.StatusResumed
	}
	switch {
	case !completed:
		return reported{fmt.Errorf("sweep: every run failed")}
	case s.Recommendation.Label == "" && s.Recommendation.Basis == "budgets":
		return reported{fmt.Errorf("%w: no value of the sweep met the budgets", errBudget)}
	}
	return nil
}
