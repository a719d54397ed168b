package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/openfiles"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/chart"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// gated is a short run on the simulator with budgets: one that holds
// (no errors) and one that cannot (TTFT p50 under a microsecond).
const gated = `name: gated
target: {url: "sim://tiny?seed=5"}
scrape: {interval: 200ms}
load:
  stages:
    - {name: closed, concurrency: 4, requests: 24, warmup: {requests: 4}}
    - {name: open, rate: 40, requests: 20}
budgets:
  overall:
    error_rate: {max: 0}
    ttft_ms: {p50: 0.001}
`

// TestRunEqualsRebuild runs a scenario in-process against the simulator
// and checks that the summary Run returns is the one `bench report`
// rebuilds from the results file it wrote (byte for byte as JSON, verdict
// included), and that report.html shows the budget verdict.
func TestRunEqualsRebuild(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Parse("gated.yaml", []byte(gated))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum, err := Run(context.Background(), sc, Options{Dir: dir, Render: chart.Renderer{}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Incomplete != "" {
		t.Errorf("a completed run says incomplete: %q", sum.Incomplete)
	}
	if sum.Verdict == nil || sum.Verdict.Pass || sum.Verdict.Failed != 1 {
		t.Fatalf("verdict = %+v, want one budget missed", sum.Verdict)
	}
	if sum.Overall.Requests.OK != 40 || sum.Overall.Requests.Warmup != 4 {
		t.Errorf("requests = %+v", sum.Overall.Requests)
	}

	// The rebuild, as `bench report DIR --format json` does it.
	agg, err := report.FromFiles(filepath.Join(dir, FileResults))
	if err != nil {
		t.Fatal(err)
	}
	rebuilt := agg.Summary()
	spec := agg.Spec()
	rebuilt.Verdict = agg.Evaluate(rebuilt, spec.Budgets, spec.SLO)
	var got, want bytes.Buffer
	if err := report.WriteJSON(&got, sum); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJSON(&want, rebuilt); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("the returned summary differs from the rebuilt one:\nreturned %s\nrebuilt  %s", got.Bytes(), want.Bytes())
	}
	onDisk, err := os.ReadFile(filepath.Join(dir, FileSummary))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, want.Bytes()) {
		t.Errorf("summary.json differs from the rebuilt summary")
	}
	for _, name := range []string{FileJUnit, FileVerdict, FileSimLog, chart.HTMLName, "timeline.png", "decay.svg"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s not written: %v", name, err)
		}
	}

	page, err := os.ReadFile(filepath.Join(dir, chart.HTMLName))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`id="verdict"`, `<span class="fail">FAIL</span>`, `<table id="budgets">`,
		"<td>overall.ttft_ms.p50</td>", "<td>overall.error_rate.max</td>", "over by"} {
		if !strings.Contains(string(page), s) {
			t.Errorf("report.html lacks %q", s)
		}
	}
}

// TestRunRecordsEveryRequestOnce reads the results file of a run back:
// one header, then exactly one record per scheduled request, scrape
// samples beside them.
func TestRunRecordsEveryRequestOnce(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Parse("once.yaml", []byte("name: once\ntarget: {url: \"sim://tiny\"}\nload: {stages: [{concurrency: 3, requests: 15}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Run(context.Background(), sc, Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	f, err := results.OpenFiles(filepath.Join(dir, FileResults))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]int{}
	kinds := map[results.Kind]int{}
	for rec, err := range f.All() {
		if err != nil {
			t.Fatal(err)
		}
		kinds[rec.Kind]++
		if h := rec.Header; h != nil && h.ServerVersion != "0.11.2" {
			// The simulator answers GET /version as vLLM does.
			t.Errorf("header server_version = %q, want the simulator's 0.11.2", h.ServerVersion)
		}
		if rec.Result != nil {
			seen[rec.Result.Seq]++
		}
	}
	if kinds[results.KindHeader] != 1 || kinds[results.KindScrape] < 2 || len(seen) != 15 {
		t.Errorf("records by kind %v, %d distinct requests", kinds, len(seen))
	}
	for seq, n := range seen {
		if n != 1 || seq >= 15 {
			t.Errorf("seq %d recorded %d times", seq, n)
		}
	}
}

// TestInterruptSimulator is issue 9's Ctrl-C on a sim:// target: the
// in-process simulator must outlive the drain, so the requests in flight
// finish within the grace period instead of breaking as stream_truncated.
func TestInterruptSimulator(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Parse("int.yaml", []byte(`name: interrupt
target: {url: "sim://tiny"}
prompts: {output_tokens: 96}
load: {stages: [{concurrency: 6, requests: 500}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Interrupt once requests are streaming.
		for ctx.Err() == nil {
			data, _ := os.ReadFile(filepath.Join(dir, FileResults))
			if bytes.Count(data, []byte(`"kind":"request"`)) >= 6 {
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	sum, err := Run(ctx, sc, Options{Dir: dir})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the interruption", err)
	}
	if sum == nil {
		t.Fatal("no summary after an interruption")
	}
	if !strings.Contains(sum.Incomplete, "canceled") || !strings.Contains(strings.Join(sum.Warnings, "\n"), "the run did not complete") {
		t.Errorf("incomplete = %q, warnings %q: want the interruption said", sum.Incomplete, sum.Warnings)
	}
	o := sum.Overall
	if o.Requests.Failed != 0 || o.Requests.Canceled != 0 || o.Requests.OK < 6 {
		t.Errorf("requests %+v, errors %v %v: the requests in flight should have finished in the grace period", o.Requests, o.Errors, o.ErrorMessages)
	}
}

// TestShardRun runs shard 1 of 2 of a gated scenario with an agreed start
// and scraping left to the other shard: the header names the shard, the
// scenario's hash and the start; the load begins no earlier than the
// start; the shard alone gets no verdict, and its summary says it holds
// part of the load, as `bench report --partial` rebuilds it.
func TestShardRun(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Parse("gated.yaml", []byte(gated))
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := sc.Hash()
	dir := t.TempDir()
	start := time.Now().Add(300 * time.Millisecond)
	sum, err := Run(context.Background(), sc, Options{Dir: dir, Shard: scenario.Shard{Index: 1, Count: 2}, StartAt: start, NoScrape: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Verdict != nil {
		t.Errorf("a shard alone was judged: %+v", sum.Verdict)
	}
	if sum.Overall.Requests.OK+sum.Overall.Requests.Warmup != 12+10 {
		t.Errorf("requests = %+v, want the shard's 12 closed-loop and 10 open-loop ones", sum.Overall.Requests)
	}
	if s := sum.Shards; s == nil || s.Count != 2 || len(s.Merged) != 1 || s.Merged[0] != 1 || len(s.Missing) != 1 || s.ScenarioHash != hash {
		t.Errorf("shards = %+v", s)
	}
	if !strings.Contains(strings.Join(sum.Warnings, "\n"), "these results hold shard 1 of 2") {
		t.Errorf("warnings do not say the results hold a shard: %q", sum.Warnings)
	}
	if sum.Correlation != nil && sum.Correlation.ScrapeOK != 0 {
		t.Errorf("the shard scraped although told not to: %d samples", sum.Correlation.ScrapeOK)
	}
	f, err := results.OpenFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := f.Headers()[0]
	if h.Shard == nil || h.Shard.Index != 1 || h.Shard.Count != 2 || h.Shard.ScenarioHash != hash || !h.Shard.StartAt.Equal(start) {
		t.Errorf("header shard = %+v", h.Shard)
	}
	for rec, err := range f.All() {
		if err != nil {
			t.Fatal(err)
		}
		if e := rec.End; e != nil && h.Started.Add(e.Began).Before(start) {
			t.Errorf("the load began at %v, before the agreed start %v", h.Started.Add(e.Began), start)
		}
		if r := rec.Result; r != nil && h.Started.Add(r.Scheduled).Before(start) {
			t.Errorf("seq %d scheduled before the agreed start", r.Seq)
		}
	}

	if _, err := report.FromFiles(dir); !errors.Is(err, results.ErrIncompleteShards) {
		t.Errorf("a lone shard was merged without --partial: %v", err)
	}
	_, rebuilt, err := report.Reader{Partial: true}.Rebuild(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got, want bytes.Buffer
	_ = report.WriteJSON(&got, rebuilt)
	_ = report.WriteJSON(&want, sum)
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("the partial rebuild differs from the shard's summary:\nrebuilt %s\nrun     %s", got.Bytes(), want.Bytes())
	}
}

// TestStartAtBounded: a start more than MaxStartDelay away is refused
// before anything runs, and a run waiting for its start stops when its
// context is canceled.
func TestStartAtBounded(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Parse("gated.yaml", []byte(gated))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), sc, Options{Dir: t.TempDir(), StartAt: time.Now().Add(2 * time.Hour)})
	var cfg *ConfigError
	if !errors.As(err, &cfg) || !strings.Contains(err.Error(), "want a time within 1h0m0s") {
		t.Errorf("a start two hours ahead: %v", err)
	}
	// Cancel once the run says it waits.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := writerFunc(func(p []byte) (int, error) {
		if bytes.Contains(p, []byte("for the agreed start")) {
			cancel()
		}
		return len(p), nil
	})
	sum, err := Run(ctx, sc, Options{Dir: t.TempDir(), StartAt: time.Now().Add(50 * time.Minute), Progress: progress})
	if err == nil || !strings.Contains(err.Error(), "stopped before the agreed start") {
		t.Errorf("a canceled wait: %v", err)
	}
	if sum == nil || sum.Overall.Requests.Scheduled != 0 || sum.Incomplete == "" {
		t.Errorf("a run stopped while waiting: %+v", sum)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestOpenFilesLimit checks that a concurrency the process has no file
// descriptors for is refused as the scenario's fault before any load,
// naming the limit: it used to end in thousands of "too many open files"
// failures, or a stall.
func TestOpenFilesLimit(t *testing.T) {
	t.Parallel()
	limit, ok := openfiles.Limit()
	if !ok {
		t.Skip("the open-files limit is unknown on this system")
	}
	doc := fmt.Sprintf("name: fds\ntarget: {url: \"sim://tiny\"}\nload: {stages: [{concurrency: %d, requests: 1}]}\n", limit/2+1)
	sc, err := scenario.Parse("fds.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), sc, Options{Dir: t.TempDir()})
	var cfgErr *ConfigError
	if sum != nil || !errors.As(err, &cfgErr) || !strings.Contains(err.Error(), "ulimit -n") {
		t.Fatalf("Run = %v, %v; want a ConfigError naming the open-files limit", sum, err)
	}
}

// TestRunPresetFile runs against a preset file named in target.url
// relative to the scenario file (sim://./twin.yaml), as `bench calibrate`
// writes one: the simulator runs the file's settings.
func TestRunPresetFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	twin := "base: tiny\nname: twin\nserved_model_name: twin-model\n"
	if err := os.WriteFile(filepath.Join(dir, "twin.yaml"), []byte(twin), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := "name: twin-run\ntarget: {url: sim://./twin.yaml}\nload: {stages: [{concurrency: 2, requests: 4}]}\n"
	if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Load(filepath.Join(dir, "s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	sum, err := Run(context.Background(), sc, Options{Dir: out})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Model != "twin-model" || sum.Overall.Requests.OK != 4 {
		t.Errorf("model %q, requests %+v: the preset file was not run", sum.Model, sum.Overall.Requests)
	}
}

// TestShardDataset: a shard of a run takes its share of a dataset. A
// dataset with one entry cannot be shared by two shards, and the run says
// so before any load (Run used to build the whole dataset's prompts for
// every shard).
func TestShardDataset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "one.jsonl"), []byte(`{"prompt": "hello there", "output_tokens": 4}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := "name: ds\ntarget: {url: sim://tiny}\nprompts: {dataset: {path: one.jsonl}}\nload: {stages: [{concurrency: 2, requests: 4}]}\n"
	if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Load(filepath.Join(dir, "s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), sc, Options{Dir: t.TempDir(), Shard: scenario.Shard{Index: 1, Count: 2}})
	var cfg *ConfigError
	if !errors.As(err, &cfg) || !strings.Contains(err.Error(), "shard") {
		t.Errorf("a one-entry dataset over two shards: %v", err)
	}
}
