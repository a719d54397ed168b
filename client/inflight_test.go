package client

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
)

// BenchmarkInFlight measures what one in-flight stream costs the client:
// the heap in use and the goroutine stacks, per stream, with n streams
// open at once that have received their first chunk and wait for the rest,
// their connections included (one per stream).
// The server must be another process, so that its memory is not counted:
// set SERVEBENCH_HOLD_URL to a server that holds each stream open after
// its first token, for example ../shared/rigs/mocksse built in /tmp and
// started with --ttft 0 --itl 60s --tokens 2. SERVEBENCH_HOLD_STREAMS sets
// n (default 10,000; the open-files limit must allow it). The figures:
// heap-B/stream, stack-B/stream and B/stream (their sum), and
// goroutines/stream.
func BenchmarkInFlight(b *testing.B) {
	url := os.Getenv("SERVEBENCH_HOLD_URL")
	if url == "" {
		b.Skip("set SERVEBENCH_HOLD_URL to a server in another process that holds streams open (see the comment)")
	}
	n := 10_000
	if s := os.Getenv("SERVEBENCH_HOLD_STREAMS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("SERVEBENCH_HOLD_STREAMS=%s: want a positive count", s)
		}
	}
	for b.Loop() {
		// The baseline is taken before the connections are opened: each
		// stream has its own, and what it holds counts.
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		heap0, stack0, g0 := ms.HeapInuse, ms.StackInuse, runtime.NumGoroutine()
		c := newTestClient(b, url, Config{MaxConns: n})
		if _, err := c.Warm(context.Background(), n); err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				c.Do(ctx, &Request{API: results.APIChat, Model: "m", Prompt: "x", MaxTokens: 2, Stream: true, IncludeUsage: true})
			})
		}
		deadline := time.Now().Add(60 * time.Second)
		started := func() int64 { k, _ := c.FirstTokens(); return k }
		for started() < int64(n) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if got := started(); got < int64(n) {
			cancel()
			wg.Wait()
			b.Fatalf("only %d of %d streams got their first chunk in 60 s", got, n)
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		heap, stack, g := float64(ms.HeapInuse-heap0)/float64(n), float64(ms.StackInuse-stack0)/float64(n), float64(runtime.NumGoroutine()-g0)/float64(n)
		cancel()
		wg.Wait()
		b.ReportMetric(heap, "heap-B/stream")
		b.ReportMetric(stack, "stack-B/stream")
		b.ReportMetric(heap+stack, "B/stream")
		b.ReportMetric(g, "goroutines/stream")
	}
}
