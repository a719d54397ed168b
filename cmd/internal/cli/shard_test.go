package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/sim"
)

// shardScenario opens with an open loop, so that the shards' arrivals
// start together at --start-at, then a closed loop.
const shardScenario = `name: sharded
prompts: {seed: 11, input_tokens: {dist: uniform, min: 16, max: 64}, output_tokens: {dist: uniform, min: 4, max: 12}}
scrape: {interval: 200ms}
load:
  stages:
    - {name: open, rate: 40, arrival: constant, requests: 60, warmup: {requests: 3}}
    - {name: closed, concurrency: 6, requests: 45, warmup: {requests: 3}}
`

// TestShardsMergeExactly is issue 14's acceptance test: three shards run
// as separate processes (this test binary acting as bench, see TestMain)
// against one simulator, start together at an agreed time, and only shard
// 0 scrapes. bench merge combines them; the merged request counts, token
// totals and percentiles must equal those computed directly from the
// shards' records (percentiles within the histograms' 0.1 %), and the
// shards' open-loop arrivals together must be the scenario's one schedule
// at its rate. Then a missing shard is refused. What it checks does not
// depend on the machine's pace (a shard that starts late is named by the
// merge, not failed), so it runs beside the package's other tests.
func TestShardsMergeExactly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cfg, err := sim.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sim.Listen(ctx, "127.0.0.1:0", cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	file := writeScenario(t, shardScenario)
	dir := t.TempDir()
	const n = 3
	// Time enough for three processes to start, load the tokenizer, detect
	// the model and scrape once on a busy machine; a shard that is late
	// is named by the merge, not failed here.
	start := time.Now().Add(3 * time.Second).UTC().Truncate(time.Millisecond)
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, n)
	errs := make([]error, n)
	for i := range n {
		cmd := exec.CommandContext(ctx, os.Args[0], "run", file, "--target", srv.URL(), "--quiet",
			"--shard", fmt.Sprintf("%d/%d", i, n), "--start-at", start.Format(time.RFC3339Nano), "--scrape-shard", "0",
			"--out", filepath.Join(dir, fmt.Sprintf("shard-%d", i)))
		cmd.Env = append(os.Environ(), benchEnv+"=1")
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		wg.Go(func() { errs[i] = cmd.Run() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, outs[i].String())
		}
	}

	merged := filepath.Join(dir, "merged")
	e, out, errb := testEnv()
	if err := bench(ctx, e, []string{"merge", dir, "--out", merged}); err != nil {
		t.Fatalf("merge: %v\n%s%s", err, out, errb)
	}
	for _, name := range []string{"summary.json", "report.html", "timeline.png", "latency.svg"} {
		if _, err := os.Stat(filepath.Join(merged, name)); err != nil {
			t.Errorf("merge wrote no %s: %v", name, err)
		}
	}
	data, err := os.ReadFile(filepath.Join(merged, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum report.Summary
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}

	// The reference: every shard's records, read directly.
	files, err := results.OpenFiles(filepath.Join(dir, "shard-0"), filepath.Join(dir, "shard-1"), filepath.Join(dir, "shard-2"))
	if err != nil {
		t.Fatal(err)
	}
	var ok, warm, scheduled, prompt, output int64
	var ttft, e2e []time.Duration
	var itl []time.Duration
	arrivals := make([][]time.Duration, n) // each shard's open-loop arrivals, on the common clock
	for rec, err := range files.All() {
		if err != nil {
			t.Fatal(err)
		}
		r := rec.Result
		if r == nil {
			continue
		}
		if r.Stage == 0 {
			arrivals[rec.File] = append(arrivals[rec.File], r.Scheduled)
		}
		if r.Warmup {
			warm++
			continue
		}
		scheduled++
		if r.Outcome != results.OK {
			continue
		}
		ok++
		prompt += int64(r.PromptTokens)
		output += int64(r.OutputTokens)
		if d, has := r.TTFT(); has {
			ttft = append(ttft, d)
		}
		if d, has := r.E2E(); has {
			e2e = append(e2e, d)
		}
		itl = r.AppendITLs(itl)
	}
	o := sum.Overall
	if o.Requests.Scheduled != 57+42 || o.Requests.Warmup != 6 || o.Requests.Scheduled != scheduled || o.Requests.OK != ok || ok == 0 {
		t.Errorf("merged requests %+v; the records hold %d scheduled (want 99), %d ok, %d warmup", o.Requests, scheduled, ok, warm)
	}
	if o.Tokens.Prompt != prompt || o.Tokens.Output != output {
		t.Errorf("merged tokens %+v; the records hold %d prompt and %d output tokens", o.Tokens, prompt, output)
	}
	for _, m := range []struct {
		name string
		got  report.Dist
		vals []time.Duration
	}{{"ttft", o.TTFT, ttft}, {"e2e", o.E2E, e2e}, {"itl", o.ITL, itl}} {
		if m.got.Count != int64(len(m.vals)) {
			t.Errorf("%s: merged count %d, records %d", m.name, m.got.Count, len(m.vals))
		}
		slices.Sort(m.vals)
		for _, q := range []struct {
			p   float64
			got float64
		}{{0.5, m.got.P50}, {0.9, m.got.P90}, {0.99, m.got.P99}} {
			// HdrHistogram's rank, and its 3 significant digits of
			// microseconds.
			rank := max(int(q.p*float64(len(m.vals))+0.5), 1)
			want := float64(m.vals[rank-1]) / 1e6
			if math.Abs(q.got-want) > 0.001*want+0.002 {
				t.Errorf("%s p%g: merged %.4f ms, records %.4f ms", m.name, q.p*100, q.got, want)
			}
		}
	}
	if sh := sum.Shards; sh == nil || sh.Count != n || len(sh.Merged) != n || len(sh.Missing) != 0 || !sh.StartAt.Equal(start) {
		t.Errorf("summary shards = %+v", sh)
	} else {
		t.Logf("shards began their load %.3f s apart, the last %.3f s after the agreed start", sh.StartSpread, sh.MaxLate)
	}
	if sum.Correlation == nil || sum.Correlation.ScrapeOK == 0 {
		t.Error("the merge has no scrapes: shard 0 scraped the server")
	}

	// The shards' arrivals together are the scenario's one schedule: shard
	// i's are arrivals i, i+3, … of it, offset by when shard i's stage
	// began, which --start-at makes the same moment on every shard.
	sc, err := scenario.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	sched := scenario.NewSchedule(&sc.Load.Stages[0], sc.ArrivalSeed(0))
	var union []time.Duration
	var starts []time.Duration
	for i, a := range arrivals {
		slices.Sort(a)
		began := a[0] - sched.Offset(uint64(i))
		starts = append(starts, began)
		for j, at := range a {
			if got, want := at-began, sched.Offset(uint64(i+n*j)); got != want {
				t.Fatalf("shard %d's arrival %d is at +%v of its stage, want the schedule's arrival %d at +%v", i, j, got, i+n*j, want)
			}
			union = append(union, at)
		}
	}
	if len(union) != 60 {
		t.Fatalf("the shards scheduled %d arrivals, want the stage's 60", len(union))
	}
	slices.Sort(union)
	span := union[len(union)-1] - union[0]
	want := sched.Offset(59) - sched.Offset(0)
	t.Logf("arrivals: %d over %v on the merged clock (%.1f/s), the schedule's %v (%.1f/s), stage starts %v apart; scenario rate 40/s",
		len(union), span.Round(time.Millisecond), 59/span.Seconds(), want.Round(time.Millisecond), 59/want.Seconds(),
		(slices.Max(starts) - slices.Min(starts)).Round(time.Microsecond))

	// Merging is refused without every shard, and with --partial names the missing one.
	checkCLI(t, cliCase{"missing shard", []string{"merge", filepath.Join(dir, "shard-0"), filepath.Join(dir, "shard-2"), "--out", t.TempDir()},
		exitFailed, "shard 1 of 3 missing"})
	e2, out2, errb2 := testEnv()
	if err := bench(ctx, e2, []string{"report", filepath.Join(dir, "shard-2"), filepath.Join(dir, "shard-0"), "--partial"}); err != nil {
		t.Fatalf("report --partial: %v\n%s", err, errb2)
	}
	if !strings.Contains(out2.String(), "these results hold shards 0, 2 of 3") {
		t.Errorf("report --partial does not name the shards:\n%s", out2)
	}
}

// TestShardFlags: the shard flags' mistakes are usage errors, named.
func TestShardFlags(t *testing.T) {
	t.Parallel()
	file := writeScenario(t, "name: f\ntarget: {url: \"sim://tiny\"}\nload: {stages: [{concurrency: 2, requests: 4}]}\n")
	used := t.TempDir()
	if err := os.WriteFile(filepath.Join(used, "summary.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []cliCase{
		{"shard out of range", []string{"run", file, "--shard", "3/3"}, exitUsage, "--shard \"3/3\": the index counts from 0"},
		{"shard unexpanded", []string{"run", file, "--shard", "$(JOB_COMPLETION_INDEX)/3"}, exitUsage, "want INDEX/COUNT"},
		{"too many shards for the workers", []string{"run", file, "--shard", "0/3", "--out", t.TempDir()}, exitUsage, "2 workers cannot be split over 3 shards"},
		{"start-at not RFC 3339", []string{"run", file, "--start-at", "tomorrow"}, exitUsage, "want an RFC 3339 time"},
		{"start-at too far", []string{"run", file, "--start-at", "2020-01-01T00:00:00Z", "--out", t.TempDir()}, exitUsage, "want a time within 1h0m0s"},
		{"scrape-shard alone", []string{"run", file, "--scrape-shard", "0"}, exitUsage, "applies to a shard"},
		{"scrape-shard out of range", []string{"run", file, "--shard", "0/2", "--scrape-shard", "2"}, exitUsage, "want a shard of the 2, 0 to 1"},
		{"merge without out", []string{"merge", used}, exitUsage, "--out DIR is required"},
		{"merge onto a run", []string{"merge", used, "--out", used}, exitUsage, "already holds a run"},
		{"merge nothing", []string{"merge", "--out", t.TempDir()}, exitUsage, "no results file"},
	} {
		checkCLI(t, tc)
	}
}
