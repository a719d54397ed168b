package run

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/internal/atomicfile"
	"github.com/servebench/servebench/internal/loopback"
	"github.com/servebench/servebench/internal/openfiles"
	"github.com/servebench/servebench/internal/simurl"
	"github.com/servebench/servebench/internal/tokenizer"
	"github.com/servebench/servebench/live"
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
	// Abort, when closed, cancels the requests in flight at once, grace
	// period or not (a second Ctrl-C): they are still recorded, as
	// canceled, with the end record, and the summary is written, but not
	// the plots or report.html (rebuild them with 'bench report' or 'bench
	// plot'). Nil: never.
	Abort <-chan struct{}

	// Shard makes the run one of Shard.Count load generators sharing the
	// scenario's load (see scenario.Shard); its results header names the
	// shard and the scenario's hash, and its results merge with the other
	// shards' (report.FromFiles, Merge). The zero value runs the whole
	// load.
	Shard scenario.Shard
	// StartAt, when not zero, is the wall-clock time the load starts: the
	// run prepares (target, model, connections, first scrape), then waits
	// until StartAt, so that shards on several machines start together.
	// It must lie within MaxStartDelay of now; a time already past starts
	// the load at once, and the summary then says how late it began.
	StartAt time.Time
	// NoScrape turns the /metrics scraper off whatever the scenario says:
	// with several shards, one scrapes the server for all.
	NoScrape bool

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
	// MetricsAddr, when not empty, serves the run's client-side figures
	// live at http://MetricsAddr/metrics in the Prometheus text format
	// while the load runs (package live; deploy/grafana charts them). A
	// loopback address unless target.allow_remote; port 0 picks one, and
	// the run prints the URL on Progress.
	MetricsAddr string
	metrics     net.Listener // MetricsAddr's, opened before the load
	// NoPlots skips the plots and report.html (results.jsonl, summary.json
	// and the verdict files are still written): for the many runs of a
	// search or a prediction, whose page is the sweep's.
	NoPlots bool
	// Metrics, when not nil, receives the run's client-side figures as
	// Prometheus metrics while the run goes (package live: requests by
	// outcome, tokens, latency histograms, requests in flight, first
	// tokens of the streams still running), for a caller that serves its
	// own registry; MetricsAddr serves a registry of the run's own. Nil:
	// none.
	Metrics prometheus.Registerer
}

// MaxStartDelay bounds Options.StartAt: a start further away, ahead or
// behind, is a mistake (a wrong date, a stale value) rather than a plan.
const MaxStartDelay = time.Hour

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
// Run fixes the run's epoch, builds the prompts (reading a dataset file
// before any network use, so a bad one is a *ConfigError), starts the
// target (the simulator in-process for sim://PRESET), detects the model when the scenario names none, opens
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
	if err := opts.Shard.Check(sc); err != nil {
		return nil, configErr("--shard %s: %w", opts.Shard, err)
	}
	if !opts.StartAt.IsZero() {
		if d := opts.StartAt.Sub(epoch); d > MaxStartDelay || d < -MaxStartDelay {
			return nil, configErr("--start-at %s is %s from now: want a time within %s (a shared start a few minutes ahead)",
				opts.StartAt.UTC().Format(time.RFC3339), d.Round(time.Second), MaxStartDelay)
		}
	}
	// The scenario as the shards were given it: what a merge checks they share.
	hash, err := sc.Hash()
	if err != nil {
		return nil, err
	}
	sc = sc.Clone()
	if opts.Virtual {
		if !simurl.Is(sc.Target.URL) {
			return nil, configErr("target.url %s: virtual time needs the simulator (sim://PRESET or sim://./FILE.yaml)", sc.Target.URL)
		}
		if opts.Shard.Count > 0 || !opts.StartAt.IsZero() {
			return nil, configErr("virtual time runs the whole load in this process: --shard and --start-at do not apply")
		}
		return runVirtual(ctx, sc, opts)
	}
	if sc.Prompts.Salt == scenario.SaltRandom {
		// A salt of this run's own, recorded in the header so the run can
		// be repeated with the same prompts. Shards agreeing on a start
		// take it from that start, so they share one salt.
		base := epoch
		if !opts.StartAt.IsZero() {
			base = opts.StartAt
		}
		if err := sc.Set("prompts.salt", fmt.Sprintf("%x", base.UnixNano())); err != nil {
			return nil, &ConfigError{err}
		}
	}
	if opts.NoScrape {
		if err := sc.Set("scrape.enabled", "false"); err != nil {
			return nil, &ConfigError{err}
		}
	}

	// The prompts (a dataset file read and checked) before anything
	// touches the network: a bad dataset is the scenario's fault, said as
	// such, even when the target is down.
	// With prompts.tokenizer: server they are calibrated on the target,
	// once it is up and before the load.
	var prompts *scenario.Prompts
	if sc.Prompts.Tokenizer != tokenizer.Server {
		if prompts, err = scenario.NewShardPrompts(sc, opts.Shard); err != nil {
			return nil, &ConfigError{err}
		}
	}

	// One socket per stream (two with the simulator in this process): a
	// concurrency the system would refuse is the scenario's problem, said
	// before the load, not thousands of "too many open files" failures.
	need, what := opts.Shard.MaxConcurrency(sc), fmt.Sprintf("%d concurrent streams", opts.Shard.MaxConcurrency(sc))
	if simurl.Is(sc.Target.URL) {
		need, what = 2*need, what+" with the simulator in this process"
	}
	if err := openfiles.Check(need, what); err != nil {
		return nil, &ConfigError{err}
	}
	if opts.MetricsAddr != "" {
		l, err := live.Listen(opts.MetricsAddr, sc.Target.AllowRemote)
		if err != nil {
			return nil, &ConfigError{err}
		}
		opts.metrics = l
		defer l.Close()
	}

	baseURL, stopTarget, err := startTarget(ctx, sc, opts.Dir)
	if err != nil {
		return nil, err
	}
	// The target outlives the load: it is stopped only after every
	// in-flight request has been recorded.
	defer stopTarget()

	tlsConf, err := tlsConfig(sc)
	if err != nil {
		return nil, &ConfigError{err}
	}
	cl, err := client.New(client.Config{
		BaseURL:     baseURL,
		APIKey:      opts.APIKey,
		Headers:     sc.Target.Headers,
		AllowRemote: sc.Target.AllowRemote,
		TLS:         tlsConf,
		Epoch:       epoch,
		MaxConns:    opts.Shard.MaxConcurrency(sc),
		Connect:     sc.Target.Timeouts.Connect.D(),
		FirstByte:   sc.Target.Timeouts.FirstByte.D(),
		Idle:        sc.Target.Timeouts.Idle.D(),
		Total:       sc.Target.Timeouts.Total.D(),
	})
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("target: %w", err)}
	}
	defer cl.Close()
	if sc.Target.Model == "" {
		if err := detectModel(ctx, cl, sc, baseURL); err != nil {
			return nil, err
		}
	} else if err := cl.CheckModel(ctx, sc.Target.Model); err != nil {
		return nil, &ConfigError{err} // a *client.ModelError: the scenario names a model the server lacks
	}
	if prompts == nil {
		if prompts, err = serverPrompts(ctx, cl, sc, opts.Shard, opts.Progress); err != nil {
			return nil, err
		}
	}
	// The server's version, once, for the report's header: a server without
	// the route (only vLLM and the simulator have it) just goes without.
	serverVersion, _ := cl.ServerVersion(ctx)
	var slots *results.Slots // llama.cpp says how many requests it runs at once: the twin's batch limit
	if n, src := cl.ServerSlots(ctx); n > 0 {
		slots = &results.Slots{N: n, Source: src}
	}
	// Open the connections the run will need before the load, so the first
	// requests' TTFT does not include a burst of dials.
	warm, err := cl.WarmUp(ctx, opts.Shard.MaxConcurrency(sc))
	if err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("connect to %s: %w", baseURL, err)
	}
	grace := opts.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	sched, err := newScheduler(sc, cl, withEpoch(epoch), withGrace(grace), withShard(opts.Shard), withPrompts(prompts), withAbort(opts.Abort))
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
	hdr := &results.Header{Schema: results.Schema, Tool: "servebench", Version: Version(), Started: epoch, Host: host,
		RunID: runID(), Target: baseURL, Model: sc.Target.Model, ServerVersion: serverVersion, Scenario: resolved, Ends: true, Spec: spec,
		WarmUp: &warm, Slots: slots}
	if opts.Shard.Count > 0 {
		hdr.Shard = &results.Shard{Index: opts.Shard.Index, Count: opts.Shard.Count, ScenarioHash: hash}
		if !opts.StartAt.IsZero() {
			hdr.Shard.StartAt = opts.StartAt.UTC()
		}
	}

	path := filepath.Join(opts.Dir, FileResults)
	w, err := results.Create(path)
	if err != nil {
		return nil, err
	}
	agg := report.New()
	var exp *live.Exporter
	reg := opts.Metrics
	var own *prometheus.Registry
	if reg == nil && opts.metrics != nil {
		own = prometheus.NewRegistry()
		reg = own
	}
	if reg != nil {
		exp, err = live.New(reg, live.Run{Scenario: sc.Name, Target: baseURL, Model: sc.Target.Model, Version: Version(),
			Started: epoch, StageName: spec.StageName, InFlight: func() int64 { return sched.counters().InFlight },
			Stage: func() int { return sched.counters().Stage }, StageCount: len(sc.Load.Stages), Chunks: cl.Chunks, FirstTokens: cl.FirstTokens})
		if err != nil {
			return nil, errors.Join(err, w.Close())
		}
	}
	if own != nil {
		stop := live.ServeListener(opts.metrics, own)
		defer stop()
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "live metrics: http://%s/metrics\n", opts.metrics.Addr())
		}
	}
	runErr := load(ctx, sc, opts, w, agg, hdr, sched, cl, baseURL, epoch, exp)
	if ctx.Err() != nil && runErr == nil {
		runErr = fmt.Errorf("run stopped: %w", context.Cause(ctx))
	}
	sum, err := finish(opts.Dir, agg, spec, !opts.NoPlots && !closed(opts.Abort))
	if runErr == nil && sum != nil {
		runErr = noSuccess(sum)
	}
	return sum, errors.Join(runErr, err)
}

// ErrNoSuccess is the error of a run that completed without a single
// request succeeding (a wrong model name, a server refusing every request):
// its figures describe nothing.
var ErrNoSuccess = errors.New("no request succeeded")

// ErrMostFailed is the error of a run that completed with more failed
// requests than successful ones: its figures describe a broken service.
var ErrMostFailed = errors.New("most requests failed")

// noSuccess returns an error wrapping ErrNoSuccess, with the counts and the
// server's first messages, when no measured request of a run succeeded.
func noSuccess(sum *report.Summary) error {
	o := &sum.Overall
	if o.Requests.OK > 0 && o.Requests.Failed > o.Requests.OK {
		return fmt.Errorf("%w: %d of %d finished requests failed (errors %v)", ErrMostFailed,
			o.Requests.Failed, o.Requests.Failed+o.Requests.OK, o.Errors)
	}
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
	hdr *results.Header, sched *scheduler, cl *client.Client, baseURL string, epoch time.Time, exp *live.Exporter) error {
	if err := w.Write(results.HeaderRecord(hdr)); err != nil {
		return errors.Join(err, w.Close())
	}
	agg.AddHeader(hdr)

	shares := make([]scenario.Stage, len(sc.Load.Stages))
	for i := range sc.Load.Stages {
		shares[i] = opts.Shard.Stage(&sc.Load.Stages[i])
	}
	prog := newProgress(epoch, shares, liveSource{counters: sched.counters, chunks: cl.Chunks, firsts: cl.FirstTokens})
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
			if exp != nil && rec.Result != nil {
				exp.Observe(rec.Result)
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
		fmt.Fprintf(opts.Progress, "running %q against %s (model %s); results → %s\n%s%s\n",
			sc.Name, baseURL, sc.Target.Model, filepath.Join(opts.Dir, FileResults), Describe(sc, opts.Shard), hdr.WarmUp)
		g.Go(func() error { prog.draw(drawCtx, opts.Progress, opts.Terminal, 5*time.Second); return nil })
	}
	g.Go(func() error {
		defer stopDraw()
		warn := func(source, msg string) {
			records <- results.WarningRecord(&results.Warning{At: time.Since(epoch), Source: source, Message: msg})
		}
		if sc.Target.TLS.InsecureSkipVerify {
			warn("target", "TLS certificate verification is off (target.tls.insecure_skip_verify): the server was not authenticated")
		}
		stopScrape := startScraper(sc, baseURL, epoch, records, warn, append(slices.Collect(maps.Values(sc.Target.Headers)), opts.APIKey))
		var began time.Duration
		err := waitUntil(runCtx, opts.StartAt, opts.Progress)
		if err == nil {
			began = time.Since(epoch)
			err = sched.Run(runCtx, emit)
		}
		stopScrape()
		harness := health.finish()
		end := &results.End{At: time.Since(epoch), Completed: err == nil && ctx.Err() == nil, Began: began, Harness: harness}
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

// waitUntil returns when the wall clock reaches t (at once for a zero or
// past t), or with ctx's cause when ctx ends first. A wait of more than a
// second is announced on progress.
func waitUntil(ctx context.Context, t time.Time, progress io.Writer) error {
	d := time.Until(t)
	if t.IsZero() || d <= 0 {
		return nil
	}
	if progress != nil && d > time.Second {
		fmt.Fprintf(progress, "waiting %s for the agreed start, %s\n", d.Round(time.Second), t.UTC().Format(time.RFC3339Nano))
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stopped before the agreed start: %w", context.Cause(ctx))
	}
}

// finish computes the summary from agg, judges it when the scenario has
// budgets (and the results hold the whole load: a shard alone is not
// judged), and writes summary.json, the verdict files, the plots and
// report.html into dir (the plots and report only when plots is true).
func finish(dir string, agg *report.Aggregate, spec *results.Spec, plots bool) (*report.Summary, error) {
	sum := agg.Summary()
	if spec != nil && spec.Budgets != nil && agg.WholeLoad() {
		sum.Verdict = agg.Evaluate(sum, spec.Budgets, spec.SLO)
	}
	if err := WriteSummaryFiles(dir, sum); err != nil {
		return sum, err
	}
	if !plots {
		return sum, nil
	}
	if _, err := chart.WriteFiles(dir, agg, sum); err != nil && !errors.Is(err, chart.ErrNothingToPlot) {
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

// runID returns a random identifier for a run's header.
func runID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// tlsConfig builds the TLS configuration of an https target: the CA
// bundle to trust, and verification off when the scenario asks for it.
// It returns nil for the defaults.
func tlsConfig(sc *scenario.Scenario) (*tls.Config, error) {
	t := sc.Target.TLS
	if t.CAFile == "" && !t.InsecureSkipVerify {
		return nil, nil
	}
	conf := &tls.Config{InsecureSkipVerify: t.InsecureSkipVerify} // #nosec G402 -- only on the user's explicit setting, warned in the summary
	if t.CAFile != "" {
		pem, err := os.ReadFile(sc.Path(t.CAFile))
		if err != nil {
			return nil, fmt.Errorf("target.tls.ca_file: %w", err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("target.tls.ca_file %s: no PEM certificate in it", sc.Path(t.CAFile))
		}
	}
	return conf, nil
}

// APIKey returns the API key a scenario names: the value of the
// environment variable target.api_key_env (read with getenv), or the first
// line of the file target.api_key_file; "" when it names none.
func APIKey(sc *scenario.Scenario, getenv func(string) string) (string, error) {
	switch {
	case sc.Target.APIKeyEnv != "":
		return getenv(sc.Target.APIKeyEnv), nil
	case sc.Target.APIKeyFile != "":
		b, err := os.ReadFile(sc.Path(sc.Target.APIKeyFile))
		if err != nil {
			return "", fmt.Errorf("target.api_key_file: %w", err)
		}
		key, _, _ := strings.Cut(string(b), "\n")
		return strings.TrimSpace(key), nil
	}
	return "", nil
}

// Describe says, in one line per stage, where the load goes and what it is:
// what a user should read before a run sends load to another machine. For
// a shard (Count > 1) it describes the shard's share.
func Describe(sc *scenario.Scenario, sh scenario.Shard) string {
	var b strings.Builder
	host := sc.Target.URL
	if u, err := url.Parse(sc.Target.URL); err == nil && u.Host != "" {
		host = u.Redacted()
	}
	where := "this machine"
	if !simurl.Is(sc.Target.URL) && !loopback.CheckURLHost(sc.Target.URL) {
		where = "ANOTHER MACHINE (target.allow_remote)"
	}
	fmt.Fprintf(&b, "load goes to %s, %s; at most %s\n", host, where, sc.Load.MaxDuration)
	if sh.Count > 1 {
		fmt.Fprintf(&b, "shard %s: this machine sends its share of each stage\n", sh)
	}
	for i := range sc.Load.Stages {
		st := &sc.Load.Stages[i]
		share := sh.Stage(st)
		var load string
		if tr := st.Trace; tr != nil {
			load = fmt.Sprintf("trace replay of %s at %g× speed, at most %d in flight", tr.Path, tr.Speedup, share.MaxConcurrency)
		} else if st.Open() {
			load = fmt.Sprintf("open loop, %s arrivals at %g req/s, at most %d in flight", st.Arrival, share.RatePerSec, share.MaxConcurrency)
		} else {
			load = fmt.Sprintf("closed loop, %d workers", share.Concurrency)
		}
		var bounds []string
		if st.Requests > 0 {
			// An open loop's shard sends the arrivals k ≡ Index (mod
			// Count) below the bound: Share of them.
			bounds = append(bounds, fmt.Sprintf("%d requests", sh.Share(st.Requests)))
		}
		if st.Duration > 0 {
			bounds = append(bounds, "for "+st.Duration.String())
		}
		if len(bounds) == 0 && st.Trace != nil {
			bounds = append(bounds, "to the end of the trace")
		}
		fmt.Fprintf(&b, "  stage %s: %s, %s\n", st.Name, load, strings.Join(bounds, ", "))
	}
	return b.String()
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
	warn func(source, msg string), secrets []string) (stop func()) {
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
	tlsConf, _ := tlsConfig(sc) // checked when the client was made
	s, err := scrape.New(scrape.Config{URL: u, Interval: sc.Scrape.Interval.D(), Profile: sc.Scrape.Profile, Epoch: epoch,
		AllowRemote: sc.Target.AllowRemote, Headers: sc.Target.Headers, TLS: tlsConf, Secrets: secrets})
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
		if err := sc.Policy().CheckURL(sc.Target.URL); err != nil {
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

// closed reports whether ch is closed (a nil ch never is).
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
