package vllmlog

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"
)

// syntheticLog produces a vLLM log of about size bytes without holding it:
// one server's start-up, then stats lines every ten seconds, access
// lines, a recurring warning and, now and then, a long line and an
// unknown one. It samples the heap in use every 4 MB it produces, so the
// test sees the parser's memory while it reads.
type syntheticLog struct {
	size, n  int64
	i        int
	buf      []byte
	peak     uint64
	sampleAt int64
	ms       runtime.MemStats
}

func (s *syntheticLog) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		if s.n >= s.size {
			return 0, io.EOF
		}
		s.buf = s.line()
	}
	k := copy(p, s.buf)
	s.buf, s.n = s.buf[k:], s.n+int64(k)
	if s.n >= s.sampleAt {
		s.sampleAt += 4 << 20
		runtime.ReadMemStats(&s.ms)
		s.peak = max(s.peak, s.ms.HeapInuse)
	}
	return k, nil
}

func (s *syntheticLog) line() []byte {
	i := s.i
	s.i++
	if i < len(startupLines) {
		return []byte(startupLines[i] + "\n")
	}
	t := time.Date(2000, 11, 28, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
	stamp := t.Format("01-02 15:04:05")
	switch i % 10 {
	case 0:
		kv := float64(i%7000) / 100
		return fmt.Appendf(nil, "(APIServer pid=90) INFO %s [loggers.py:236] Engine 000: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: 6 reqs, Waiting: 0 reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: 81.6%%\n",
			stamp, float64(i%3), 550-3*kv, kv)
	case 3:
		return fmt.Appendf(nil, "(APIServer pid=90) WARNING %s [serving.py:233] request %d: something odd happened %d times\n", stamp, i, i%13)
	case 7:
		if i%100_000 == 7 {
			return append(make([]byte, 0, 1<<20), fmt.Sprintf("%0*d\n", 1<<20, i)...) // a 1 MB line
		}
		return fmt.Appendf(nil, "garbage %x \x1b[31mnot a record\x1b[0m\n", i)
	}
	return fmt.Appendf(nil, "(APIServer pid=90) INFO:     127.0.0.1:%d - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n", 40000+i%20000)
}

var startupLines = []string{
	"(APIServer pid=90) INFO 11-28 11:45:51 [api_server.py:1977] vLLM API server version 0.11.2",
	"(APIServer pid=90) INFO 11-28 11:45:51 [utils.py:253] non-default args: {'model': 'openai/gpt-oss-120b', 'max_model_len': 98304, 'max_num_seqs': 6}",
	"(APIServer pid=90) INFO 11-28 11:46:35 [model.py:631] Resolved architecture: GptOssForCausalLM",
	"(APIServer pid=90) INFO 11-28 11:46:45 [scheduler.py:216] Chunked prefill is enabled with max_num_batched_tokens=8192.",
	"(EngineCore_DP0 pid=289) INFO 11-28 11:58:41 [gpu_worker.py:359] Available KV cache memory: 8.99 GiB",
	"(EngineCore_DP0 pid=289) INFO 11-28 11:58:41 [kv_cache_utils.py:1229] GPU KV cache size: 130,960 tokens",
	"(EngineCore_DP0 pid=289) INFO 11-28 11:58:41 [kv_cache_utils.py:1234] Maximum concurrency for 98,304 tokens per request: 2.46x",
}

// TestLargeLogMemoryBounded parses a 100 MB synthetic log (about 800,000
// lines, 80,000 of them stats lines, and a few 1 MB lines) and checks that
// the heap in use stays bounded: the parser keeps figures, bounded series
// and grouped findings, never lines. Run it alone with
// go test ./vllmlog -run LargeLog -v to see the time and the peak heap.
func TestLargeLogMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("parses 100 MB (a few seconds); skipped with -short")
	}
	if raceEnabled {
		t.Skip("too slow under the race detector; the same code runs without it")
	}
	const size, limit = 100 << 20, 64 << 20
	runtime.GC()
	src := &syntheticLog{size: size}
	start := time.Now()
	rep, err := Parse(context.Background(), "synthetic", src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&src.ms)
	src.peak = max(src.peak, src.ms.HeapInuse)
	t.Logf("%d MB, %d lines: parsed in %v (%.0f MB/s); peak heap in use %.1f MB",
		size>>20, rep.Lines, elapsed.Round(time.Millisecond), float64(size)/(1<<20)/elapsed.Seconds(), float64(src.peak)/(1<<20))
	if src.peak > limit {
		t.Errorf("heap in use reached %.1f MB, want under %d MB", float64(src.peak)/(1<<20), limit>>20)
	}
	if len(rep.Runs) != 1 {
		t.Fatalf("%d runs", len(rep.Runs))
	}
	r := rep.Runs[0]
	s := r.Runtime.Engines[0]
	if s.Lines < 70_000 || len(s.Points) > maxPoints || r.KV.Tokens != 130960 || !r.KV.Check.Agrees() {
		t.Errorf("series %d lines in %d points, KV %d tokens, check %+v", s.Lines, len(s.Points), r.KV.Tokens, r.KV.Check)
	}
	if len(r.Findings) != 1 || r.Findings[0].Count < 70_000 {
		t.Errorf("findings: %+v", r.Findings)
	}
}

// BenchmarkParse measures the parser's throughput on the synthetic log.
func BenchmarkParse(b *testing.B) {
	const size = 16 << 20
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(context.Background(), "synthetic", &syntheticLog{size: size, sampleAt: 1 << 62}, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
