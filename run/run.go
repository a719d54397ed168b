package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/internal/atomicfile"
	"github.com/servebench/servebench/internal/loopback"
	"github.com/servebench/servebench/internal/simurl"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/chart"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/scrape"
	"github.com/servebench/servebench/sim"
)

// Output file names, in the run's directory.
const (
	FileResults = "results.jsonl"
	FileSummary = "summary.json"
	FileJUnit   = "junit.xml"
	FileVerdict = "verdict.md"
	FileSimLog  = "sim.log"
)

// Outputs returns the names of the files a run may write into its
// directory, the plots included.
func Outputs() []string {
	out := []string{FileResults, FileResults + ".gz", FileSummary, FileJUnit, FileVerdict, FileSimLog, chart.HTMLName}
	for _, name := range chart.PlotNames() {
		out = append(out, name+".png", name+".svg")
	}
	return out
}

// ClearOutputs removes from dir every file a run may write, so that a run
// into a used directory leaves nothing stale behind (a junit.xml from a
// gated run under an ungated one). Other files are left alone.
func ClearOutputs(dir string) error {
	for _, name := range Outputs() {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// UsedDirError is PrepareDir's refusal of a directory holding a run.
type UsedDirError struct {
	Dir   string
	Files []string // the run's files found there
}

func (e *UsedDirError) Error() string {
	return fmt.Sprintf("--out %s already holds a run (%s): choose another directory, or pass --force to replace it",
		e.Dir, strings.Join(e.Files, ", "))
}

// PrepareDir creates a run's output directory, or checks that an existing
// one holds no run (no file of Outputs): an earlier run's files are never
// overwritten silently (*UsedDirError). With force they are removed first,
// so that nothing stale stays beside the new run's files.
func PrepareDir(dir string, force bool) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return err
	}
	var found []string
	for _, e := range entries {
		if slices.Contains(Outputs(), e.Name()) {
			found = append(found, e.Name())
		}
	}
	switch {
	case len(found) == 0:
		return nil
	case !force:
		return &UsedDirError{Dir: dir, Files: found}
	}
	return ClearOutputs(dir)
}

// Options configure a Run. The zero value of each field selects its
// documented default.
type Options struct {
	// Dir is the run's output directory. It must exist.
	Dir string
	// APIKey is sent as a bearer token when not empty; the caller reads it
	// from the environment variable target.api_key_env names. It is never
	// written anywhere.
	APIKey string
	// Progress, when not nil, receives a line naming the run and its
	// target, then a live status line while the load runs.
	Progress io.Writer
	// Terminal redraws the status line in place (Progress is a terminal);
	// otherwise a plain line is written every few seconds.
	Terminal bool
	// Grace is how long in-flight requests may finish once the run is
	// stopped (DefaultGrace when zero; negative cancels them at once).
	Grace time.Duration
	// Virtual runs a sim:// target in virtual time (see Simulate): the
	// engine on a virtual clock, no HTTP, the same outputs. Any other
	// target is a *ConfigError.
	Virtual bool
	// Observe, when not nil, is called with every record the run writes,
	// in order, from one goroutine, and with the number of requests in
	// flight at that moment (sent and not yet recorded). It must return
	// quickly: the run's writer waits for it. A search watches a probe's
	// records with it to stop an over-saturated one early.
	Observe func(rec results.Record, inFlight int)
	// NoPlots skips the plots and report.html (results.jsonl, summary.json
	// and the verdict files are still written): for the many runs of a
	// search or a prediction, whose page is the sweep's.
	NoPlots bool
}

// ConfigError is a run that could not start because of its scenario or
// target (a bad URL, an unknown simulator preset, a non-loopback host):
// the user's input, not the server, is at fault.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErr(format string, args ...any) error {
	return &ConfigError{fmt.Errorf(format, args...)}
}

// Run runs sc (which must have passed Validate) and writes into opts.Dir
// everything a run leaves behind: results.jsonl, written record by record
// as requests finish; then summary.json, the plots and report.html, and
// with budgets junit.xml and verdict.md, all from one aggregation pass
// over the records as they were written. It returns the summary, with its
// verdict when the scenario has budgets.
//
// Run fixes the run's epoch, starts the target (the simulator in-process
// for sim://PRESET), detects the model when the scenario names none, opens
// the connections the load will need, scrapes the server's /metrics, and
// watches the harness itself.
//
// Canceling ctx stops new arrivals; in-flight requests get the grace
// period, then are canceled. The summary is still written and returned,
// with an error wrapping ctx's cause. The summary is nil only when nothing
// was written (the run could not start); the error is then a
// *ConfigError when the scenario or target is at fault.
func Run(ctx context.Context, sc *scenario.Scenario, opts Options) (*report.Summary, error) {
	// The epoch: every offset in the results counts from here, monotonic.
	epoch := time.Now()
	sc = sc.Clone()
	if opts.Virtual {
		if !simurl.Is(sc.Target.URL) {
			return nil, configErr("target.url %s: virtual time needs the simulator (sim://PRESET or sim://./FILE.yaml)", sc.Target.URL)
		}
		return runVirtual(ctx, sc, opts)
	}
	if sc.Prompts.Salt == scenario.SaltRandom {
		// A salt of this run's own, recorded in the header so the run can
		// be repeated with the same prompts.
		if err := sc.Set("prompts.salt", fmt.Sprintf("%x", epoch.UnixNano())); err != nil {
			return nil, &ConfigError{err}
		}
	}

	baseURL, stopTarget, err := startTarget(ctx, sc, opts.Dir)
	if err != nil {
		return nil, err
	}
	// The target outlives the load: it is stopped only after every
	// in-flight request has been recorded.
	defer stopTarget()

	cl, err := client.New(client.Config{
		BaseURL:   baseURL,
		APIKey:    opts.APIKey,
		Epoch:     epoch,
		MaxConns:  sc.MaxConcurrency(),
		Connect:   sc.Target.Timeouts.Connect.D(),
		FirstByte: sc.Target.Timeouts.FirstByte.D(),
		Idle:      sc.Target.Timeouts.Idle.D(),
		Total:     sc.Target.Timeouts.Total.D(),
	})
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("target: %w", err)}
	}
	defer cl.Close()
	if sc.Target.Model == "" {
		if err := detectModel(ctx, cl, sc, baseURL); err != nil {
			return nil, err
		}
	}
	// Open the connections the run will need before the load, so the first
	// requests' TTFT does not include a burst of dials.
	if _, err := cl.Warm(ctx, sc.MaxConcurrency()); err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("connect to %s: %w", baseURL, err)
	}
	grace := opts.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	sched, err := newScheduler(sc, cl, withEpoch(epoch), withGrace(grace))
	if err != nil {
		return nil, &ConfigError{err}
	}
	resolved, err := sc.Resolved()
	if err != nil {
		return nil, err
	}
	spec, err := results.DecodeSpec(resolved)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	hdr := &results.Header{Schema: results.Schema, Tool: "servebench", Version: Version(),
		Started: epoch, Host: host, Target: baseURL, Model: sc.Target.Model, Scenario: resolved, Ends: true, Spec: spec}

	path := filepath.Join(opts.Dir, FileResults)
	w, err := results.Create(path)
	if err != nil {
		return nil, err
	}
	agg := report.New()
	runErr := load(ctx, sc, opts, w, agg, hdr, sched, cl, baseURL, epoch)
	if ctx.Err() != nil && runErr == nil {
		runErr = fmt.Errorf("run stopped: %w", context.Cause(ctx))
	}
	sum, err := finish(opts.Dir, agg, spec, opts.NoPlots)
	if runErr == nil && sum != nil {
		runErr = noSuccess(sum)
	}
	return sum, errors.Join(runErr, err)
}

// ErrNoSuccess is the error of a run that completed without a single
// request succeeding (a wrong model name, a server refusing every request):
// its figures describe nothing.
var ErrNoSuccess = errors.New("no request succeeded")

// noSuccess returns an error wrapping ErrNoSuccess, with the counts and the
// server's first messages, when no measured request of a run succeeded.
func noSuccess(sum *report.Summary) error {
	o := &sum.Overall
	if o.Requests.OK > 0 || o.Requests.Scheduled == 0 {
		return nil
	}
	var classes []string
	for _, k := range slices.Sorted(maps.Keys(o.Errors)) {
		classes = append(classes, fmt.Sprintf("%s=%d", k, o.Errors[k]))
	}
	msg := fmt.Sprintf("%d failed, %d dropped", o.Requests.Failed, o.Requests.Dropped)
	if len(classes) > 0 {
		msg += " (" + strings.Join(classes, " ") + ")"
	}
	for _, k := range slices.Sorted(maps.Keys(o.ErrorMessages)) {
		msg += "; " + k + ": " + o.ErrorMessages[k][0]
		break
	}
	return fmt.Errorf("%w: %s", ErrNoSuccess, msg)
}

// load writes the header, runs the scheduler and the scraper, and writes
// every record as it arrives, adding it to agg. It closes w.
func load(ctx context.Context, sc *scenario.Scenario, opts Options, w *results.Writer, agg *report.Aggregate,
	hdr *results.Header, sched *scheduler, cl *client.Client, baseURL string, epoch time.Time) error {
	if err := w.Write(results.HeaderRecord(hdr)); err != nil {
		return errors.Join(err, w.Close())
	}
	agg.AddHeader(hdr)

	prog := newProgress(epoch, func() int64 { return sched.counters().InFlight }, cl.Chunks)
	health := startHealth(epoch, simurl.Is(sc.Target.URL))
	records := make(chan results.Record, 4096)
	// runCtx ends the load when the user interrupts or when the results
	// writer fails (a run whose records cannot be kept is not worth going on).
	runCtx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	g := new(errgroup.Group)
	g.Go(func() error { // the single writer of the results file
		var werr error
		for rec := range records {
			if rec.Result != nil {
				prog.add(rec.Result)
			}
			if werr == nil {
				if werr = w.Write(rec); werr != nil {
					stopRun(werr)
				}
			}
			// The summary sees exactly what the file holds.
			if werr == nil {
				agg.AddRecord(rec)
			}
			if opts.Observe != nil {
				opts.Observe(rec, int(sched.counters().InFlight))
			}
		}
		return errors.Join(werr, w.Close())
	})
	// The scheduler never drops a record: a full channel blocks the
	// emitter (backpressure), and the time spent blocked is reported as
	// harness lag.
	emit := func(r results.Result) { health.send(records, &r) }

	drawCtx, stopDraw := context.WithCancel(context.Background())
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "running %q against %s (model %s); results → %s\n",
			sc.Name, baseURL, sc.Target.Model, filepath.Join(opts.Dir, FileResults))
		g.Go(func() error { prog.draw(drawCtx, opts.Progress, opts.Terminal, 5*time.Second); return nil })
	}
	g.Go(func() error {
		defer stopDraw()
		warn := func(source, msg string) {
			records <- results.WarningRecord(&results.Warning{At: time.Since(epoch), Source: source, Message: msg})
		}
		stopScrape := startScraper(sc, baseURL, epoch, records, warn)
		err := sched.Run(runCtx, emit)
		stopScrape()
		for _, msg := range health.finish() {
			warn("harness", msg)
		}
		end := &results.End{At: time.Since(epoch), Completed: err == nil && ctx.Err() == nil}
		if !end.Completed {
			end.Reason = "interrupted"
			if err != nil {
				end.Reason = err.Error()
			}
		}
		records <- results.EndRecord(end)
		close(records)
		return err
	})
	return g.Wait()
}

// finish computes the summary from agg, judges it when the scenario has
// budgets, and writes summary.json, the verdict files and, unless
// noPlots, the plots and report.html into dir.
func finish(dir string, agg *report.Aggregate, spec *results.Spec, noPlots bool) (*report.Summary, error) {
	sum := agg.Summary()
	if spec != nil && spec.Budgets != nil {
		sum.Verdict = agg.Evaluate(sum, spec.Budgets, spec.SLO)
	}
	if err := WriteSummaryFiles(dir, sum); err != nil {
		return sum, err
	}
	if noPlots {
		return sum, nil
	}
	if _, err := chart.WriteFiles(dir, agg, sum); err != nil {
		return sum, fmt.Errorf("plots: %w", err)
	}
	return sum, nil
}

// WriteSummaryFiles writes summary.json into dir and, when the summary has
// a verdict, junit.xml and verdict.md.
func WriteSummaryFiles(dir string, sum *report.Summary) error {
	type output struct {
		name  string
		write func(io.Writer, *report.Summary) error
	}
	files := []output{{FileSummary, report.WriteJSON}}
	if sum.Verdict != nil {
		files = append(files, output{FileJUnit, report.WriteJUnit}, output{FileVerdict, report.WriteVerdictMarkdown})
	}
	for _, f := range files {
		if err := atomicfile.Write(filepath.Join(dir, f.name), func(w io.Writer) error { return f.write(w, sum) }); err != nil {
			return err
		}
	}
	return nil
}

// detectModel sets target.model to the first model the server lists.
func detectModel(ctx context.Context, cl *client.Client, sc *scenario.Scenario, baseURL string) error {
	models, err := cl.Models(ctx)
	var netErr *net.OpError
	switch {
	case errors.As(err, &netErr):
		// The server is not there: naming a model would not help.
		return fmt.Errorf("cannot reach %s: %w (is the server running?)", baseURL, err)
	case err != nil:
		return fmt.Errorf("detect model from %s/v1/models: %w (set target.model to skip detection)", baseURL, err)
	}
	if len(models) == 0 {
		return fmt.Errorf("detect model: %s/v1/models lists no model (set target.model)", baseURL)
	}
	if err := sc.Set("target.model", models[0]); err != nil {
		return fmt.Errorf("detected model %q: %w", models[0], err)
	}
	return nil
}

// startScraper scrapes the target's /metrics into the results stream while
// the load runs (once before it, periodically, and once after). It returns
// a function that stops the scraper, waits for its final scrape and records
// its warnings. A failed or missing scrape is never fatal.
func startScraper(sc *scenario.Scenario, baseURL string, epoch time.Time, records chan<- results.Record,
	warn func(source, msg string)) (stop func()) {
	if sc.Scrape.Enabled != nil && !*sc.Scrape.Enabled {
		return func() {}
	}
	u := sc.Scrape.URL
	if u == "" {
		var err error
		if u, err = scrape.MetricsURL(baseURL); err != nil {
			warn("scrape", err.Error())
			return func() {}
		}
	}
	s, err := scrape.New(scrape.Config{URL: u, Interval: sc.Scrape.Interval.D(), Profile: sc.Scrape.Profile, Epoch: epoch})
	if err != nil {
		warn("scrape", err.Error())
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	first := make(chan struct{})
	var once sync.Once
	go func() {
		done <- s.Run(ctx, func(x results.Sample) {
			records <- results.SampleRecord(&x)
			once.Do(func() { close(first) })
		})
	}()
	// Wait for the scrape before the load (bounded: a hung /metrics must
	// not hold the run back).
	select {
	case <-first:
	case <-time.After(2 * time.Second):
	}
	return func() {
		cancel()
		if err := <-done; err != nil {
			warn("scrape", err.Error())
		}
		for _, w := range s.Warnings() {
			warn("scrape", w.Error())
		}
	}
}

// startTarget resolves the scenario's target URL, starting the built-in
// simulator in-process for sim://PRESET, with its log in dir. It refuses
// non-loopback targets.
func startTarget(ctx context.Context, sc *scenario.Scenario, dir string) (baseURL string, stop func(), err error) {
	if !simurl.Is(sc.Target.URL) {
		if err := loopback.CheckURL(sc.Target.URL); err != nil {
			return "", nil, configErr("target.url %w", err)
		}
		return sc.Target.URL, func() {}, nil
	}
	cfg, err := sim.ConfigFromURL(sc.SimTarget())
	if err != nil {
		return "", nil, configErr("target.url %s: %w", sc.Target.URL, err)
	}
	logf, err := os.Create(filepath.Join(dir, FileSimLog))
	if err != nil {
		return "", nil, err
	}
	// The simulator is not tied to ctx: interrupting the run must not pull
	// the server from under the requests still finishing in their grace
	// period. It stops when the run returns.
	srv, err := sim.Listen(context.WithoutCancel(ctx), "127.0.0.1:0", cfg, logf)
	if err != nil {
		logf.Close()
		return "", nil, fmt.Errorf("start simulator: %w", err)
	}
	return srv.URL(), func() { srv.Close(); logf.Close() }, nil
}
