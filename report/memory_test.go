package report

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
)

// synthetic fills r as the i-th request of a closed loop of 256 streams,
// each sending one request after another: 200 chunks 10 ms apart, one
// token each, after a 50 ms TTFT. It reuses r's chunk slice.
func synthetic(r *results.Result, i int) {
	const streams, chunks = 256, 200
	sent := time.Duration(i/streams)*2100*time.Millisecond + time.Duration(i%streams)*time.Millisecond + time.Millisecond
	ct := r.ChunkTimes[:0]
	for k := range chunks {
		ct = append(ct, 50*time.Millisecond+time.Duration(k)*10*time.Millisecond+time.Duration(i%7)*time.Microsecond)
	}
	*r = results.Result{Seq: uint64(i), Stage: i * 3 / 1_000_000, Outcome: results.OK, API: results.APIChat, Stream: true,
		Scheduled: sent, Sent: sent, Headers: sent + time.Millisecond, FirstToken: sent + ct[0], FirstContent: sent + ct[0],
		LastToken: sent + ct[chunks-1], End: sent + ct[chunks-1] + time.Millisecond, ChunkTimes: ct,
		InputTokens: 512, MaxTokens: chunks, PromptTokens: 512, OutputTokens: chunks, FinishReason: "length"}
}

// TestAggregateMemoryBounded aggregates 1,000,000 records of 200 chunks
// each (200 M chunks, about 2.4 hours of a 256-stream closed loop, in three
// stages) and checks that the heap in use stays under 200 MB throughout
// and while the summary is computed: the aggregate keeps histograms, fine
// time bins and 24 bytes per request, never the chunks. Run it alone with
// go test ./report -run MemoryBounded -v to see the figures.
func TestAggregateMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("aggregates 200 M chunks (about 20 s); skipped with -short")
	}
	if raceEnabled {
		t.Skip("too slow under the race detector; the same code runs without it")
	}
	const n, limit = 1_000_000, 200 << 20
	var ms runtime.MemStats
	heap := func() uint64 {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	start := time.Now()
	a := New()
	a.AddHeader(&results.Header{Schema: results.Schema, Tool: "servebench", Started: time.Unix(0, 0).UTC(),
		Spec: &results.Spec{Name: "memory", Load: results.SpecLoad{Stages: []results.SpecStage{{Name: "a"}, {Name: "b"}, {Name: "c"}}}}})
	var r results.Result
	var peak uint64
	for i := range n {
		synthetic(&r, i)
		a.Add(&r)
		if i%100_000 == 99_999 {
			peak = max(peak, heap())
		}
	}
	added := time.Since(start)
	s := a.Summary()
	peak = max(peak, heap())
	t.Logf("%d records, %d chunks: added in %v (%.2f µs per record), summary in %v; peak heap in use %.1f MB",
		n, n*200, added.Round(time.Millisecond), float64(added.Microseconds())/n, (time.Since(start) - added).Round(time.Millisecond),
		float64(peak)/(1<<20))
	if peak > limit {
		t.Errorf("heap in use reached %.1f MB, want under %d MB", float64(peak)/(1<<20), limit>>20)
	}
	if s.Overall.Requests.OK != n || s.Overall.Tokens.Output != n*200 || s.Overall.ITL.Count != n*199 {
		t.Errorf("summary counts: ok %d, output tokens %d, ITL samples %d", s.Overall.Requests.OK, s.Overall.Tokens.Output, s.Overall.ITL.Count)
	}
	if c := s.Correlation; c == nil || c.Windows == 0 {
		t.Fatalf("no correlation timeline: %+v", c)
	}
	// 256 streams of one token per 10 ms: 25,600 tok/s while loaded.
	if got := s.Overall.OutputTokensPerSec; got < 0.9*25_600*2/2.1 || got > 25_600 {
		t.Errorf("output tok/s = %g", got)
	}
}

// BenchmarkReadAggregate reads a results file of 2,000 requests of 200
// chunks each and aggregates it, as `bench report` does: the cost per
// record of decoding and aggregating.
func BenchmarkReadAggregate(b *testing.B) {
	path := filepath.Join(b.TempDir(), "results.jsonl")
	w, err := results.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	const n = 2000
	if err := w.Write(results.HeaderRecord(&results.Header{Schema: results.Schema, Tool: "servebench",
		Scenario: []byte(`{"name":"bench","load":{"stages":[{"name":"a"}]}}`)})); err != nil {
		b.Fatal(err)
	}
	var r results.Result
	for i := range n {
		synthetic(&r, i)
		if err := w.Write(results.ResultRecord(&r)); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		a, err := FromFiles(path)
		if err != nil {
			b.Fatal(err)
		}
		if s := a.Summary(); s.Overall.Requests.OK != n {
			b.Fatal(fmt.Sprint("ok = ", s.Overall.Requests.OK))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
}

// BenchmarkAggregate adds records without decoding them: the aggregation's
// own cost per 200-chunk record.
func BenchmarkAggregate(b *testing.B) {
	a := New()
	var r results.Result
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		synthetic(&r, i%1_000_000)
		a.Add(&r)
		i++
	}
}
