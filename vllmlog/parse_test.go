package vllmlog

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/internal/golden"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// seedLogs are the test logs, assembled from the lines of the project's
// seed logs (shared/seeds): gpt-oss-120b on vLLM 0.11.2 (seed 000),
// gpt-oss-20b on 0.19.0 and Gemma 4 31B and 26B-A4B (seed 002, the last
// with two server starts), DeepSeek-R1-Distill-Qwen-32B on 0.18.0 as
// pasted into a page with CRLF line ends and colours (seed 003), and a
// file of garbled lines.
var seedLogs = []string{"gpt-oss-120b", "gpt-oss-20b", "deepseek-r1-32b", "gemma-4-31b", "gemma-4-26b", "garbled"}

func parseFile(t testing.TB, name string, opts Options) *Report {
	t.Helper()
	rep, err := ParseFiles(context.Background(), []string{filepath.Join("testdata", name+".log")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestGolden pins the text report of every test log, and the Markdown and
// JSON reports of the gpt-oss-120b one. Run with -update to accept changes.
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, name := range seedLogs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rep := parseFile(t, name, Options{})
			formats := []string{"text"}
			if name == "gpt-oss-120b" {
				formats = append(formats, "markdown", "json")
			}
			for _, f := range formats {
				var b bytes.Buffer
				if err := Write(&b, rep, f); err != nil {
					t.Fatal(err)
				}
				golden.Check(t, filepath.Join("testdata", golden.Name(t)+"."+f+".golden"), b.Bytes(), *update)
			}
		})
	}
}

// TestSeedFigures checks, for the server start of every seed model, that
// the configuration and the KV-cache figures are extracted exactly and
// that the recomputation from the model's layers agrees with them.
func TestSeedFigures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		log, version, arch string
		maxLen, budget     int
		budgetSource       string
		gib                float64
		tokens             int
		concurrency        float64
		checkModel         string
		groups             int
	}{
		{"gpt-oss-120b", "0.11.2", "GptOssForCausalLM", 98304, 8192, "log", 8.99, 130960, 2.46, "gpt-oss-120b", 2},
		{"gpt-oss-20b", "0.19.0", "GptOssForCausalLM", 131072, 2048, "not printed; 2,048 reproduces", 36.56, 798624, 11.99, "gpt-oss-20b", 2},
		{"deepseek-r1-32b", "0.18.0", "Qwen2ForCausalLM", 8192, 8192, "log", 11.89, 48704, 5.95, "DeepSeek-R1-Distill-Qwen-32B", 1},
		{"gemma-4-31b", "0.19.0", "Gemma4ForConditionalGeneration", 131072, 2048, "not printed; 2,048 reproduces", 15.18, 16576, 1.23, "gemma-4-31B", 6},
	} {
		t.Run(tc.log, func(t *testing.T) {
			t.Parallel()
			rep := parseFile(t, tc.log, Options{})
			if len(rep.Runs) != 1 {
				t.Fatalf("%d runs, want 1", len(rep.Runs))
			}
			r := rep.Runs[0]
			c, kv := &r.Config, &r.KV
			if c.Version != tc.version || c.Architecture != tc.arch || c.MaxModelLen != tc.maxLen {
				t.Errorf("version %q, architecture %q, max model len %d", c.Version, c.Architecture, c.MaxModelLen)
			}
			if c.MaxNumBatchedTokens != tc.budget || !strings.HasPrefix(c.BatchedTokensSource, tc.budgetSource) {
				t.Errorf("max_num_batched_tokens %d (%s), want %d (%s…)", c.MaxNumBatchedTokens, c.BatchedTokensSource, tc.budget, tc.budgetSource)
			}
			if kv.AvailableGiB != tc.gib || kv.Tokens != tc.tokens || kv.Concurrency != tc.concurrency || kv.ConcurrencyLen != tc.maxLen {
				t.Errorf("KV: %v GiB, %d tokens, %vx at %d", kv.AvailableGiB, kv.Tokens, kv.Concurrency, kv.ConcurrencyLen)
			}
			ck := kv.Check
			if !ck.Agrees() || ck.Model != tc.checkModel || len(ck.Groups) != tc.groups {
				t.Fatalf("check: %+v", ck)
			}
			if tc.tokens < ck.TokensMin || tc.tokens > ck.TokensMax || ck.Concurrency != tc.concurrency {
				t.Errorf("recomputed %d–%d tokens, %vx", ck.TokensMin, ck.TokensMax, ck.Concurrency)
			}
		})
	}
}

// TestGptOSS120bConfig checks the settings people ask about in the
// gpt-oss-120b log, and that the twice-printed budget is explained.
func TestGptOSS120bConfig(t *testing.T) {
	t.Parallel()
	r := parseFile(t, "gpt-oss-120b", Options{}).Runs[0]
	c := &r.Config
	checks := []struct {
		name      string
		got, want any
	}{
		{"model", c.Model, "/kaggle/input/gpt-oss-120b/transformers/default/1"},
		{"served name", c.ServedModelName, "vllm-model"},
		{"budgets printed", len(c.BatchedTokensPrinted), 2},
		{"max_num_seqs", c.MaxNumSeqs, 6},
		{"dtype", c.Dtype, "bfloat16"},
		{"checkpoint dtype", c.CheckpointDtype, "float32"},
		{"quantization", c.Quantization, "mxfp4"},
		{"kv cache dtype", c.KVCacheDtype, "auto"},
		{"attention backend", c.AttentionBackend, "TRITON_ATTN"},
		{"MoE backend", c.MoEBackend, "MARLIN"},
		{"tensor parallel", c.TensorParallel, 1},
		{"prefix caching", *c.PrefixCaching, true},
		{"chunked prefill", *c.ChunkedPrefill, true},
		{"enforce eager", *c.EnforceEager, false},
		{"compilation", c.CompilationMode, "VLLM_COMPILE"},
		{"cudagraph mode", c.CUDAGraphMode, "FULL_AND_PIECEWISE"},
		{"capture sizes", len(c.CaptureSizes), 83},
		{"max capture size", c.CaptureSizeOverride, 1024},
		{"gpu memory utilization", c.GPUMemoryUtilization, 0.96},
		{"routes", len(c.Routes), 7},
		{"model GiB", r.Startup.ModelGiB, 65.9651},
		{"weights s", r.Startup.WeightsS, 545.24},
		{"compile s", r.Startup.CompileS, 63.97},
		{"compile cache hit", *r.Startup.CompileCacheHit, false},
		{"capture s", r.Startup.CaptureS, 9.0},
		{"capture GiB", r.Startup.CaptureGiB, 0.64},
		{"engine init s", r.Startup.EngineInitS, 78.26},
		{"wall s", r.Startup.WallS, 782.0},
		{"shards", r.Startup.Shards, 15},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s = %v, want %v", ck.name, ck.got, ck.want)
		}
	}
	twice := false
	for _, n := range c.Notes {
		twice = twice || strings.Contains(n, "printed 2 times with different values (2,048, then 8,192)")
	}
	if !twice {
		t.Errorf("no note explains the two budgets: %q", c.Notes)
	}
	verdicts := map[string]string{}
	for _, f := range r.Findings {
		verdicts[f.Message[:20]] = f.Verdict
	}
	for prefix, want := range map[string]string{"Your GPU does not ha": VerdictPerformance, "Error retrieving saf": VerdictHarmless, "MXFP4 linear layer i": VerdictExpected} {
		if verdicts[prefix] != want {
			t.Errorf("finding %q… verdict %q, want %q", prefix, verdicts[prefix], want)
		}
	}
}

// TestDecayGptOSS120b reproduces the seed's 544.8 → 348.6 tok/s fall from
// the log alone: seven stats lines, six streams throughout, KV usage 4.3 %
// → 59.3 %, and a decode law that fits them.
func TestDecayGptOSS120b(t *testing.T) {
	t.Parallel()
	r := parseFile(t, "gpt-oss-120b", Options{}).Runs[0]
	if n := len(r.Runtime.Engines); n != 1 || r.Runtime.Engines[0].Lines != 7 || len(r.Runtime.Engines[0].Points) != 7 {
		t.Fatalf("series: %+v", r.Runtime.Engines)
	}
	d := r.Runtime.Decay
	if d == nil {
		t.Fatal("no decay section")
	}
	if d.Points != 7 || d.StartTPS != 544.8 || d.EndTPS != 348.6 || d.StartKVPerc != 4.3 || d.EndKVPerc != 59.3 || d.Streams != 6 {
		t.Errorf("decay: %d points, %v → %v tok/s, KV %v → %v %%, %v streams", d.Points, d.StartTPS, d.EndTPS, d.StartKVPerc, d.EndKVPerc, d.Streams)
	}
	if got := math.Round(d.Change * 100); got != -36 {
		t.Errorf("change = %v %%, want −36 %%", got)
	}
	if signedPct(d.Change) != "−36 %" || d.Seconds != 340 {
		t.Errorf("change printed %q over %v s", signedPct(d.Change), d.Seconds)
	}
	f := d.Fit
	if f == nil || !f.Holds || f.R2 < 0.99 || f.InterceptMS < 9 || f.InterceptMS > 12 || f.SlopeNSPerToken < 30 || f.SlopeNSPerToken > 60 {
		t.Fatalf("decode law: %+v", f)
	}
	// The context grew ~15-fold: from ~10,000 to ~155,000 tokens.
	if d.StartContext < 9000 || d.StartContext > 12000 || d.EndContext < 145000 || d.EndContext > 165000 {
		t.Errorf("context %v → %v", d.StartContext, d.EndContext)
	}
	text := strings.Join(d.Explanation, " ")
	for _, want := range []string{"fell from 544.8 to 348.6 tokens/s (−36 %)", "6 requests were running", "4.3 % to 59.3 %", "reads the whole KV cache"} {
		if !strings.Contains(text, want) {
			t.Errorf("explanation lacks %q:\n%s", want, text)
		}
	}
}

// TestRunsSplit reads a file holding two server starts of Gemma 4
// 26B-A4B: an eager one and an fp8 one with a 256K context.
func TestRunsSplit(t *testing.T) {
	t.Parallel()
	rep := parseFile(t, "gemma-4-26b", Options{})
	if len(rep.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(rep.Runs))
	}
	a, b := rep.Runs[0], rep.Runs[1]
	if !*a.Config.EnforceEager || a.KV.Tokens != 93936 || a.KV.Concurrency != 6.96 || !a.KV.Check.Agrees() {
		t.Errorf("first run: eager %v, %d tokens, %vx, check %+v", *a.Config.EnforceEager, a.KV.Tokens, a.KV.Concurrency, a.KV.Check)
	}
	if b.Config.Quantization != "fp8" || b.Config.MaxModelLen != 262144 || b.KV.Tokens != 106800 || b.KV.Concurrency != 4.37 || !b.KV.Check.Agrees() {
		t.Errorf("second run: %q, %d, %d tokens, %vx, check %+v", b.Config.Quantization, b.Config.MaxModelLen, b.KV.Tokens, b.KV.Concurrency, b.KV.Check)
	}
	if h := b.Startup.CompileCacheHit; h == nil || !*h {
		t.Error("the second start loaded torch.compile's graph from the cache")
	}
	if a.LastLine+1 != b.FirstLine {
		t.Errorf("runs end at %d and start at %d", a.LastLine, b.FirstLine)
	}
}

// TestGarbled reads lines that look like vLLM's but are cut, corrupt or
// nonsense: nothing fails and nothing is invented.
func TestGarbled(t *testing.T) {
	t.Parallel()
	rep := parseFile(t, "garbled", Options{})
	for _, r := range rep.Runs {
		if r.KV.Tokens != 0 || r.KV.Concurrency != 0 || r.KV.Check != nil || len(r.Runtime.Engines) != 0 || r.Startup.ModelLoadS != 0 {
			t.Errorf("figures from garbled lines: %+v", r)
		}
	}
	for _, f := range formats {
		if err := Write(&bytes.Buffer{}, rep, f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestReportAgain: Report may be called again (Follow does, as lines
// arrive); each call derives the same sections, never doubled.
func TestReportAgain(t *testing.T) {
	t.Parallel()
	p, err := NewParser(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ReadFrom(context.Background(), "testdata/gemma-4-26b.log", strings.NewReader(mustRead(t, "testdata/gemma-4-26b.log"))); err != nil {
		t.Fatal(err)
	}
	var first, second bytes.Buffer
	if err := Write(&first, p.Report(), "json"); err != nil {
		t.Fatal(err)
	}
	if err := Write(&second, p.Report(), "json"); err != nil {
		t.Fatal(err)
	}
	if first.String() != second.String() {
		t.Errorf("the second report differs:\n%s", golden.Diff(first.String(), second.String()))
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestDecayRise: a decode stretch whose throughput rose is called a rise,
// with no decode law fitted to it, and its first interval, partial (a
// request's prefill in it), is left out.
func TestDecayRise(t *testing.T) {
	t.Parallel()
	var lines []string
	for i, g := range []string{"93.1", "150.0", "170.0", "201.5"} {
		prompt := "0.0"
		if i == 0 {
			prompt = "412.0" // the request arrived in this interval
		}
		lines = append(lines, fmt.Sprintf("(APIServer pid=1) INFO 01-01 00:00:%02d [loggers.py:1] Engine 000: Avg prompt throughput: %s tokens/s, Avg generation throughput: %s tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: %d.0%%, Prefix cache hit rate: 0.0%%", 10*i, prompt, g, i+1))
	}
	rep, err := Parse(context.Background(), "rise", strings.NewReader(strings.Join(lines, "\n")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := rep.Runs[0].Runtime.Decay
	if d == nil || d.Points != 3 || d.StartTPS != 150 || d.EndTPS != 201.5 || d.Fit != nil {
		t.Fatalf("decay %+v", d)
	}
	text := strings.Join(d.Explanation, " ")
	if !strings.Contains(text, "rose from 150.0 to 201.5") || strings.Contains(text, "fall as") || strings.Contains(text, "fell") {
		t.Errorf("explanation: %s", text)
	}
	if ids := rep.Runs[0].Diagnoses; len(ids) != 1 || ids[0].ID != "decode-rise" {
		t.Errorf("diagnoses %+v", ids)
	}
}
