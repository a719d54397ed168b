package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/simurl"
	"github.com/servebench/servebench/load"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// DefaultGrace is how long in-flight requests may still finish after the
// run is stopped (its context canceled or max_duration reached) before
// they are canceled.
const DefaultGrace = load.DefaultGrace

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
	// the pictures (rebuild them with 'bench report' or 'bench plot').
	// Nil: never.
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
	// flight at that moment. It must return quickly: the run's writer
	// waits for it. A search watches a probe's records with it to stop an
	// over-saturated one early.
	Observe func(rec results.Record, inFlight int)
	// Observer, when not nil, watches the run while it goes (live
	// metrics): Start once the run knows its target and model, then every
	// request record, from the writer's goroutine.
	Observer Observer
	// Render, when not nil, draws the run's pictures (the plots and
	// report.html) from its aggregate and summary once the load ended.
	Render Renderer
	// NoPlots skips Render: for the many runs of a search or a prediction,
	// whose page is the sweep's.
	NoPlots bool
}

// Observer watches a run while it goes.
type Observer interface {
	// Start is called once, before the load, with what the run offers.
	Start(Live) error
	// Observe is called with every request record, in the order written.
	// It must return quickly.
	Observe(*results.Result)
}

// SampleObserver is an Observer that also watches the run's scrape
// samples, the server's and the GPU telemetry's (found by type
// assertion).
type SampleObserver interface {
	ObserveSample(*results.Sample)
}

// Live is what a run offers an Observer: who it is, and live counters
// that are safe to read from any goroutine while the load runs.
type Live struct {
	Scenario, Target, Model, Version string
	Started                          time.Time
	Spec                             *results.Spec
	StageCount                       int
	InFlight                         func() int64                        // requests sent and not yet ended
	Stage                            func() int                          // the running stage's index: -1 before, StageCount after
	Chunks                           func() int64                        // token-bearing chunks received, streams in progress included
	FirstTokens                      func() (n int64, sum time.Duration) // first tokens received, and their TTFT sum
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
// as requests finish; then summary.json, and with budgets junit.xml and
// verdict.md, all from one aggregation pass over the records as they were
// written, and the pictures through opts.Render. It returns the summary,
// with its verdict when the scenario has budgets.
//
// Run fixes the run's epoch, builds the prompts (reading a dataset file
// before any network use, so a bad one is a *ConfigError), starts the
// target (the simulator in-process for sim://PRESET), detects the model
// when the scenario names none, opens the connections the load will need,
// scrapes the server's /metrics, and watches the harness itself.
//
// Canceling ctx stops new arrivals; in-flight requests get the grace
// period, then are canceled. The summary is still written and returned,
// with an error wrapping ctx's cause. The summary is nil only when nothing
// was written (the run could not start); the error is then a
// *ConfigError when the scenario or target is at fault.
func Run(ctx context.Context, sc *scenario.Scenario, opts Options) (*report.Summary, error) {
	// The epoch: every offset in the results counts from here, monotonic.
	epoch := time.Now()
	sc, hash, err := prepare(sc, opts, epoch)
	if err != nil {
		return nil, err
	}
	if opts.Virtual {
		return runVirtual(ctx, sc, opts)
	}
	s, err := connect(ctx, sc, opts, epoch)
	if err != nil {
		return nil, err
	}
	// The target outlives the load: it is stopped only after every
	// in-flight request has been recorded.
	defer s.close()
	wc, err := newWallClock(sc, s.cl, withEpoch(epoch), withGrace(opts.Grace), withShard(opts.Shard),
		withPrompts(s.prompts), withAbort(opts.Abort))
	if err != nil {
		return nil, &ConfigError{err}
	}
	hdr, err := realHeader(sc, opts, s, epoch, hash)
	if err != nil {
		return nil, err
	}
	runCtx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	// A run whose records cannot be kept is not worth going on.
	w, err := createWriter(opts, stopRun)
	if err != nil {
		return nil, err
	}
	if err := startObserver(opts, sc, s, hdr, wc); err != nil {
		return nil, errors.Join(err, w.close())
	}
	runErr := wallLoad(runCtx, sc, opts, w, hdr, wc, s)
	if ctx.Err() != nil && runErr == nil {
		runErr = fmt.Errorf("run stopped: %w", context.Cause(ctx))
	}
	return finish(opts, w.agg, hdr.Spec, runErr)
}

// prepare checks a run's options against sc and returns the scenario the
// run will use (a copy, with its random salt fixed and the scraper off
// when asked) and the hash of the scenario as given, which shards share.
func prepare(sc *scenario.Scenario, opts Options, epoch time.Time) (*scenario.Scenario, string, error) {
	if err := opts.Shard.Check(sc); err != nil {
		return nil, "", configErr("--shard %s: %w", opts.Shard, err)
	}
	if !opts.StartAt.IsZero() {
		if d := opts.StartAt.Sub(epoch); d > MaxStartDelay || d < -MaxStartDelay {
			return nil, "", configErr("--start-at %s is %s from now: want a time within %s (a shared start a few minutes ahead)",
				opts.StartAt.UTC().Format(time.RFC3339), d.Round(time.Second), MaxStartDelay)
		}
	}
	hash, err := sc.Hash()
	if err != nil {
		return nil, "", err
	}
	sc = sc.Clone()
	if opts.Virtual {
		if !simurl.Is(sc.Target.URL) {
			return nil, "", configErr("target.url %s: virtual time needs the simulator (sim://PRESET or sim://./FILE.yaml)", sc.Target.URL)
		}
		if opts.Shard.Count > 0 || !opts.StartAt.IsZero() {
			return nil, "", configErr("virtual time runs the whole load in this process: --shard and --start-at do not apply")
		}
		return sc, hash, nil
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
			return nil, "", &ConfigError{err}
		}
	}
	if opts.NoScrape {
		if err := sc.Set("scrape.enabled", "false"); err != nil {
			return nil, "", &ConfigError{err}
		}
	}
	return sc, hash, nil
}

// graceOf is the grace period opts asks for.
func graceOf(opts Options) time.Duration {
	if opts.Grace == 0 {
		return DefaultGrace
	}
	return opts.Grace
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
