package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/servebench/servebench/internal/atomicfile"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/chart"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
)

// Output file names, in the sweep's directory.
const (
	FileJSON = "sweep.json"
	FileCSV  = "sweep.csv"
	FilePNG  = "sweep.png"
	FileSVG  = "sweep.svg"
)

// RunFunc runs one derived scenario with its outputs in dir, which exists,
// and returns its summary, judged when the scenario has budgets; a missed
// budget is not an error. run.Run is one (see Options.Run).
type RunFunc func(ctx context.Context, sc *scenario.Scenario, dir string) (*report.Summary, error)

// Options configure Execute.
type Options struct {
	Dir string // the sweep's output directory (created if needed)
	// Run runs one scenario; nil runs it with run.Run and default options.
	Run    RunFunc
	Resume bool // skip runs whose directory already holds a summary.json
	// Log receives one line per step (launch, ready, result); nil discards.
	Log io.Writer
	// Environ is the base environment of launched servers (KEY=VALUE);
	// the server section's env is added to it.
	Environ []string
	// Servers, when not nil, holds the servers running at any moment, so
	// that a program aborting at once (a second Ctrl-C) can kill them with
	// Servers.Kill before it exits, which Execute, abandoned, cannot do.
	Servers *Servers
	// Probe runs one probe of a search, handing its records to an
	// over-saturation watch; nil uses Run (without the watch) when Run is
	// set, else run.Run.
	Probe ProbeFunc
	// NoPlots skips sweep.png, sweep.svg and sweep.html (sweep.json and
	// sweep.csv are still written): for sweeps whose summary is all that
	// matters, such as the many runs of a prediction's band.
	NoPlots bool
}

// Execute runs every job of the plan in order and writes sweep.json and
// sweep.csv after each, and the trade-off plot at the end. A run that
// fails (its server does not start or exits, the run errs, no request
// succeeds) is recorded and the sweep goes on. When ctx ends, the current
// run is stopped, the remaining ones are recorded as skipped, the outputs
// are written and the context's error is returned. Other errors are
// failures to write the outputs.
func (p *Plan) Execute(ctx context.Context, opts Options) (*Summary, error) {
	if opts.Run == nil {
		opts.Run = func(ctx context.Context, sc *scenario.Scenario, dir string) (*report.Summary, error) {
			return run.Run(ctx, sc, run.Options{Dir: dir, Render: chart.Renderer{}})
		}
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	s := &Summary{Schema: Schema, Tool: "servebench", Scenario: p.Name, Repeats: p.Repeats, Started: time.Now().UTC(), Budgets: p.Budgets,
		RankBy: p.RankBy, ParetoX: p.ParetoX}
	for _, pa := range p.Params {
		s.Parameters = append(s.Parameters, pa.Name)
	}
	var errs []error
	save := func() {
		s.summarise(p)
		if err := p.save(opts.Dir, s); err != nil {
			errs = append(errs, err)
		}
	}
	if p.Search != nil {
		s.Parameters = append(s.Parameters, p.Search.Parameter)
		if opts.Probe == nil {
			opts.Probe = defaultProbe(false)
			if run := opts.Run; run != nil {
				opts.Probe = func(ctx context.Context, sc *scenario.Scenario, dir string, _ func(results.Record, int)) (*report.Summary, error) {
					return run(ctx, sc, dir)
				}
			}
		}
		p.executeSearch(ctx, opts, s, func(line string) { fmt.Fprintln(log, line) }, save)
		return p.finish(ctx, opts, s, save, errs)
	}
	for i := range p.Jobs {
		j := &p.Jobs[i]
		prefix := fmt.Sprintf("[%d/%d] %s", i+1, len(p.Jobs), j.Label)
		if p.Repeats > 1 {
			prefix += fmt.Sprintf(" (repeat %d)", j.Repeat)
		}
		var rec RunRecord
		resumed, done := RunRecord{}, false
		if opts.Resume && ctx.Err() == nil && j.Done(opts.Dir) {
			resumed, done = p.resumed(opts.Dir, j)
			if !done {
				fmt.Fprintf(log, "%s: running again: %s\n", prefix, resumed.Error)
			}
		}
		switch {
		case ctx.Err() != nil:
			rec = p.record(j, StatusSkipped)
		case done:
			rec = resumed
			fmt.Fprintf(log, "%s: %s\n", prefix, describe(&rec))
		default:
			rec = p.runJob(ctx, opts, j, func(format string, args ...any) {
				fmt.Fprintf(log, "%s: %s\n", prefix, fmt.Sprintf(format, args...))
			})
			fmt.Fprintf(log, "%s: %s\n", prefix, describe(&rec))
		}
		s.Runs = append(s.Runs, rec)
		save()
	}
	return p.finish(ctx, opts, s, save, errs)
}

// finish writes the final sweep.json, sweep.csv and the plot.
func (p *Plan) finish(ctx context.Context, opts Options, s *Summary, save func(), errs []error) (*Summary, error) {
	s.Finished = time.Now().UTC()
	save()
	if !opts.NoPlots {
		if err := p.plot(opts.Dir, s); err != nil {
			errs = append(errs, err)
		}
	}
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return s, errors.Join(errs...)
}

func (p *Plan) save(dir string, s *Summary) error {
	if err := atomicfile.Write(filepath.Join(dir, FileJSON), func(w io.Writer) error { return WriteJSON(w, s) }); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, FileCSV), func(w io.Writer) error { return WriteCSV(w, s) }); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}

func (p *Plan) record(j *Job, status string) RunRecord {
	return RunRecord{Label: j.Label, Values: valueMap(j.Values), Repeat: j.Repeat, Dir: j.Dir, Status: status}
}

// resumed rebuilds a finished run's summary from its results file instead
// of running it again, judged by the budgets recorded in it. ok is false
// when the run must run again: it was interrupted (canceled requests, or
// no clean end), or its results cannot be read; rec.Error says why.
func (p *Plan) resumed(dir string, j *Job) (rec RunRecord, ok bool) {
	rec = p.record(j, StatusResumed)
	_, sum, err := report.Rebuild(filepath.Join(dir, j.Dir, run.FileResults))
	switch {
	case err != nil:
		rec.Error = err.Error()
		return rec, false
	case sum.Incomplete != "":
		rec.Error = "the earlier run did not complete (" + sum.Incomplete + ")"
		return rec, false
	case sum.Overall.Requests.Canceled > 0:
		rec.Error = fmt.Sprintf("the earlier run had %d canceled requests", sum.Overall.Requests.Canceled)
		return rec, false
	}
	p.takeSummary(sum, &rec)
	if rec.Status == StatusFailed {
		rec.Error = "resumed: " + rec.Error
	}
	return rec, true
}

// runJob makes one run: launch the server if any, wait for it, run the
// scenario, stop the server, read the summary.
// The result is named: the deferred server stop records how it ended.
func (p *Plan) runJob(ctx context.Context, opts Options, j *Job, logf func(string, ...any)) (rec RunRecord) {
	rec = p.record(j, StatusOK)
	rec.Started = time.Now().UTC()
	start := time.Now()
	defer func() { rec.DurationS = roundS(time.Since(start)) }()
	dir := filepath.Join(opts.Dir, j.Dir)
	fail := func(format string, args ...any) RunRecord {
		rec.Status, rec.Error = StatusFailed, fmt.Sprintf(format, args...)
		rec.DurationS = roundS(time.Since(start))
		return rec
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("%v", err)
	}
	// Outputs left by an earlier attempt must not pass for this run's.
	if err := run.ClearOutputs(dir, chart.Renderer{}); err != nil {
		return fail("%v", err)
	}
	sc := j.Scenario
	rec.Target = sc.Target.URL
	var proc *process
	if sv := p.Server; sv != nil {
		port := sv.Port
		if port == 0 {
			var err error
			if port, err = freePort(); err != nil {
				return fail("%v", err)
			}
		}
		l, err := sv.Render(j.Vars(strconv.Itoa(port)))
		if err != nil {
			return fail("render server: %v", err)
		}
		derived := *sc
		if err := derived.Set("target.url", l.BaseURL); err != nil {
			return fail("server base_url: %v", err)
		}
		if err := p.Policy.CheckURL(l.ReadyURL); err != nil {
			return fail("server ready_url %v", err)
		}
		sc, rec.Target, rec.Command = &derived, l.BaseURL, l.Args
		if err := checkFree(p.Policy, l.BaseURL); err != nil {
			return fail("%v", err)
		}
		logPath := filepath.Join(dir, "server.log")
		rec.ServerLog = filepath.Join(j.Dir, "server.log")
		proc, err = launch(l.Args, append(slices.Clone(opts.Environ), l.Env...), logPath)
		if err != nil {
			return fail("%v", err)
		}
		opts.Servers.add(proc)
		logf("started %s (process group %d, log %s)", shellJoin(l.Args), proc.Pid(), logPath)
		stop := func() {
			defer opts.Servers.remove(proc)
			st, err := proc.Stop(sv.StopTimeout.D())
			rec.Server = st.Status
			if st.Forced {
				rec.Server += fmt.Sprintf(" (killed: still running %s after SIGTERM)", sv.StopTimeout)
			}
			if err != nil {
				rec.Status, rec.Error = StatusFailed, joinMsg(rec.Error, err.Error())
			}
		}
		waited := time.Now()
		if err := proc.WaitReady(ctx, l.ReadyURL, sv.ReadyTimeout.D(), p.Policy); err != nil {
			stop()
			return fail("server did not become ready: %v", err)
		}
		logf("server ready in %s; running the load against %s", time.Since(waited).Round(time.Millisecond), l.BaseURL)
		defer stop()
	}
	sum, runErr := opts.Run(ctx, sc, dir)
	if proc != nil {
		if exited, err := proc.Exited(); exited {
			rec.Status = StatusFailed
			rec.Error = joinMsg(rec.Error, fmt.Sprintf("server exited during the run (%s)%s", exitStatus(err), proc.logTail()))
		}
	}
	if runErr != nil {
		rec.Status, rec.Error = StatusFailed, joinMsg(rec.Error, runErr.Error())
	}
	if sum == nil {
		rec.Status = StatusFailed
		if rec.Error == "" {
			rec.Error = "the run wrote no summary"
		}
		return rec
	}
	p.takeSummary(sum, &rec)
	return rec
}

// takeSummary records a run's figures and verdict, and marks rec failed
// when no request succeeded.
func (p *Plan) takeSummary(sum *report.Summary, rec *RunRecord) {
	rec.Metrics = metricsOf(sum)
	rec.BudgetsPass, rec.Inconclusive, rec.Missed = verdictOf(sum.Verdict)
	rec.Checks = checkMargins(sum.Verdict)
	if sum.Overall.Requests.OK == 0 && rec.Status != StatusFailed {
		rec.Status = StatusFailed
		rec.Error = joinMsg(rec.Error, fmt.Sprintf("no request succeeded (%d failed, errors %v)", sum.Overall.Requests.Failed, sum.Overall.Errors))
	}
}

func joinMsg(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func roundS(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

// shortMs is a latency for a log line: three significant digits, whole
// milliseconds from 100 ms.
func shortMs(x float64) string {
	if x >= 100 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// describe is the one-line result of a run, for the log.
func describe(r *RunRecord) string {
	switch {
	case r.Status == StatusFailed:
		return "failed: " + r.Error
	case r.Status == StatusOverSaturated:
		return r.Error
	case r.Metrics == nil:
		return r.Status
	}
	m := r.Metrics
	s := fmt.Sprintf("%s: %g ok, %g failed; TTFT p50 %s p99 %s ms; ITL p50 %s p99 %s ms; %.1f output tokens/s",
		r.Status, m.OK, m.Failed, shortMs(m.TTFTP50), shortMs(m.TTFTP99), shortMs(m.ITLP50), shortMs(m.ITLP99), m.OutputTokensPerSec)
	switch {
	case r.BudgetsPass == nil:
	case *r.BudgetsPass:
		s += "; budgets met"
	case r.Inconclusive:
		s += "; budgets inconclusive"
	default:
		s += "; budgets missed"
	}
	return s
}
