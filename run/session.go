package run

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/internal/openfiles"
	"github.com/servebench/servebench/internal/simurl"
	"github.com/servebench/servebench/internal/tokenizer"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// session is a real-time run's hold on its target: the server (started
// here for sim://), the client, the prompts and what was learned of the
// server before the load.
type session struct {
	baseURL string
	cl      *client.Client
	prompts *scenario.Prompts
	version string         // the server's, from GET /version; "" when it has none
	slots   *results.Slots // the server's own word on its batch (llama.cpp's /props), for the twin
	warm    results.WarmUp
	stop    func()
}

func (s *session) close() {
	if s.cl != nil {
		s.cl.Close()
	}
	if s.stop != nil {
		s.stop()
	}
}

// connect prepares a real-time run of sc: the prompts (a dataset file read
// and checked before anything touches the network, so that a bad one is
// the scenario's fault even when the target is down), the open-files
// check, the target, the client, the model, the server-calibrated prompts,
// the server's version and the warm connection pool.
func connect(ctx context.Context, sc *scenario.Scenario, opts Options, epoch time.Time) (_ *session, err error) {
	s := &session{}
	if sc.Prompts.Tokenizer != tokenizer.Server {
		if s.prompts, err = scenario.NewShardPrompts(ctx, sc, opts.Shard, prepareProgress(opts.Progress)); err != nil {
			return nil, &ConfigError{err}
		}
	}
	// One socket per stream (two with the simulator in this process): a
	// concurrency the system would refuse is the scenario's problem, said
	// before the load, not thousands of "too many open files" failures.
	conc := opts.Shard.MaxConcurrency(sc)
	need, what := conc, fmt.Sprintf("%d concurrent streams", conc)
	if simurl.Is(sc.Target.URL) {
		need, what = 2*need, what+" with the simulator in this process"
	}
	if err := openfiles.Check(need, what); err != nil {
		return nil, &ConfigError{err}
	}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.baseURL, s.stop, err = startTarget(ctx, sc, opts.Dir); err != nil {
		return nil, err
	}
	if s.cl, err = newClient(sc, opts, s.baseURL, epoch); err != nil {
		return nil, err
	}
	if sc.Target.Model == "" {
		if err := detectModel(ctx, s.cl, sc, s.baseURL); err != nil {
			return nil, err
		}
	} else if err := s.cl.CheckModel(ctx, sc.Target.Model); err != nil {
		return nil, &ConfigError{err} // a *client.ModelError: the scenario names a model the server lacks
	}
	if s.prompts == nil {
		if s.prompts, err = serverPrompts(ctx, s.cl, sc, opts.Shard, opts.Progress); err != nil {
			return nil, err
		}
	}
	// The server's version, once, for the report's header: a server without
	// the route (only vLLM and the simulator have it) just goes without.
	s.version, _ = s.cl.ServerVersion(ctx)
	if n, src := s.cl.ServerSlots(ctx); n > 0 {
		s.slots = &results.Slots{N: n, Source: src}
	}
	// Open the connections the run will need before the load, so the first
	// requests' TTFT does not include a burst of dials (bounded: see
	// client.WarmUp).
	if s.warm, err = s.cl.WarmUp(ctx, conc); err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("connect to %s: %w", s.baseURL, err)
	}
	return s, nil
}

// newClient is the HTTP client of a run of sc against baseURL.
func newClient(sc *scenario.Scenario, opts Options, baseURL string, epoch time.Time) (*client.Client, error) {
	tlsConf, err := tlsConfig(sc)
	if err != nil {
		return nil, &ConfigError{err}
	}
	t := &sc.Target
	cl, err := client.New(client.Config{
		BaseURL:     baseURL,
		APIKey:      opts.APIKey,
		Headers:     t.Headers,
		AllowRemote: t.AllowRemote,
		TLS:         tlsConf,
		Epoch:       epoch,
		MaxConns:    opts.Shard.MaxConcurrency(sc),
		Connect:     t.Timeouts.Connect.D(),
		FirstByte:   t.Timeouts.FirstByte.D(),
		Idle:        t.Timeouts.Idle.D(),
		Total:       t.Timeouts.Total.D(),
	})
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("target: %w", err)}
	}
	return cl, nil
}

// realHeader is the results header of a real-time run.
func realHeader(sc *scenario.Scenario, opts Options, s *session, epoch time.Time, hash string) (*results.Header, error) {
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
		RunID: runID(), Target: s.baseURL, Model: sc.Target.Model, ServerVersion: s.version, Scenario: resolved, Ends: true, Spec: spec,
		WarmUp: &s.warm, Slots: s.slots}
	if opts.Shard.Count > 0 {
		hdr.Shard = &results.Shard{Index: opts.Shard.Index, Count: opts.Shard.Count, ScenarioHash: hash}
		if !opts.StartAt.IsZero() {
			hdr.Shard.StartAt = opts.StartAt.UTC()
		}
	}
	return hdr, nil
}

// startObserver starts opts.Observer, if any, with the run's live figures.
func startObserver(opts Options, sc *scenario.Scenario, s *session, hdr *results.Header, wc *wallClock) error {
	if opts.Observer == nil {
		return nil
	}
	return opts.Observer.Start(Live{Scenario: sc.Name, Target: s.baseURL, Model: sc.Target.Model, Version: Version(),
		Started: hdr.Started, Spec: hdr.Spec, StageCount: len(sc.Load.Stages),
		InFlight: func() int64 { return wc.counters().InFlight }, Stage: func() int { return wc.counters().Stage },
		Chunks: s.cl.Chunks, FirstTokens: s.cl.FirstTokens})
}

// wallLoad writes the header, runs the load and the scraper, and writes
// every record as it arrives, through one writer goroutine. It closes w.
func wallLoad(ctx context.Context, sc *scenario.Scenario, opts Options, w *writer, hdr *results.Header, wc *wallClock, s *session) error {
	epoch := hdr.Started
	w.put(results.HeaderRecord(hdr), 0)
	shares := make([]scenario.Stage, len(sc.Load.Stages))
	for i := range sc.Load.Stages {
		shares[i] = opts.Shard.Stage(&sc.Load.Stages[i])
	}
	w.prog = newProgress(epoch, shares, liveSource{counters: wc.counters, chunks: s.cl.Chunks, firsts: s.cl.FirstTokens})
	health := startHealth(epoch, simurl.Is(sc.Target.URL), s.cl.ReaderStats)
	records := make(chan results.Record, 1024)
	g := new(errgroup.Group)
	g.Go(func() error { // the single writer of the results file
		for rec := range records {
			w.put(rec, int(wc.counters().InFlight))
		}
		return w.close()
	})
	// The load never drops a record: a full channel blocks the emitter
	// (backpressure), and the time spent blocked is reported as harness
	// lag.
	emit := func(r results.Result) {
		rec := results.ResultRecord(&r)
		if w.file != nil {
			w.file.Prepare(&rec) // the chunk arrays' numbers in this request's goroutine
		}
		health.send(records, rec)
	}
	drawCtx, stopDraw := context.WithCancel(context.Background())
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "running %q against %s (model %s); results → %s\n%s%s\n",
			sc.Name, s.baseURL, sc.Target.Model, w.path, Describe(sc, opts.Shard), s.warm)
		g.Go(func() error { w.prog.draw(drawCtx, opts.Progress, opts.Terminal, 5*time.Second); return nil })
	}
	g.Go(func() error {
		defer stopDraw()
		warn := func(source, msg string) {
			records <- results.WarningRecord(&results.Warning{At: time.Since(epoch), Source: source, Message: msg})
		}
		if sc.Target.TLS.InsecureSkipVerify {
			warn("target", "TLS certificate verification is off (target.tls.insecure_skip_verify): the server was not authenticated")
		}
		stopScrape := startScraper(sc, s.baseURL, epoch, records, warn, append(slices.Collect(maps.Values(sc.Target.Headers)), opts.APIKey))
		stopGPU := startGPU(sc, s.baseURL, epoch, records, warn)
		var began time.Duration
		err := waitUntil(ctx, opts.StartAt, opts.Progress)
		if err == nil {
			began = time.Since(epoch)
			health.begin(epoch.Add(began))
			err = wc.Run(ctx, emit)
		}
		stopScrape()
		stopGPU()
		end := &results.End{At: time.Since(epoch), Completed: err == nil && ctx.Err() == nil, Began: began, Harness: health.finish(),
			Until: wc.l.Until()}
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
