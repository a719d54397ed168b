package selftest

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/openfiles"
)

// TestRun measures one small stream count briefly and checks both sides
// read every chunk of every response they finished.
func TestRun(t *testing.T) {
	t.Parallel()
	rows, err := Run(context.Background(), Config{Streams: []int{4}, Duration: 200 * time.Millisecond, Chunks: 32}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	if r.Client.Chunks == 0 || r.Raw.Chunks == 0 || r.Client.Chunks%32 != 0 || r.Raw.Chunks%32 != 0 || r.Ratio <= 0 {
		t.Errorf("row %+v", r)
	}
	var b strings.Builder
	if err := WriteText(&b, rows); err != nil || !strings.Contains(b.String(), "ratio") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
}

// benchmarkSide drives one side with 64 streams for b.N responses of 256
// chunks; the reported figure is ns per chunk.
func benchmarkSide(b *testing.B, side func(ctx context.Context, url string, n, chunks int) (func(context.Context) int64, func(), error)) {
	const streams, chunks = 64, 256
	src, err := newSource(chunks)
	if err != nil {
		b.Fatal(err)
	}
	defer src.close()
	one, cleanup, err := side(context.Background(), src.url, streams, chunks)
	if err != nil {
		b.Fatal(err)
	}
	defer cleanup()
	var left atomic.Int64
	left.Store(int64(b.N))
	var total atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for range streams {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				total.Add(one(context.Background()))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if total.Load() > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(total.Load()), "ns/chunk")
	}
}

// BenchmarkClientPath is the real client's ingest at 64 streams.
func BenchmarkClientPath(b *testing.B) { benchmarkSide(b, clientPath) }

// BenchmarkRawReader is the floor: a reader that only counts data lines.
func BenchmarkRawReader(b *testing.B) {
	benchmarkSide(b, func(_ context.Context, url string, n, _ int) (func(context.Context) int64, func(), error) {
		return rawReader(url, n)
	})
}

// TestRunSkipsBeyondOpenFiles checks that a stream count this process
// cannot open sockets for is skipped, saying why, at once: it used to
// stall for good on "too many open files" (10,000 streams under a limit
// of 20,000 descriptors).
func TestRunSkipsBeyondOpenFiles(t *testing.T) {
	t.Parallel()
	limit, ok := openfiles.Limit()
	if !ok {
		t.Skip("the open-files limit is unknown on this system")
	}
	n := limit/2 + 1
	start := time.Now()
	rows, err := Run(context.Background(), Config{Streams: []int{n}, Duration: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || !strings.Contains(rows[0].Skipped, "ulimit -n") || rows[0].Client.Chunks != 0 {
		t.Fatalf("rows %+v: want %d streams skipped for the open-files limit", rows, n)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("skipping took %v", d)
	}
	var b strings.Builder
	if err := WriteText(&b, rows); err != nil || !strings.Contains(b.String(), "skipped: ") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
}
