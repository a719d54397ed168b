package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

// budgetResult is what a mixed-load run measured.
type budgetResult struct {
	itlP99, ttftP50 time.Duration
	done            int
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(p*float64(len(d))))]
}

// runMixedLoad runs, in virtual time, long prompts (2,000–6,000 tokens)
// arriving as a Poisson process at 0.5 req/s for two minutes while earlier
// requests decode 300 tokens each, on deepseek-r1-32b with the given token
// budget.
func runMixedLoad(t testing.TB, budget int) budgetResult {
	cfg, err := Preset("deepseek-r1-32b")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Set("max_num_batched_tokens", strconv.Itoa(budget)); err != nil {
		t.Fatal(err)
	}
	s := newVSim(t, cfg)
	s.check = false
	rng := rand.New(rand.NewPCG(7, 7)) // the same arrivals for every budget
	var at time.Duration
	for i := 0; at < 2*time.Minute; i++ {
		at += time.Duration(rng.ExpFloat64() / 0.5 * float64(time.Second))
		n := 2000 + rng.IntN(4001)
		s.at(at, &Request{ID: fmt.Sprint(i), Prompt: ids(n, 0, uint32(i)), MaxTokens: 300, IgnoreEOS: true})
	}
	var res budgetResult
	var itl, ttft []time.Duration
	last := map[*Request]time.Time{}
	s.onOut = func(o Output) bool {
		if prev, ok := last[o.Req]; ok {
			itl = append(itl, o.Time.Sub(prev))
		} else {
			ttft = append(ttft, o.Time.Sub(o.Req.arrival))
		}
		last[o.Req] = o.Time
		if o.FinishReason != "" {
			res.done++
		}
		return true
	}
	s.run(time.Hour, 10_000_000)
	res.itlP99, res.ttftP50 = percentile(itl, 0.99), percentile(ttft, 0.50)
	return res
}

// TestBatchedTokensTradeoff is vLLM's documented chunked-prefill trade-off:
// under a mixed load, a 2048-token budget gives a lower ITL p99 than 8192
// (fewer prefill tokens slow each decode step), and 8192 a lower TTFT p50
// than 2048 (a prompt is prefilled in fewer steps).
func TestBatchedTokensTradeoff(t *testing.T) {
	t.Parallel()
	small, large := runMixedLoad(t, 2048), runMixedLoad(t, 8192)
	t.Logf("budget 2048: ITL p99 %v, TTFT p50 %v (%d requests)", small.itlP99, small.ttftP50, small.done)
	t.Logf("budget 8192: ITL p99 %v, TTFT p50 %v (%d requests)", large.itlP99, large.ttftP50, large.done)
	if small.done != large.done || small.done < 40 {
		t.Fatalf("runs completed %d and %d requests", small.done, large.done)
	}
	if small.itlP99 >= large.itlP99 {
		t.Errorf("ITL p99: 2048 gives %v, 8192 gives %v; want 2048 lower", small.itlP99, large.itlP99)
	}
	if large.ttftP50 >= small.ttftP50 {
		t.Errorf("TTFT p50: 8192 gives %v, 2048 gives %v; want 8192 lower", large.ttftP50, small.ttftP50)
	}
}
