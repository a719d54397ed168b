package vllmlog

import (
	"bufio"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestParseRecord takes apart the line forms found in pasted vLLM logs.
func TestParseRecord(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, line                      string
		proc, level, stamp, source, msg string
		access                          bool
	}{
		{"API server record", "(APIServer pid=90) INFO 11-28 11:45:51 [api_server.py:1977] vLLM API server version 0.11.2",
			"APIServer", "INFO", "11-28 11:45:51", "api_server.py:1977", "vLLM API server version 0.11.2", false},
		{"engine core, data parallel", "(EngineCore_DP0 pid=289) WARNING 11-28 11:47:32 [mxfp4.py:196] MXFP4 linear layer is not implemented",
			"EngineCore_DP0", "WARNING", "11-28 11:47:32", "mxfp4.py:196", "MXFP4 linear layer is not implemented", false},
		{"no prefix", "INFO 11-28 11:45:51 [scheduler.py:216] Chunked prefill is enabled with max_num_batched_tokens=2048.",
			"", "INFO", "11-28 11:45:51", "scheduler.py:216", "Chunked prefill is enabled with max_num_batched_tokens=2048.", false},
		{"worker with rank", "(VllmWorker rank=1 pid=77) INFO 01-02 03:04:05 [gpu_worker.py:1] hello",
			"VllmWorker", "INFO", "01-02 03:04:05", "gpu_worker.py:1", "hello", false},
		{"uvicorn access", `(APIServer pid=90) INFO:     127.0.0.1:55440 - "GET /v1/models HTTP/1.1" 200 OK`,
			"APIServer", "INFO", "", "", `127.0.0.1:55440 - "GET /v1/models HTTP/1.1" 200 OK`, true},
		{"python logging", "(EngineCore_DP0 pid=289) 2025-11-28 11:58:41,951 - INFO - autotuner.py:256 - flashinfer.jit: [Autotuner]: Autotuning process starts ...",
			"EngineCore_DP0", "INFO", "11-28 11:58:41", "", "autotuner.py:256 - flashinfer.jit: [Autotuner]: Autotuning process starts ...", false},
		{"torch warning", "[W1128 11:47:31.402851082 socket.cpp:209] [c10d] The hostname of the client socket cannot be retrieved. err=-3",
			"", "WARNING", "", "socket.cpp:209", "[c10d] The hostname of the client socket cannot be retrieved. err=-3", false},
		{"bare message", "GPU KV cache size: 48,704 tokens", "", "", "", "", "GPU KV cache size: 48,704 tokens", false},
		{"bad date", "INFO 13-45 99:99:99 [x.py:1] still a record", "", "INFO", "13-45 99:99:99", "x.py:1", "still a record", false},
		{"prefix only", "(EngineCore_DP0 pid=289)", "EngineCore_DP0", "", "", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := parseRecord(clean(tc.line), 2000)
			if r.proc != tc.proc || r.level != tc.level || r.stamp != tc.stamp || r.source != tc.source || r.msg != tc.msg || r.access != tc.access {
				t.Errorf("got proc %q level %q stamp %q source %q msg %q access %v", r.proc, r.level, r.stamp, r.source, r.msg, r.access)
			}
			if (tc.stamp != "" && tc.name != "bad date") == r.at.IsZero() {
				t.Errorf("timestamp %v for stamp %q", r.at, tc.stamp)
			}
		})
	}
}

// TestClean strips what terminals and web pages add around a line.
func TestClean(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"CR", "INFO x\r", "INFO x"},
		{"ANSI colours", "\x1b[32mINFO\x1b[0m 03-24 13:28:31 [a.py:1] m", "INFO 03-24 13:28:31 [a.py:1] m"},
		{"markdown quote and code", "> `(APIServer pid=90) INFO 11-28 11:59:14 [loggers.py:236] Engine 000: x`", "(APIServer pid=90) INFO 11-28 11:59:14 [loggers.py:236] Engine 000: x"},
		{"code fence", "```bash", ""},
		{"pasted escapes", "^[[0;36m(APIServer pid=1)^[[0;0m INFO 05-07 04:56:17 [loggers.py:271] x^M", "(APIServer pid=1) INFO 05-07 04:56:17 [loggers.py:271] x"},
		{"CI prefixes", "  | [2025-03-10T15:07:20Z] ERROR 03-10 08:07:20 [core.py:302] x", "ERROR 03-10 08:07:20 [core.py:302] x"},
		{"docker timestamps", "2026-05-12T08:01:39.331095044Z (APIServer pid=1) INFO 05-12 08:01:39 [loggers.py:271] x", "(APIServer pid=1) INFO 05-12 08:01:39 [loggers.py:271] x"},
		{"journald", "авг 18 14:15:04 llm python3[28059]: (EngineCore pid=28059) INFO 08-18 14:15:04 [vllm.py:1721] x", "(EngineCore pid=28059) INFO 08-18 14:15:04 [vllm.py:1721] x"},
		{"torch rank", "[rank0]: Traceback (most recent call last):", "Traceback (most recent call last):"},
		{"cut escape", "abc\x1b[", "abc"},
	} {
		if got := clean(tc.in); got != tc.want {
			t.Errorf("%s: clean(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

// TestParseStats reads the periodic line in its forms: vLLM 0.15's with
// preemptions, the abridged one a blog post printed, the aggregated one,
// and the V0 one.
func TestParseStats(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	for _, tc := range []struct {
		name, msg, engine string
		want              Point
	}{
		{"full", "Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 544.8 tokens/s, Running: 6 reqs, Waiting: 0 reqs, GPU KV cache usage: 4.3%, Prefix cache hit rate: 81.6%",
			"000", Point{PromptTPS: 0, GenerationTPS: 544.8, Running: 6, Waiting: 0, Preemptions: nan, KVUsagePerc: 4.3, PrefixHitPerc: 81.6}},
		{"preemptions", "Engine 001: Avg prompt throughput: 12.5 tokens/s, Avg generation throughput: 100.0 tokens/s, Running: 3 reqs, Waiting: 2 reqs, Preemptions: 4, GPU KV cache usage: 99.1%, Prefix cache hit rate: 0.0%, External prefix cache hit rate: 5.0%",
			"001", Point{PromptTPS: 12.5, GenerationTPS: 100, Running: 3, Waiting: 2, Preemptions: 4, KVUsagePerc: 99.1, PrefixHitPerc: 0}},
		{"abridged", "Engine 000: Avg generation throughput: 514.2 tokens/s, GPU KV cache usage: 10.4%, Prefix cache hit rate: 81.6%",
			"000", Point{PromptTPS: nan, GenerationTPS: 514.2, Running: nan, Waiting: nan, Preemptions: nan, KVUsagePerc: 10.4, PrefixHitPerc: 81.6}},
		{"aggregated", "2 Engines Aggregated: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.5%, Prefix cache hit rate: 0.0%",
			"aggregated", Point{PromptTPS: 1, GenerationTPS: 2, Running: 1, Waiting: 0, Preemptions: nan, KVUsagePerc: 0.5, PrefixHitPerc: 0}},
		{"V0", "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 30.1 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.4%, CPU KV cache usage: 0.0%.",
			"000", Point{PromptTPS: 0, GenerationTPS: 30.1, Running: 1, Waiting: 0, Preemptions: nan, KVUsagePerc: 0.4, PrefixHitPerc: nan}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			engine, p, ok := parseStats(tc.msg)
			same := func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
			if !ok || engine != tc.engine || !same(p.PromptTPS, tc.want.PromptTPS) || !same(p.GenerationTPS, tc.want.GenerationTPS) ||
				!same(p.Running, tc.want.Running) || !same(p.Waiting, tc.want.Waiting) || !same(p.Preemptions, tc.want.Preemptions) ||
				!same(p.KVUsagePerc, tc.want.KVUsagePerc) || !same(p.PrefixHitPerc, tc.want.PrefixHitPerc) {
				t.Errorf("parseStats = %q, %+v, %v", engine, p, ok)
			}
		})
	}
	for _, bad := range []string{"Engine 000: nothing here", "Engine x: Avg generation throughput: 1 tokens/s", "Avg generation throughput: nan tokens/s"} {
		if _, _, ok := parseStats(bad); ok {
			t.Errorf("parseStats(%q) accepted", bad)
		}
	}
}

// TestSplitLongLines checks that a line longer than maxLineBytes is cut,
// its rest dropped, and the following lines read.
func TestSplitLongLines(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", maxLineBytes+10)
	sc := bufio.NewScanner(strings.NewReader("a\n" + long + "\nb\nc"))
	var sl splitLines
	sc.Buffer(make([]byte, 1024), maxLineBytes+1)
	sc.Split(sl.split)
	var got []int
	for sc.Scan() {
		got = append(got, len(sc.Text()))
	}
	if sc.Err() != nil || len(got) != 4 || got[0] != 1 || got[1] != maxLineBytes || got[2] != 1 || got[3] != 1 || sl.cut != 1 {
		t.Errorf("lines %v, err %v, cut %d", got, sc.Err(), sl.cut)
	}
}

// TestSeriesBounded adds many stats lines to one engine: the series keeps
// at most maxPoints means, the exact first and last lines, and the mean.
func TestSeriesBounded(t *testing.T) {
	t.Parallel()
	s := &Series{Stride: 1}
	const n = 100_003
	sum := 0.0
	for i := range n {
		v := float64(i % 1000)
		sum += v
		s.add(Point{GenerationTPS: v, OffsetS: float64(i), Running: 1, Waiting: 0, Preemptions: 1, KVUsagePerc: 50, PrefixHitPerc: math.NaN(), PromptTPS: 0})
	}
	if len(s.Points) > maxPoints || len(s.Points) < maxPoints/2 || s.Lines != n {
		t.Fatalf("%d points, %d lines", len(s.Points), s.Lines)
	}
	if s.First.GenerationTPS != 0 || s.Last.GenerationTPS != float64((n-1)%1000) || s.Preemptions != n {
		t.Errorf("first %v, last %v, preemptions %v", s.First.GenerationTPS, s.Last.GenerationTPS, s.Preemptions)
	}
	kept, total := 0.0, 0
	for _, p := range s.Points {
		kept += p.GenerationTPS * float64(s.Stride)
		total += s.Stride
	}
	if mean := kept / float64(total); math.Abs(mean-sum/n) > 5 {
		t.Errorf("mean of the kept points %.1f, of the lines %.1f", mean, sum/n)
	}
}

// TestSplitRecords cuts the lines of pastes that lost their line breaks
// (vllm-project/vllm#2595, corpus log 007) and of records printed after a
// progress bar, and leaves single records whole.
func TestSplitRecords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, line string
		want       []string
	}{
		{"joined records, first prefix lost its parenthesis",
			"_AsyncLLMEngine pid=1974) INFO 01-25 11:26:53 llm_engine.py:706] a (_AsyncLLMEngine pid=1974) INFO 01-25 11:26:58 llm_engine.py:706] b",
			[]string{"_AsyncLLMEngine pid=1974) INFO 01-25 11:26:53 llm_engine.py:706] a", "(_AsyncLLMEngine pid=1974) INFO 01-25 11:26:58 llm_engine.py:706] b"}},
		{"after a progress bar",
			"Processed prompts:   6%|█▋ | 29/512 [00:08<02:31,  3.19it/s](EngineCore_DP0 pid=10311) ERROR 10-25 11:17:27 [core.py:720] EngineCore encountered a fatal error.",
			[]string{"Processed prompts:   6%|█▋ | 29/512 [00:08<02:31,  3.19it/s]", "(EngineCore_DP0 pid=10311) ERROR 10-25 11:17:27 [core.py:720] EngineCore encountered a fatal error."}},
		{"one record", "(APIServer pid=90) INFO 11-28 11:45:51 [api_server.py:1977] vLLM API server version 0.11.2", nil},
		{"a level word inside a message", "INFO 01-02 03:04:05 [a.py:1] the INFO level is on", nil},
	} {
		if got := splitRecords(tc.line); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
