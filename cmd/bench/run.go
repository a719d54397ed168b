package main

import (
	"context"
	"errors"
	"fmt"

	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/scrape"
	"github.com/servebench/servebench/sim"
)

const runUsage = `Usage: bench run SCENARIO [--target URL] [--out DIR] [--set path=value ...]

Runs a scenario file: sends its load to the target, streams one record per
request (and one per /metrics scrape) to DIR/results.jsonl as each finishes,
then writes DIR/summary.json, the plots (timeline, decay, latency, stages as
PNG and SVG) and DIR/report.html, and prints a summary table with the
correlation findings.

The target is the scenario's target.url unless --target overrides it:
  sim://PRESET            the built-in vLLM-like simulator, started in-process
                          on a free loopback port (presets: tiny,
                          gpt-oss-120b-h100, gpt-oss-20b-a100, deepseek-r1-32b)
  http://127.0.0.1:8000   any OpenAI-compatible server (vLLM, SGLang, TGI,
                          llama.cpp, …) on this machine; load is only ever
                          sent to loopback addresses

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
  bench run scenarios/quickstart.yaml --out results/try1
  bench run my.yaml --target http://127.0.0.1:8000 --set load.stages[0].concurrency=64
  bench run my.yaml --set prompts.input_tokens.value=4096 --set request.max_tokens=256
  bench run scenarios/release-gate.yaml --target http://127.0.0.1:8000   # exit 3 if a budget is missed
`

func runCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "run", runUsage)
	target := fs.String("target", "", "override target.url (http://HOST:PORT or sim://PRESET)")
	outDir := fs.String("out", "", "output directory (default results/NAME-YYYYMMDD-HHMMSS)")
	quiet := fs.Bool("quiet", false, "no progress output")
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
		dir = filepath.Join("results", fmt.Sprintf("%s-%s", safeName(sc.Name), time.Now().Format("20060102-150405")))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	res, runErr := execute(ctx, e, sc, dir, !*quiet)
	if ctx.Err() != nil && !errors.Is(runErr, errInterrupted) {
		runErr = errors.Join(runErr, errInterrupted)
	}
	if res == "" {
		return runErr
	}
	sum, err := summarize(res, dir, gate{sc.Budgets, sc.SLO, ""})
	if err != nil {
		return errors.Join(runErr, err)
	}
	if err := report.WriteText(e.stdout, sum); err != nil {
		return errors.Join(runErr, err)
	}
	// The plots and report.html are redrawn from the results file, as
	// 'bench plot' does.
	if _, err := writeReport([]string{res}, dir); err != nil {
		return errors.Join(runErr, err)
	}
	fmt.Fprintf(e.stdout, "results: %s\nsummary: %s\nreport:  %s\n", res, filepath.Join(dir, "summary.json"), filepath.Join(dir, "report.html"))
	// A missed budget decides the exit code only when the run itself
	// completed: a failed or interrupted run keeps its own code.
	if err := printVerdict(e, sum, dir); runErr == nil {
		runErr = err
	}
	return runErr
}

// loadScenario loads the file and applies command-line overrides.
func loadScenario(path, target string, sets []string) (*scenario.Scenario, error) {
	sc, err := scenario.Load(path)
	if err != nil {
		return nil, usageError{err}
	}
	if target != "" {
		sets = append([]string{"target.url=" + target}, sets...)
	}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return nil, usagef("--set %q: want path=value", s)
		}
		if err := sc.Set(k, v); err != nil {
			return nil, usageError{fmt.Errorf("--set %s: %w", s, err)}
		}
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

// execute runs the scenario and returns the results file's path. The path
// is empty when nothing was written (the run could not start).
func execute(ctx context.Context, e env, sc *scenario.Scenario, dir string, showProgress bool) (string, error) {
	// The epoch: every offset in the results counts from here, monotonic.
	epoch := time.Now()

	baseURL, stopTarget, err := startTarget(ctx, sc, dir)
	if err != nil {
		return "", err
	}
	defer stopTarget()

	cl, err := client.New(client.Config{
		BaseURL:   baseURL,
		APIKey:    apiKey(e, sc),
		Epoch:     epoch,
		MaxConns:  sc.MaxConcurrency(),
		Connect:   sc.Target.Timeouts.Connect.D(),
		FirstByte: sc.Target.Timeouts.FirstByte.D(),
		Idle:      sc.Target.Timeouts.Idle.D(),
		Total:     sc.Target.Timeouts.Total.D(),
	})
	if err != nil {
		return "", usageError{fmt.Errorf("target: %w", err)}
	}
	if sc.Target.Model == "" {
		models, err := cl.Models(ctx)
		if err != nil {
			return "", fmt.Errorf("detect model from %s/v1/models: %w (set target.model to skip detection)", baseURL, err)
		}
		if len(models) == 0 {
			return "", fmt.Errorf("detect model: %s/v1/models lists no model (set target.model)", baseURL)
		}
		if err := sc.Set("target.model", models[0]); err != nil {
			return "", fmt.Errorf("detected model %q: %w", models[0], err)
		}
	}
	defer cl.Close()
	// Open the connections the run will need before the load, so the first
	// requests' TTFT does not include a burst of dials.
	if _, err := cl.Warm(ctx, sc.MaxConcurrency()); err != nil && ctx.Err() == nil {
		return "", fmt.Errorf("connect to %s: %w", baseURL, err)
	}
	runner, err := scenario.NewRunner(sc, cl, scenario.WithEpoch(epoch))
	if err != nil {
		return "", usageError{err}
	}
	resolved, err := sc.Resolved()
	if err != nil {
		return "", err
	}
	host, _ := os.Hostname()
	path := filepath.Join(dir, "results.jsonl")
	w, err := client.Create(path)
	if err != nil {
		return "", err
	}
	hdr := client.Header{Kind: client.KindHeader, Schema: client.Schema, Tool: "servebench", Version: version(),
		Started: epoch, Host: host, Target: baseURL, Model: sc.Target.Model, Scenario: resolved}
	if err := w.Write(hdr); err != nil {
		w.Close()
		return "", err
	}

	prog := newProgress(epoch, func() int64 { return runner.Progress().InFlight }, cl.Chunks)
	health := startHealth(epoch, strings.HasPrefix(sc.Target.URL, "sim:"))
	records := make(chan any, 4096)
	// runCtx ends the load when the user interrupts or when the results
	// writer fails (a run whose records cannot be kept is not worth going on).
	runCtx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	g := new(errgroup.Group)
	g.Go(func() error { // the single writer of the results file
		var werr error
		for rec := range records {
			if r, ok := rec.(client.Result); ok {
				prog.add(&r)
			}
			if werr == nil {
				if werr = w.Write(rec); werr != nil {
					stopRun(werr)
				}
			}
		}
		return errors.Join(werr, w.Close())
	})
	// The runner never drops a record: a full channel blocks the emitter
	// (backpressure), and the time spent blocked is reported as harness lag.
	emit := func(r client.Result) { health.send(records, r) }

	drawCtx, stopDraw := context.WithCancel(context.Background())
	if showProgress {
		fmt.Fprintf(e.stderr, "running %q against %s (model %s); results → %s\n", sc.Name, baseURL, sc.Target.Model, path)
		g.Go(func() error { prog.draw(drawCtx, e.stderr, e.isTerminal, 5*time.Second); return nil })
	}
	g.Go(func() error {
		defer stopDraw()
		scrapeDone := startScraper(sc, baseURL, epoch, records)
		err := runner.Run(runCtx, emit)
		scrapeDone()
		for _, msg := range health.finish() {
			records <- client.Warning{Kind: client.KindWarning, At: time.Since(epoch), Source: "harness", Message: msg}
		}
		close(records)
		return err
	})
	err = g.Wait()
	if ctx.Err() != nil {
		err = errors.Join(err, errInterrupted)
	}
	return path, err
}

// startScraper scrapes the target's /metrics into the results stream while
// the load runs (once before it, periodically, and once after). It returns
// a function that stops the scraper, waits for its final scrape and records
// its warnings. A failed or missing scrape is never fatal.
func startScraper(sc *scenario.Scenario, baseURL string, epoch time.Time, records chan<- any) (stop func()) {
	if sc.Scrape.Enabled != nil && !*sc.Scrape.Enabled {
		return func() {}
	}
	warn := func(msg string) {
		records <- client.Warning{Kind: client.KindWarning, At: time.Since(epoch), Source: "scrape", Message: msg}
	}
	u := sc.Scrape.URL
	if u == "" {
		var err error
		if u, err = scrape.MetricsURL(baseURL); err != nil {
			warn(err.Error())
			return func() {}
		}
	}
	s, err := scrape.New(scrape.Config{URL: u, Interval: sc.Scrape.Interval.D(), Profile: sc.Scrape.Profile, Epoch: epoch})
	if err != nil {
		warn(err.Error())
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	first := make(chan struct{})
	var once sync.Once
	go func() {
		done <- s.Run(ctx, func(x scrape.Sample) {
			records <- x
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
			warn(err.Error())
		}
		for _, w := range s.Warnings() {
			warn(w.Error())
		}
	}
}

// apiKey reads the key from the environment variable the scenario names.
func apiKey(e env, sc *scenario.Scenario) string {
	if sc.Target.APIKeyEnv == "" {
		return ""
	}
	return e.getenv(sc.Target.APIKeyEnv)
}

// startTarget resolves the scenario's target URL, starting the built-in
// simulator for sim://PRESET. It refuses non-loopback targets.
func startTarget(ctx context.Context, sc *scenario.Scenario, dir string) (string, func(), error) {
	u, err := url.Parse(sc.Target.URL)
	if err != nil {
		return "", nil, usagef("target.url %q: %v", sc.Target.URL, err)
	}
	if u.Scheme == "sim" {
		cfg, err := simConfig(u)
		if err != nil {
			return "", nil, usageError{fmt.Errorf("target.url %s: %w", sc.Target.URL, err)}
		}
		logf, err := os.Create(filepath.Join(dir, "sim.log"))
		if err != nil {
			return "", nil, err
		}
		srv, err := sim.Listen(ctx, "127.0.0.1:0", cfg, logf)
		if err != nil {
			logf.Close()
			return "", nil, fmt.Errorf("start simulator: %w", err)
		}
		return srv.URL(), func() { srv.Close(); logf.Close() }, nil
	}
	if err := checkLoopback(u); err != nil {
		return "", nil, usageError{err}
	}
	return sc.Target.URL, func() {}, nil
}

// checkLoopback refuses targets that are not on this machine: servebench
// generates load, and load is only ever sent to loopback addresses.
func checkLoopback(u *url.URL) error {
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("target.url %s: servebench only sends load to loopback addresses (127.0.0.0/8, ::1, localhost)", u.Redacted())
	}
	return nil
}
