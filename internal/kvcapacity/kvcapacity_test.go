package kvcapacity

import (
	"fmt"
	"math"
	"testing"
)

// The models of the project's seed logs, as their config.json describe
// them (heads per layer with tensor parallelism 1).
var (
	gptOSS120b = Model{DtypeBytes: 2, Attention: []Attention{
		{Layers: 18, KVHeads: 8, HeadDim: 64}, {Layers: 18, SlidingWindow: 128, KVHeads: 8, HeadDim: 64}}}
	gptOSS20b = Model{DtypeBytes: 2, Attention: []Attention{
		{Layers: 12, KVHeads: 8, HeadDim: 64}, {Layers: 12, SlidingWindow: 128, KVHeads: 8, HeadDim: 64}}}
	qwen32b   = Model{DtypeBytes: 2, Attention: []Attention{{Layers: 64, KVHeads: 8, HeadDim: 128}}}
	gemma431b = Model{DtypeBytes: 2, Attention: []Attention{
		{Layers: 50, SlidingWindow: 1024, KVHeads: 16, HeadDim: 256}, {Layers: 10, KVHeads: 4, HeadDim: 512}}}
	gemma426b = Model{DtypeBytes: 2, Attention: []Attention{
		{Layers: 25, SlidingWindow: 1024, KVHeads: 8, HeadDim: 256}, {Layers: 5, KVHeads: 2, HeadDim: 512}}}
)

// TestSeedFigures recomputes the three KV-capacity lines of every server
// start in the seed logs: the memory vLLM printed (rounded to 0.01 GiB)
// must hold a pool whose printed token count is the one logged, and the
// pool that token count implies must give the logged concurrency.
func TestSeedFigures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		model       Model
		maxLen      int
		budget      int
		gib         float64
		tokens      int
		concurrency string
		groups      int
	}{
		{"gpt-oss-120b", gptOSS120b, 98304, 8192, 8.99, 130960, "2.46", 2},
		{"gpt-oss-20b", gptOSS20b, 131072, 2048, 36.56, 798624, "11.99", 2},
		{"DeepSeek-R1-Distill-Qwen-32B", qwen32b, 8192, 8192, 11.89, 48704, "5.95", 1},
		{"gemma-4-31B", gemma431b, 131072, 2048, 15.18, 16576, "1.23", 6},
		{"gemma-4-26B-A4B eager", gemma426b, 131072, 2048, 21.5, 93936, "6.96", 6},
		{"gemma-4-26B-A4B fp8 256K", gemma426b, 262144, 2048, 24.45, 106800, "4.37", 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, err := New(tc.model, Settings{BlockSize: 16, MaxModelLen: tc.maxLen, MaxNumBatchedTokens: tc.budget})
			if err != nil {
				t.Fatal(err)
			}
			if len(g.Groups) != tc.groups {
				t.Errorf("groups = %d, want %d", len(g.Groups), tc.groups)
			}
			const gib = 1 << 30
			lo := g.Tokens(g.Blocks(int64((tc.gib - 0.005) * gib)))
			hi := g.Tokens(g.Blocks(int64((tc.gib + 0.005) * gib)))
			if tc.tokens < lo || tc.tokens > hi {
				t.Errorf("%.2f GiB gives %d to %d tokens; the log printed %d", tc.gib, lo, hi, tc.tokens)
			}
			blo, bhi := g.BlocksFromTokens(tc.tokens)
			if g.Tokens(blo) != tc.tokens || g.Tokens(bhi) != tc.tokens || g.Tokens(bhi+1) == tc.tokens {
				t.Errorf("BlocksFromTokens(%d) = %d..%d, not the exact inverse", tc.tokens, blo, bhi)
			}
			if got := fmt.Sprintf("%.2f", g.Concurrency(blo)); got != tc.concurrency {
				t.Errorf("concurrency = %s, want %s", got, tc.concurrency)
			}
		})
	}
}

// TestGemmaPages pins the page unification: Gemma 4's full-attention
// layers (4 KV heads × 512) have half the page of its sliding layers (16
// × 256), so vLLM gives them 32-token blocks.
func TestGemmaPages(t *testing.T) {
	t.Parallel()
	g, err := New(gemma431b, Settings{BlockSize: 16, MaxModelLen: 131072, MaxNumBatchedTokens: 2048})
	if err != nil {
		t.Fatal(err)
	}
	if g.PageBytes != 262144 || g.GroupSize != 10 || g.MinBlockSize != 16 {
		t.Fatalf("page %d, group size %d, min block %d", g.PageBytes, g.GroupSize, g.MinBlockSize)
	}
	full := g.Groups[len(g.Groups)-1]
	if full.SlidingWindow != 0 || full.BlockSize != 32 || full.MaxBlocks != 4096 {
		t.Errorf("full-attention group = %+v", full)
	}
	if w := g.Groups[0]; w.MaxBlocks != (1023+2048+15)/16+1 {
		t.Errorf("sliding group = %+v", w)
	}
}

func TestGrouping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		full, swa  int
		groupSize  int
		wantGroups int
	}{
		{"equal", 18, 18, 18, 2},
		{"within 25 %", 10, 12, 12, 2},
		{"5:1", 10, 50, 10, 6},
		{"uneven", 3, 10, 3, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := Model{DtypeBytes: 2, Attention: []Attention{
				{Layers: tc.full, KVHeads: 8, HeadDim: 64}, {Layers: tc.swa, SlidingWindow: 128, KVHeads: 8, HeadDim: 64}}}
			g, err := New(m, Settings{BlockSize: 16, MaxModelLen: 4096, MaxNumBatchedTokens: 2048})
			if err != nil {
				t.Fatal(err)
			}
			layers := 0
			for _, grp := range g.Groups {
				layers += grp.Layers
				if grp.Layers > g.GroupSize {
					t.Errorf("group %+v larger than the group size %d", grp, g.GroupSize)
				}
			}
			if g.GroupSize != tc.groupSize || len(g.Groups) != tc.wantGroups || layers != tc.full+tc.swa {
				t.Errorf("group size %d, %d groups, %d layers", g.GroupSize, len(g.Groups), layers)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	ok := Settings{BlockSize: 16, MaxModelLen: 4096, MaxNumBatchedTokens: 2048}
	for _, tc := range []struct {
		name string
		m    Model
		s    Settings
	}{
		{"no layers", Model{DtypeBytes: 2}, ok},
		{"zero block", qwen32b, Settings{MaxModelLen: 10, MaxNumBatchedTokens: 10}},
		{"no dtype", Model{Attention: qwen32b.Attention}, ok},
		{"zero heads", Model{DtypeBytes: 2, Attention: []Attention{{Layers: 2, HeadDim: 64}}}, ok},
		{"pages not multiples", Model{DtypeBytes: 2, Attention: []Attention{{Layers: 2, KVHeads: 3, HeadDim: 64}, {Layers: 2, KVHeads: 2, HeadDim: 64, SlidingWindow: 8}}}, ok},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := New(tc.m, tc.s); err == nil {
				t.Error("no error")
			}
		})
	}
}

// TestContextInverse checks that the context estimate inverts the blocks
// decoding streams hold, below and above a sliding window, and that
// MaxContext and Streams are where the pool runs out.
func TestContextInverse(t *testing.T) {
	t.Parallel()
	g, err := New(gptOSS120b, Settings{BlockSize: 16, MaxModelLen: 98304, MaxNumBatchedTokens: 8192})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		ctx, perBlock float64 // context per stream, blocks it holds
	}{
		{"long", 20000, 20000.0/16 + 9}, // full blocks plus a full 128-token window (9 blocks)
		{"within the window", 64, 64.0 / 16 * 2},
	} {
		if got := g.ContextFromBlocks(6*tc.perBlock, 6); math.Abs(got-6*tc.ctx) > 0.01 {
			t.Errorf("%s: ContextFromBlocks = %.2f, want %.0f", tc.name, got, 6*tc.ctx)
		}
	}
	limit := g.MaxContext(16370, 6)
	if need := 6 * (limit/16 + 9); math.Abs(need-16369) > 0.01 {
		t.Errorf("MaxContext = %.1f holds %.1f blocks, not the 16,369 usable", limit, need)
	}
	if n := g.Streams(16370, limit); n != 6 {
		t.Errorf("Streams at MaxContext = %d, want 6", n)
	}
	uniform, _ := New(qwen32b, Settings{BlockSize: 16, MaxModelLen: 8192, MaxNumBatchedTokens: 8192})
	if got := uniform.ContextFromBlocks(100, 4); math.Abs(got-1600) > 0.01 {
		t.Errorf("uniform ContextFromBlocks = %v, want 1600", got)
	}
	window, _ := New(Model{DtypeBytes: 2, Attention: []Attention{{Layers: 4, SlidingWindow: 64, KVHeads: 2, HeadDim: 64}}}, Settings{BlockSize: 16, MaxModelLen: 4096, MaxNumBatchedTokens: 256})
	if !math.IsNaN(window.ContextFromBlocks(50, 2)) || !math.IsNaN(window.MaxContext(100, 2)) {
		t.Error("a window-only model's context cannot be read from its blocks")
	}
}

func TestThousands(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 130960: "130,960", -1234567: "-1,234,567"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
