package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestCapacityLines checks the start-up KV-capacity lines against the
// seeds: gpt-oss-120b (seed 000/001, vLLM 0.11.2), gpt-oss-20b (seed 002,
// 0.19.0) and DeepSeek-R1-32B (seed 003, 0.18.0).
func TestCapacityLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		preset string
		blocks int
		lines  []string
	}{
		{"gpt-oss-120b-h100", 16370, []string{
			"Available KV cache memory: 8.99 GiB",
			"GPU KV cache size: 130,960 tokens",
			"Maximum concurrency for 98,304 tokens per request: 2.46x"}},
		{"gpt-oss-20b-a100", 99828, []string{
			"Available KV cache memory: 36.56 GiB",
			"GPU KV cache size: 798,624 tokens",
			"Maximum concurrency for 131,072 tokens per request: 11.99x"}},
		{"deepseek-r1-32b", 3044, []string{
			"Available KV cache memory: 11.89 GiB",
			"GPU KV cache size: 48,704 tokens",
			"Maximum concurrency for 8,192 tokens per request: 5.95x"}},
		{"tiny", 193, []string{
			"Available KV cache memory: 0.01 GiB",
			"GPU KV cache size: 3,088 tokens",
			"Maximum concurrency for 2,048 tokens per request: 1.51x"}},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			t.Parallel()
			c, err := Preset(tc.preset)
			if err != nil {
				t.Fatal(err)
			}
			k, err := c.Capacity()
			if err != nil {
				t.Fatal(err)
			}
			if k.NumBlocks != tc.blocks {
				t.Errorf("NumBlocks = %d, want %d", k.NumBlocks, tc.blocks)
			}
			got := k.StartupLines(c)
			for i := range tc.lines {
				if got[i] != tc.lines[i] {
					t.Errorf("line %d = %q, want %q", i, got[i], tc.lines[i])
				}
			}
		})
	}
}

// TestCapacityHybridFormula pins the per-group worst case of the gpt-oss
// geometry (full attention ⌈L/16⌉ plus sliding ⌈(W−1+budget)/16⌉+1).
func TestCapacityHybridFormula(t *testing.T) {
	t.Parallel()
	c, _ := Preset("gpt-oss-120b-h100")
	k, _ := c.Capacity()
	if len(k.Groups) != 2 || k.GroupSize != 18 || k.PageBytes != 32768 {
		t.Fatalf("geometry: %+v", k)
	}
	if want := 98304/16 + (127+8192+15)/16 + 1; k.BlocksPerRequest != want {
		t.Errorf("BlocksPerRequest = %d, want %d", k.BlocksPerRequest, want)
	}
}

// engineVariants are configurations the invariant test runs: the tiny
// preset and variations that exercise other scheduler and cache paths.
func engineVariants(t *testing.T) map[string]Config {
	t.Helper()
	base, err := Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	set := func(kv ...string) Config {
		c := base
		for _, s := range kv {
			k, v, _ := strings.Cut(s, "=")
			if err := c.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	return map[string]Config{
		"tiny":               base,
		"small budget":       set("max_num_batched_tokens=64"),
		"long prefill cap":   set("long_prefill_token_threshold=48"),
		"no prefix caching":  set("enable_prefix_caching=false"),
		"no chunked prefill": set("max_num_batched_tokens=2048", "enable_chunked_prefill=false"),
		"hybrid sliding":     set("num_layers=4", "sliding_window=64", "sliding_window_layers=2", "kv_cache_memory_bytes=8000000"),
		"one seq":            set("max_num_seqs=1"),
		"speculative":        set("num_speculative_tokens=3", "draft_acceptance=0.8", "draft_acceptance_decay=0.9", "per_draft_token_us=20"),
		"speculative small":  set("num_speculative_tokens=4", "draft_acceptance=1", "max_num_batched_tokens=64"),
	}
}

// TestEngineInvariants runs a random mixed workload (shared prefixes,
// varied lengths, more requests than max_num_seqs and more context than
// the cache) and checks after every step that the token budget holds,
// running ≤ max_num_seqs, blocks are conserved, and in the end that every
// request (preempted ones included) finished with the right length.
func TestEngineInvariants(t *testing.T) {
	t.Parallel()
	for name, cfg := range engineVariants(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newVSim(t, cfg)
			rng := rand.New(rand.NewPCG(42, uint64(len(name))))
			var reqs []*Request
			for i := range 80 {
				prompt := 1 + rng.IntN(600)
				shared := 0
				if rng.IntN(2) == 0 {
					shared = rng.IntN(prompt + 1)
				}
				maxTok := 1 + rng.IntN(min(400, cfg.MaxModelLen-prompt))
				r := &Request{ID: fmt.Sprint(i), Prompt: ids(prompt, shared, uint32(i)), MaxTokens: maxTok,
					IgnoreEOS: rng.IntN(3) > 0, MinTokens: rng.IntN(maxTok + 1)}
				reqs = append(reqs, r)
				s.at(time.Duration(rng.IntN(3000))*time.Millisecond, r)
			}
			s.run(time.Hour, 1_000_000)
			if !s.e.Idle() {
				t.Fatalf("engine not idle after run: %d running, %d waiting", s.e.NumRunning(), s.e.NumWaiting())
			}
			preempted := 0
			for _, r := range reqs {
				if r.Preemptions() > 0 {
					preempted++
				}
				switch {
				case !r.done:
					t.Errorf("request %s never finished", r.ID)
				case r.reason == FinishLength && r.OutputTokens() != r.MaxTokens:
					t.Errorf("request %s: length stop after %d of %d tokens", r.ID, r.OutputTokens(), r.MaxTokens)
				case r.reason == FinishStop && (r.IgnoreEOS || r.OutputTokens() < r.MinTokens):
					t.Errorf("request %s: EOS stop after %d tokens (ignore_eos %v, min %d)", r.ID, r.OutputTokens(), r.IgnoreEOS, r.MinTokens)
				case r.reason == FinishAbort:
					t.Errorf("request %s aborted", r.ID)
				}
			}
			st := s.e.Stats()
			if st.KVUsage != 0 || st.Running != 0 {
				t.Errorf("idle engine holds blocks: usage %v", st.KVUsage)
			}
			if int(st.Success[FinishStop]+st.Success[FinishLength]) != len(reqs) {
				t.Errorf("request_success %v, want %d in all", st.Success, len(reqs))
			}
			if name == "tiny" && preempted == 0 {
				t.Errorf("no request was preempted; the workload should overflow the cache")
			}
			t.Logf("%s: %d steps, %d preemptions (%d requests), prefix hits %d/%d tokens",
				name, s.steps, st.Preemptions, preempted, st.PrefixHits, st.PrefixQueries)
		})
	}
}

// TestPrefixHitPrefillsLess sends the same long prefix twice: the second
// request reuses the first's full blocks and prefills only the rest.
func TestPrefixHitPrefillsLess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		sets           []string
		prompt, shared int
		wantHit        int
	}{
		{"shared prefix", nil, 520, 500, 496},
		{"identical prompt recomputes its last block", nil, 32, 32, 16},
		{"hybrid sliding window", []string{"sliding_window=64", "sliding_window_layers=2", "kv_cache_memory_bytes=8000000"}, 520, 500, 496},
		{"caching off", []string{"enable_prefix_caching=false"}, 520, 500, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, _ := Preset("tiny")
			for _, kv := range tc.sets {
				k, v, _ := strings.Cut(kv, "=")
				if err := cfg.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			s := newVSim(t, cfg)
			a := &Request{ID: "a", Prompt: ids(tc.prompt, tc.shared, 1), MaxTokens: 4, IgnoreEOS: true}
			b := &Request{ID: "b", Prompt: ids(tc.prompt, tc.shared, 2), MaxTokens: 4, IgnoreEOS: true}
			prefill := map[*Request]int{}
			s.onStep = func(bt *Batch) {
				for i, r := range bt.Reqs {
					if len(r.outputs) == 0 {
						prefill[r] += bt.Tokens[i]
					}
				}
			}
			s.at(0, a)
			s.at(time.Second, b)
			s.run(time.Minute, 10_000)
			if a.CachedTokens() != 0 || b.CachedTokens() != tc.wantHit {
				t.Errorf("cached tokens a=%d b=%d, want 0 and %d", a.CachedTokens(), b.CachedTokens(), tc.wantHit)
			}
			if prefill[a] != tc.prompt || prefill[b] != tc.prompt-tc.wantHit {
				t.Errorf("prefilled a=%d b=%d, want %d and %d", prefill[a], prefill[b], tc.prompt, tc.prompt-tc.wantHit)
			}
			st := s.e.Stats()
			if st.PrefixQueries != int64(2*tc.prompt) || st.PrefixHits != int64(tc.wantHit) {
				t.Errorf("prefix stats %d/%d, want %d/%d", st.PrefixHits, st.PrefixQueries, tc.wantHit, 2*tc.prompt)
			}
		})
	}
}

// TestSlidingWindowHoldsWindow checks that a decoding request of a hybrid
// model holds only its window's blocks in the sliding group.
func TestSlidingWindowHoldsWindow(t *testing.T) {
	t.Parallel()
	cfg, _ := Preset("tiny")
	for _, kv := range []string{"sliding_window=64", "sliding_window_layers=2", "kv_cache_memory_bytes=8000000", "max_num_batched_tokens=256"} {
		k, v, _ := strings.Cut(kv, "=")
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	s := newVSim(t, cfg)
	r := &Request{ID: "r", Prompt: ids(700, 0, 9), MaxTokens: 600, IgnoreEOS: true}
	s.at(0, r)
	limit := ceilDiv(64-1+256, 16) + 1
	s.onOut = func(o Output) bool {
		if o.FinishReason != "" {
			return true
		}
		held := 0
		for _, b := range r.kv.tables[1] {
			if b != nullBlock {
				held++
			}
		}
		if held > limit {
			t.Fatalf("sliding group holds %d blocks at %d tokens, worst case %d", held, r.numTokens(), limit)
		}
		full := len(r.kv.tables[0])
		if full != ceilDiv(r.computed, 16) && full != ceilDiv(r.computed+1, 16) {
			t.Fatalf("full group holds %d blocks for %d computed tokens", full, r.computed)
		}
		return true
	}
	s.run(time.Hour, 100_000)
	if r.reason != FinishLength {
		t.Fatalf("request ended %q", r.reason)
	}
}

// TestDeterministic checks that a seed makes a run repeatable and a
// different seed changes the step times.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	run := func(seed uint64) (time.Duration, []uint32) {
		cfg, _ := Preset("tiny")
		cfg.Seed = seed
		s := newVSim(t, cfg)
		var rs []*Request
		for i := range 10 {
			r := &Request{ID: fmt.Sprint(i), Prompt: ids(100+10*i, 50, uint32(i)), MaxTokens: 50}
			rs = append(rs, r)
			s.at(time.Duration(i)*10*time.Millisecond, r)
		}
		s.run(time.Hour, 100_000)
		var toks []uint32
		for _, r := range rs {
			toks = append(toks, r.outputs...)
		}
		return s.now(), toks
	}
	d1, t1 := run(1)
	d2, t2 := run(1)
	d3, _ := run(2)
	if d1 != d2 || fmt.Sprint(t1) != fmt.Sprint(t2) {
		t.Errorf("same seed, different runs: %v vs %v", d1, d2)
	}
	if d1 == d3 {
		t.Errorf("seeds 1 and 2 gave the same duration %v", d1)
	}
}

// TestAbortFreesBlocks aborts running and waiting requests mid-run.
func TestAbortFreesBlocks(t *testing.T) {
	t.Parallel()
	cfg, _ := Preset("tiny")
	s := newVSim(t, cfg)
	var rs []*Request
	for i := range 12 {
		r := &Request{ID: fmt.Sprint(i), Prompt: ids(200, 0, uint32(i)), MaxTokens: 500, IgnoreEOS: true}
		rs = append(rs, r)
		s.at(0, r)
	}
	n := 0
	s.onOut = func(o Output) bool {
		n++
		if n == 100 {
			for _, r := range rs[:10] {
				s.e.Abort(r)
			}
			if err := s.e.checkInvariants(nil); err != nil {
				t.Fatal(err)
			}
		}
		return true
	}
	s.run(time.Hour, 100_000)
	st := s.e.Stats()
	if st.Success[FinishAbort] != 10 || st.Success[FinishLength] != 2 || st.KVUsage != 0 {
		t.Errorf("after aborts: %v, usage %v", st.Success, st.KVUsage)
	}
}

// TestTinyShowsPhenomena checks that the tiny preset shows, within a few
// virtual seconds, queueing (more requests than max_num_seqs), preemption
// (more context than the cache) and decay (slower steps as the cache fills).
func TestTinyShowsPhenomena(t *testing.T) {
	t.Parallel()
	cfg, _ := Preset("tiny")
	s := newVSim(t, cfg)
	for i := range 16 {
		s.at(0, &Request{ID: fmt.Sprint(i), Prompt: ids(100, 0, uint32(i)), MaxTokens: 600, IgnoreEOS: true})
	}
	maxWaiting := 0
	var lowUsage, highUsage []time.Duration // durations of pure decode steps of 8 requests
	s.onStep = func(b *Batch) {
		maxWaiting = max(maxWaiting, s.e.NumWaiting())
		if b.PrefillTokens == 0 && b.DecodeTokens == 8 {
			switch u := s.e.KVUsage(); {
			case u < 0.4:
				lowUsage = append(lowUsage, b.Duration())
			case u > 0.8:
				highUsage = append(highUsage, b.Duration())
			}
		}
	}
	s.run(5*time.Second, 1_000_000)
	st := s.e.Stats()
	if maxWaiting == 0 || st.Preemptions == 0 {
		t.Errorf("within 5 s: max waiting %d, preemptions %d; want both > 0", maxWaiting, st.Preemptions)
	}
	lo, hi := percentile(lowUsage, 0.5), percentile(highUsage, 0.5)
	t.Logf("decode step p50: %v below 40%% KV usage, %v above 80%% (%d, %d steps); %d preemptions", lo, hi, len(lowUsage), len(highUsage), st.Preemptions)
	if len(lowUsage) == 0 || len(highUsage) == 0 || float64(hi) < 1.2*float64(lo) {
		t.Errorf("no decay: decode step p50 %v at low usage, %v at high usage", lo, hi)
	}
}

// TestStepChaining pins how step deadlines chain: a driver that wakes a
// little late still starts the next step at the previous deadline (no
// accumulated sleep error), a long stall gives the time up, a step never
// starts before the requests it admits arrived, and idleness resets the
// chain.
func TestStepChaining(t *testing.T) {
	t.Parallel()
	cfg, _ := Preset("tiny")
	clk := NewVirtualClock(testEpoch)
	e, err := NewEngine(cfg, clk, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	step := func() *Batch {
		t.Helper()
		b, err := e.Schedule()
		if err != nil || b == nil {
			t.Fatalf("Schedule: %v, %v", b, err)
		}
		return b
	}
	complete := func(b *Batch, late time.Duration) {
		t.Helper()
		clk.Set(b.End.Add(late))
		if _, err := e.Complete(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Submit(&Request{ID: "a", Prompt: ids(10, 0, 1), MaxTokens: 100, IgnoreEOS: true}); err != nil {
		t.Fatal(err)
	}
	b1 := step()
	if !b1.Start.Equal(testEpoch) {
		t.Errorf("first step starts at %v, want the arrival", b1.Start)
	}
	complete(b1, 100*time.Millisecond) // woke 100 ms late
	b2 := step()
	if !b2.Start.Equal(b1.End) {
		t.Errorf("late driver: step starts %v after the previous deadline, want chained", b2.Start.Sub(b1.End))
	}
	// A request arriving after the previous deadline (the driver was late)
	// is not served before it arrived.
	clk.Set(b2.End.Add(30 * time.Millisecond))
	if err := e.Submit(&Request{ID: "b", Prompt: ids(10, 0, 2), MaxTokens: 1, IgnoreEOS: true}); err != nil {
		t.Fatal(err)
	}
	arrivalB := clk.Now()
	clk.Set(arrivalB.Add(10 * time.Millisecond))
	if _, err := e.Complete(b2); err != nil {
		t.Fatal(err)
	}
	b3 := step()
	if !b3.Start.Equal(arrivalB) {
		t.Errorf("step admitting b starts %v after b arrived, want at its arrival", b3.Start.Sub(arrivalB))
	}
	complete(b3, time.Second) // a stall
	b4 := step()
	if !b4.Start.Equal(clk.Now()) {
		t.Errorf("after a stall the step starts %v after now, want now", b4.Start.Sub(clk.Now()))
	}
	for b := b4; b != nil; b, _ = e.Schedule() {
		complete(b, 0)
	}
	clk.Advance(20 * time.Millisecond) // idle, within maxStepLag of the last deadline
	if err := e.Submit(&Request{ID: "c", Prompt: ids(10, 0, 3), MaxTokens: 1, IgnoreEOS: true}); err != nil {
		t.Fatal(err)
	}
	if b5 := step(); !b5.Start.Equal(clk.Now()) {
		t.Errorf("after idling the step starts %v after now, want now", b5.Start.Sub(clk.Now()))
	}
}
