package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/servebench/servebench/internal/golden"
	"github.com/servebench/servebench/results"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

const msec = time.Millisecond

// okResult is a streamed request sent at sent with the given TTFT and n
// one-token chunks itl apart.
func okResult(seq uint64, stage int, sent, ttft, itl time.Duration, n int) results.Result {
	r := results.Result{Seq: seq, Stage: stage, Outcome: results.OK, API: results.APIChat,
		Stream: true, Scheduled: sent - msec, Sent: sent, Headers: sent + ttft/2, FirstToken: sent + ttft,
		FirstContent: sent + ttft, PromptTokens: 100, OutputTokens: n, InputTokens: 100, MaxTokens: n}
	for i := range n {
		r.ChunkTimes = append(r.ChunkTimes, ttft+time.Duration(i)*itl)
	}
	r.LastToken = sent + r.ChunkTimes[n-1]
	r.End = r.LastToken + msec
	return r
}

func TestAggregateFigures(t *testing.T) {
	t.Parallel()
	a := New()
	// 100 ok requests in stage 0 with TTFT 1..100 msec and ITL 20 msec over 11 tokens.
	for i := range 100 {
		a.Add(ptr(okResult(uint64(i), 0, time.Second+time.Duration(i)*10*msec, time.Duration(i+1)*msec, 20*msec, 11)))
	}
	// Warmup, failures, drops and cancellations.
	warm := okResult(200, 0, time.Second, 5*time.Second, 20*msec, 11)
	warm.Warmup = true
	a.Add(&warm)
	a.Add(&results.Result{Seq: 201, Outcome: results.Failed, ErrorClass: results.ErrHTTP5xx,
		Scheduled: time.Second, Sent: time.Second, End: time.Second + msec, Status: 503})
	a.Add(&results.Result{Seq: 202, Outcome: results.Failed, ErrorClass: results.ErrTimeout,
		Scheduled: time.Second, Sent: time.Second, End: time.Second + msec})
	a.Add(&results.Result{Seq: 203, Outcome: results.Dropped, Scheduled: 2 * time.Second})
	a.Add(&results.Result{Seq: 204, Outcome: results.Canceled, Scheduled: time.Second,
		Sent: time.Second, End: 2 * time.Second})
	s := a.Summary()
	st := s.Stages[0]
	want := Requests{Scheduled: 104, OK: 100, Failed: 2, Shed: 1, Canceled: 1, Dropped: 1, Warmup: 1}
	if st.Requests != want {
		t.Errorf("requests = %+v, want %+v", st.Requests, want)
	}
	if st.Errors["http_5xx"] != 1 || st.Errors["timeout"] != 1 {
		t.Errorf("errors = %v", st.Errors)
	}
	near := func(name string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %v, want %v ± %v", name, got, want, tol)
		}
	}
	near("ttft p50", st.TTFT.P50, 50, 0.05)
	near("ttft p99", st.TTFT.P99, 99, 0.1)
	near("ttft max", st.TTFT.Max, 100, 0.1)
	near("ttft mean", st.TTFT.Mean, 50.5, 0.05)
	near("ttft from schedule p50", st.TTFTFromSchedule.P50, 51, 0.05)
	near("schedule lag p50", st.ScheduleLag.P50, 1, 0.01)
	near("itl p50", st.ITL.P50, 20, 0.02)
	near("tpot p50", st.TPOT.P50, 20, 0.02)
	if st.ITL.Count != 100*10 {
		t.Errorf("itl count = %d, want 1000 (10 gaps per request)", st.ITL.Count)
	}
	// Window: first send at 1 s to the last ok request's end at
	// 1 s + 990 ms (sent) + 100 ms (TTFT) + 200 ms (10 gaps) + 1 ms.
	near("duration", st.Duration, 1.291, 1e-6)
	near("output tok/s", st.OutputTokensPerSec, 1100/1.291, 0.001)
	near("requests/s", st.RequestsPerSec, 100/1.291, 0.001)
}

func ptr(r results.Result) *results.Result { return &r }

// records builds a small multi-stage run with every outcome.
func records(seed uint64) []results.Result {
	rng := rand.New(rand.NewPCG(seed, 1))
	var rs []results.Result
	for i := range 300 {
		stage := i / 100
		sent := time.Duration(i)*15*msec + time.Duration(rng.IntN(5))*msec
		r := okResult(uint64(i), stage, sent, time.Duration(20+rng.IntN(300))*msec, time.Duration(5+rng.IntN(30))*msec, 2+rng.IntN(50))
		switch i % 37 {
		case 3:
			r = results.Result{Seq: uint64(i), Stage: stage, Outcome: results.Failed,
				ErrorClass: results.ErrStreamTruncated, Scheduled: sent, Sent: sent, End: sent + 10*msec}
		case 5:
			r = results.Result{Seq: uint64(i), Stage: stage, Outcome: results.Dropped, Scheduled: sent}
		case 7:
			r.Warmup = true
		}
		rs = append(rs, r)
	}
	return rs
}

func summaryJSON(t *testing.T, rs []results.Result) []byte {
	t.Helper()
	a := New()
	a.AddHeader(&results.Header{Schema: results.Schema, Tool: "servebench", Version: "test",
		Started: time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC), Target: "http://127.0.0.1:8000", Model: "m",
		Scenario: json.RawMessage(`{"name":"golden","load":{"stages":[{"name":"a"},{"name":"b"},{"name":"c"}]}}`)})
	for i := range rs {
		a.Add(&rs[i])
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, a.Summary()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestAddIsOrderIndependent(t *testing.T) {
	t.Parallel()
	rs := records(1)
	want := summaryJSON(t, rs)
	rng := rand.New(rand.NewPCG(9, 9))
	for range 3 {
		rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
		if got := summaryJSON(t, rs); !bytes.Equal(got, want) {
			t.Fatalf("summary depends on record order")
		}
	}
}

func TestSummaryGolden(t *testing.T) {
	t.Parallel()
	got := summaryJSON(t, records(1))
	goldenCheck(t, got)
}

// goldenCheck compares got with testdata/TEST.golden (-update rewrites it).
func goldenCheck(t *testing.T, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", t.Name()+".golden"), got, *update)
}

func TestFromFilesMergesMachines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	write := func(name string, started time.Time, rs []results.Result) string {
		path := filepath.Join(dir, name)
		w, err := results.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(results.HeaderRecord(&results.Header{Schema: results.Schema, Tool: "servebench",
			Started: started, Scenario: json.RawMessage(`{"name":"m","load":{"stages":[{"name":"only"}]}}`)})); err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if err := w.Write(results.ResultRecord(&r)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// Machine A runs from 1 s to 2.2 s after its epoch; machine B started 10 s
	// later by the wall clock and runs 1 s to 2.2 s after its own epoch.
	one := []results.Result{okResult(1, 0, time.Second, 100*msec, 10*msec, 101)}
	a := write("a.jsonl", start, one)
	b := write("b.jsonl.gz", start.Add(10*time.Second), one)
	agg, err := FromFiles(a, b)
	if err != nil {
		t.Fatal(err)
	}
	s := agg.Summary()
	if s.Files != 2 || !s.Started.Equal(start) {
		t.Errorf("files = %d, started = %v", s.Files, s.Started)
	}
	if s.Overall.Requests.OK != 2 || s.Overall.TTFT.Count != 2 {
		t.Errorf("merged ok = %d, ttft count = %d; want 2, 2", s.Overall.Requests.OK, s.Overall.TTFT.Count)
	}
	// From A's first send (1 s) to B's end (10 s + 1 s + 100 msec + 1000 msec + 1 msec).
	if want := 12.101 - 1; math.Abs(s.Overall.Duration-want) > 1e-6 {
		t.Errorf("merged duration = %v s, want %v", s.Overall.Duration, want)
	}
}

// TestMergeSequentialRunsWarns is issue 9's `bench report A B` on two runs
// one after the other: the merged summary warns that the files do not
// overlap, with each file's start and duration; files of one run from two
// machines do not warn.
func TestMergeSequentialRunsWarns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	write := func(name string, started time.Time) string {
		path := filepath.Join(dir, name)
		w, err := results.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(results.HeaderRecord(&results.Header{Schema: results.Schema, Started: started,
			Scenario: json.RawMessage(`{"name":"m","load":{"stages":[{"name":"only"}]}}`)})); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			r := okResult(uint64(i), 0, time.Second+time.Duration(i)*100*msec, 50*msec, 10*msec, 5)
			if err := w.Write(results.ResultRecord(&r)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a, b := write("a.jsonl", start), write("b.jsonl", start.Add(10*time.Minute))
	same := write("c.jsonl", start.Add(200*time.Millisecond))
	agg, err := FromFiles(a, b)
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(agg.Summary().Warnings, "\n")
	if !strings.Contains(w, "do not overlap in time") || !strings.Contains(w, "a.jsonl from 03:00:01 for 1s") ||
		!strings.Contains(w, "b.jsonl from 03:10:01 for 1s") || !strings.Contains(w, "9m59s of idle gap") {
		t.Errorf("warnings:\n%s", w)
	}
	agg, err = FromFiles(a, same)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(agg.Summary().Warnings, "\n"); strings.Contains(w, "overlap") {
		t.Errorf("overlapping files warned: %s", w)
	}
}

// TestUntrustedInput is issue 11's `bench report` trusting its input: the
// same file given twice is refused; records with an unknown outcome, a
// stage the scenario lacks or a time outside the run are skipped and
// counted in warnings; and a crafted file that names a thousand stages
// (each would cost its histograms) leaves the heap small.
func TestUntrustedInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "crafted.jsonl")
	w, err := results.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(results.HeaderRecord(&results.Header{Schema: results.Schema, RunID: "r1", Started: time.Unix(0, 0).UTC(),
		Scenario: json.RawMessage(`{"name":"c","load":{"stages":[{"name":"only"}]}}`)}))
	for i := range 5000 {
		r := okResult(uint64(i), 0, time.Second, 20*msec, 10*msec, 3)
		switch i % 5 {
		case 1:
			r.Stage = 10 + i // a stage the scenario lacks
		case 2:
			r.Outcome = "exploded"
		case 3:
			r.End = 1 << 62
		}
		w.Write(results.ResultRecord(&r))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := FromFiles(path, path); err == nil || !strings.Contains(err.Error(), "are the same run") {
		t.Errorf("the same file twice: %v", err)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapInuse
	a, err := FromFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	s := a.Summary()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if grown := int64(ms.HeapInuse) - int64(before); grown > 64<<20 {
		t.Errorf("the crafted file took %d MB", grown>>20)
	}
	w2 := strings.Join(s.Warnings, "\n")
	for _, want := range []string{"1000 request records were skipped: they have a stage the scenario does not have",
		`1000 request records were skipped: they have an unknown outcome "exploded"`, "1000 request records were skipped: they have a time outside the run"} {
		if !strings.Contains(w2, want) {
			t.Errorf("warnings lack %q:\n%s", want, w2)
		}
	}
	if s.Overall.Requests.OK != 2000 || len(s.Stages) != 1 {
		t.Errorf("ok %d in %d stages, want 2000 in 1", s.Overall.Requests.OK, len(s.Stages))
	}
}

// TestPercentilesUnbiased checks that a percentile is reported at its
// bucket's midpoint: within half a bucket (3 significant figures: 1/2048 of
// the value) of the exact order statistic, and without the upward bias of
// a bucket's top, which put every percentile up to 0.1 % high (+0.45 ms
// at 1 s).
func TestPercentilesUnbiased(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var signed float64
	const trials = 400
	for range trials {
		h := newStageAgg(1).hist[0]
		v := 500 + rng.Int64N(2_000_000) // µs: 0.5 ms to 2 s
		record(h, time.Duration(v)*time.Microsecond)
		d := dist(h)
		for name, got := range map[string]float64{"p50": d.P50, "p99": d.P99, "max": d.Max} {
			err := got*1000 - float64(v)
			if math.Abs(err) > float64(v)/2048+0.5 {
				t.Fatalf("one value %d µs: %s = %.4f ms, off by %.1f µs (more than half a bucket)", v, name, got, err)
			}
		}
		signed += (d.P50*1000 - float64(v)) / float64(v)
	}
	if mean := signed / trials; math.Abs(mean) > 1e-4 {
		t.Errorf("mean relative error of p50 = %+.2e: biased (a bucket's top gives about +2.4e-4)", mean)
	}
}

// TestPeaks checks the peak output throughput (whole seconds from the
// window's start, as vLLM's bench serve buckets them) and the peak number
// of requests in flight, per stage and over the run.
func TestPeaks(t *testing.T) {
	t.Parallel()
	a := New()
	// Stage 0: 10 requests sent at 1 s, each receiving 100 one-token
	// chunks evenly over [1.1 s, 1.991 s]: 1,000 tokens in the second
	// [1 s, 2 s), none in [2 s, 3 s); the last ends at 2.5 s so the window
	// is 1.5 s long and holds one whole second.
	for i := range 10 {
		r := okResult(uint64(i), 0, time.Second, 100*msec, 9*msec, 100)
		r.End = 2500 * msec
		a.Add(&r)
	}
	// Stage 1: 4 requests from 10 s to 13 s, 50 tokens a second each.
	for i := range 4 {
		a.Add(ptr(okResult(uint64(10+i), 1, 10*time.Second, 20*msec, 20*msec, 150)))
	}
	s := a.Summary()
	if st := s.Stages[0]; st.PeakOutputTokensPerSec != 1000 || st.PeakInFlight != 10 {
		t.Errorf("stage 0: peak %v tok/s, %d in flight; want 1000 and 10", st.PeakOutputTokensPerSec, st.PeakInFlight)
	}
	if st := s.Stages[1]; math.Abs(st.PeakOutputTokensPerSec-200) > 1 || st.PeakInFlight != 4 {
		t.Errorf("stage 1: peak %v tok/s, %d in flight; want 200 and 4", st.PeakOutputTokensPerSec, st.PeakInFlight)
	}
	if o := s.Overall; o.PeakOutputTokensPerSec != 1000 || o.PeakInFlight != 10 {
		t.Errorf("overall: peak %v tok/s, %d in flight; want 1000 and 10", o.PeakOutputTokensPerSec, o.PeakInFlight)
	}
	if s.DurationS != 12.001 {
		t.Errorf("duration %v s, want 12.001 (1 s to the last end at 13.001 s)", s.DurationS)
	}
}

// TestRecordAll: recording runs of equal values at once gives the
// histogram recording them one by one gives.
func TestRecordAll(t *testing.T) {
	var ds []time.Duration
	for i := range 5000 {
		ds = append(ds, time.Duration(i%7/3)*time.Millisecond+time.Duration(i%5)*time.Nanosecond) // runs, and sub-µs noise
	}
	ds = append(ds, -time.Second, 100*time.Hour) // clamped
	a, b := hdrhistogram.New(histMinUS, histMaxUS, histSigFigs), hdrhistogram.New(histMinUS, histMaxUS, histSigFigs)
	recordAll(a, ds)
	for _, d := range ds {
		record(b, d)
	}
	if !a.Equals(b) {
		t.Errorf("recordAll's histogram differs from recording one by one")
	}
}

// TestIssue22ResentWarning (issue 22, item 5): resends are said as they
// are: none processed twice when no earlier send was written whole, and
// otherwise how many the server may have processed too.
func TestIssue22ResentWarning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		retries, sent int
		want          string
	}{
		{"never written whole", 3, 0, "3 requests were sent again on a fresh connection: the server closed kept-alive connections after a response (as llama.cpp's server does) before the first send was written whole, so none was processed twice"},
		{"written whole", 3, 2, "3 requests were sent again on a fresh connection after the server closed a kept-alive one before any response byte; 2 of the earlier sends had been written whole, so the server may have processed them too: up to 2 requests' work that no record counts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := New()
			for i := range 3 {
				r := okResult(uint64(i), 0, time.Second, 100*msec, 10*msec, 5)
				r.Retries = 1
				r.ResentWritten = min(max(tc.sent-i, 0), 1)
				a.Add(&r)
			}
			s := a.Summary()
			if s.Overall.Requests.Retried != int64(tc.retries) || s.Overall.Requests.ResentWritten != int64(tc.sent) {
				t.Errorf("retried %d, resent_written %d; want %d, %d", s.Overall.Requests.Retried, s.Overall.Requests.ResentWritten, tc.retries, tc.sent)
			}
			if w := strings.Join(s.Warnings, "\n"); !strings.Contains(w, tc.want) {
				t.Errorf("warnings:\n%s\nwant %q", w, tc.want)
			}
		})
	}
}

// TestIssue22WriteFailed (issue 22, item 9): on a full disk the summary
// blamed a kill for the missing end record. A run whose results file could
// not be written says so; a file read back without its end record names
// both causes.
func TestIssue22WriteFailed(t *testing.T) {
	t.Parallel()
	hdr := &results.Header{Schema: results.Schema, Ends: true, Scenario: json.RawMessage(`{"name":"m","load":{"stages":[{"name":"only"}]}}`)}
	a := New()
	a.AddHeader(hdr)
	r := okResult(0, 0, time.Second, 100*msec, 10*msec, 5)
	a.Add(&r)
	a.WriteFailed(errors.New("write record 57: no space left on device"))
	s := a.Summary()
	if !strings.Contains(s.Incomplete, "the results file could not be written (write record 57: no space left on device)") ||
		strings.Contains(s.Incomplete, "killed") {
		t.Errorf("incomplete: %q", s.Incomplete)
	}
	b := New()
	b.AddHeader(hdr)
	b.Add(&r)
	if got := b.Summary().Incomplete; !strings.Contains(got, "killed, or its disk filled") {
		t.Errorf("a file without its end record: %q", got)
	}
}
