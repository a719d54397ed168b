package run

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/servebench/servebench/report"
)

// TestPrefixCacheTarget is issue 24's check of prefix-cache control on
// the simulator (virtual time): with target hit rates of 0, 50 and 90 %,
// two shared prefixes primed first, the hit rate the server's own
// counters give over the measured stage (vllm:prefix_cache_hits over
// queries) is within 5 points of the target and the summary says it was
// reached; with 16 prefixes of 90 % of 512 tokens (about 7,400 tokens)
// and a cache of 3,072 tokens, it says the target was missed, and why.
func TestPrefixCacheTarget(t *testing.T) {
	t.Parallel()
	const doc = `name: cache
target: {url: "sim://tiny?enable_prompt_tokens_details=true"}
scrape: {interval: 100ms}
prompts: {input_tokens: 512, output_tokens: 16, prefix_cache: {hit_rate: %g, prefixes: %d}}
load: {stages: [{name: prime, concurrency: 2, prime: true}, {name: measure, concurrency: %d, requests: 160}]}
`
	check := func(target float64, prefixes, conc int) report.PrefixCache {
		sum, _ := runSimWith(t, fmt.Sprintf(doc, target, prefixes, conc), Options{Virtual: true})
		if len(sum.PrefixCache) != 1 {
			t.Fatalf("target %g: prefix-cache figures %+v: want the measured stage's", target, sum.PrefixCache)
		}
		pc := sum.PrefixCache[0]
		if pc.Counters == nil || pc.Target == nil || *pc.Target != target {
			t.Fatalf("target %g: %+v: want the target and the counters' figure", target, pc)
		}
		t.Logf("target %.0f %%, %d prefixes: counters %.1f %%, usage %.1f %%: %s", 100*target, prefixes, 100*pc.Counters.HitRate, 100*derefOr(pc.Usage), pc.Statement)
		return pc
	}
	for _, target := range []float64{0, 0.5, 0.9} {
		pc := check(target, 2, 2)
		if d := math.Abs(pc.Counters.HitRate - target); d > report.CacheTolerance || pc.Verdict != "reached" {
			t.Errorf("target %g: counters give %.3f (%s): %s", target, pc.Counters.HitRate, pc.Verdict, pc.Statement)
		}
		if !strings.Contains(pc.Statement, "reached") {
			t.Errorf("target %g: statement %q", target, pc.Statement)
		}
	}
	pc := check(0.9, 16, 4)
	if pc.Verdict != "missed" || pc.Counters.HitRate > 0.9-report.CacheTolerance {
		t.Errorf("16 prefixes in a 3,072-token cache: %.3f (%s), want it missed", pc.Counters.HitRate, pc.Verdict)
	}
	if !strings.Contains(pc.Statement, "too small") || !strings.Contains(pc.Statement, "evicted") {
		t.Errorf("the statement should say the cache was too small, and that prefixes were evicted: %q", pc.Statement)
	}
}

func derefOr(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}
