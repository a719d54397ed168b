package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/servebench/servebench/results"
)

// CacheTolerance is how far, in share points, the hit rate a server's
// counters give may be from a scenario's target and the target still
// count as reached (prompts.prefix_cache.hit_rate).
const CacheTolerance = 0.05

// cacheFullKV is the KV-cache usage from which a cache counts as full in
// the explanation of a missed target.
const cacheFullKV = 0.9

// PrefixCache is one stage's prefix-cache figures: the share of prompt
// tokens the server served from its cache, from its own counters over the
// stage and from the requests' usage, and, when the scenario set a
// target (prompts.prefix_cache), whether the server reached it and, if
// not, what its KV figures say of why.
type PrefixCache struct {
	Stage int    `json:"stage"`
	Name  string `json:"name"`
	// Target is the scenario's target hit rate; nil without one.
	Target *float64 `json:"target_hit_rate,omitempty"`
	// Counters is the hit rate the server's counters give over the
	// stage; nil when they cannot (no scrapes inside the stage, an
	// engine that exports neither).
	Counters *CounterHitRate `json:"counters,omitempty"`
	// Usage is the cached tokens over the prompt tokens of the stage's
	// measured ok requests, as their usage reported them; nil when none
	// reported cached tokens.
	Usage *float64 `json:"usage_hit_rate,omitempty"`
	// KVUsageMax is the highest KV-cache usage (0 to 1) the scrapes saw
	// over the stage; Preemptions the requests the server preempted
	// over it. Nil when the server does not export them.
	KVUsageMax  *float64 `json:"kv_usage_max,omitempty"`
	Preemptions *float64 `json:"preemptions,omitempty"`
	// Verdict is "reached", "missed" or "unknown" (no counter figure)
	// with a target; empty without one. Statement says it in a sentence
	// with its evidence.
	Verdict   string `json:"verdict,omitempty"`
	Statement string `json:"statement"`
}

// CounterHitRate is a hit rate computed from the deltas of the server's
// counters between two scrapes inside a stage.
type CounterHitRate struct {
	HitRate float64 `json:"hit_rate"`
	// Hits and Queries are the prompt tokens served from the cache and
	// those looked up (or, for an engine that counts only the tokens it
	// computed, the prompt tokens of the requests that ended) between
	// the two scrapes.
	Hits    float64 `json:"hits"`
	Queries float64 `json:"queries"`
	FromS   float64 `json:"from_s"` // the first scrape, seconds from the epoch
	ToS     float64 `json:"to_s"`   // the last
	// Source says which counters gave it.
	Source string `json:"source"`
}

// cacheSample is what the prefix-cache figures read of a scrape.
type cacheSample struct {
	at                                     time.Duration
	hits, queries, prompt, kv, preemptions float64
	has                                    map[results.Meaning]bool
	atEnd                                  bool
}

// cacheBin is the width of the bins of prompt tokens by request end
// (counters that move at a request's end are compared with them).
const cacheBin = 10 * time.Millisecond

// addCacheSample keeps what the prefix-cache figures need of s.
func (a *Aggregate) addCacheSample(s *results.Sample) {
	if !s.OK {
		return
	}
	v := s.Reading.Values
	c := cacheSample{at: s.At, has: map[results.Meaning]bool{}, atEnd: s.Reading.CountersAtEnd}
	for m, p := range map[results.Meaning]*float64{results.PrefixHits: &c.hits, results.PrefixQueries: &c.queries,
		results.PromptTokens: &c.prompt, results.KVUsage: &c.kv, results.Preemptions: &c.preemptions} {
		if x, ok := v[m]; ok {
			*p, c.has[m] = x, true
		}
	}
	a.cacheSamples = append(a.cacheSamples, c)
}

// addEnded counts an ok request's prompt tokens in its stage's bin of
// ends, warmup requests included: the server counted them too.
func (s *stageAgg) addEnded(r *results.Result) {
	if r.Outcome != results.OK || r.PromptTokens <= 0 {
		return
	}
	if s.ended == nil {
		s.ended = map[int64]int64{}
	}
	s.ended[int64(r.End/cacheBin)] += int64(r.PromptTokens)
}

// prefixCache returns the prefix-cache figures of the stages measured
// against a target (the prime stages left out) and of the session and
// conversation stages.
func (a *Aggregate) prefixCache() []PrefixCache {
	slices.SortFunc(a.cacheSamples, func(x, y cacheSample) int { return int(x.at - y.at) })
	var out []PrefixCache
	for _, i := range slices.Sorted(maps.Keys(a.stages)) {
		s := a.stages[i]
		var target *float64
		if sp := a.spec; sp != nil {
			if i < len(sp.Load.Stages) && sp.Load.Stages[i].Prime {
				continue
			}
			if c := sp.Prompts.PrefixCache; c != nil {
				target = &c.HitRate
			}
		}
		pc := PrefixCache{Stage: i, Name: a.stageName(i), Target: target}
		if s.tokens.Cached > 0 && s.tokens.Prompt > 0 {
			u := round(float64(s.tokens.Cached)/float64(s.tokens.Prompt), 4)
			pc.Usage = &u
		}
		if s.haveRange {
			pc.Counters, pc.KVUsageMax, pc.Preemptions = a.counterHitRate(s)
		}
		// Without a target, only sessions and conversations, whose
		// turns carry their history, have a cached share worth a line.
		if target == nil && (len(s.turns) == 0 || (pc.Counters == nil && pc.Usage == nil)) {
			continue
		}
		pc.Verdict, pc.Statement = a.cacheStatement(&pc)
		out = append(out, pc)
	}
	return out
}

// counterHitRate computes a stage's hit rate from the first and the last
// scrape inside its measured window: from the prefix-cache counters
// (vLLM's, counted as requests are admitted), or, for an engine that
// counts only the prompt tokens it computed and at a request's end
// (llama.cpp's server), as one minus those over the prompt tokens of the
// requests that ended between the two scrapes.
func (a *Aggregate) counterHitRate(s *stageAgg) (rate *CounterHitRate, kvMax, preempt *float64) {
	var in []cacheSample
	for _, c := range a.cacheSamples {
		if c.at >= s.first && c.at <= s.last {
			in = append(in, c)
		}
	}
	if len(in) < 2 {
		return nil, nil, nil
	}
	first, last := in[0], in[len(in)-1]
	if first.has[results.KVUsage] {
		m := 0.0
		for _, c := range in {
			m = max(m, c.kv)
		}
		kvMax = &m
	}
	if first.has[results.Preemptions] && last.has[results.Preemptions] {
		d := max(last.preemptions-first.preemptions, 0)
		preempt = &d
	}
	r := &CounterHitRate{FromS: round(first.at.Seconds(), 3), ToS: round(last.at.Seconds(), 3)}
	switch {
	case first.has[results.PrefixHits] && first.has[results.PrefixQueries] && last.has[results.PrefixHits] && last.has[results.PrefixQueries]:
		r.Hits, r.Queries = last.hits-first.hits, last.queries-first.queries
		r.Source = "prefix-cache hits over queries (the server's counters)"
	case first.atEnd && first.has[results.PromptTokens] && last.has[results.PromptTokens]:
		var ended int64
		for bin, n := range s.ended {
			if t := time.Duration(bin) * cacheBin; t >= first.at && t < last.at {
				ended += n
			}
		}
		computed := last.prompt - first.prompt
		r.Queries, r.Hits = float64(ended), float64(ended)-computed
		r.Source = "1 − prompt tokens the server computed (its counter) over the prompt tokens of the requests that ended"
	default:
		return nil, kvMax, preempt
	}
	if r.Queries <= 0 || r.Hits < 0 {
		return nil, kvMax, preempt
	}
	r.HitRate = round(r.Hits/r.Queries, 4)
	return r, kvMax, preempt
}

// cacheStatement judges a stage's figures against its target and says so
// with the evidence.
func (a *Aggregate) cacheStatement(pc *PrefixCache) (verdict, statement string) {
	pct := func(x float64) string { return fmt.Sprintf("%.1f %%", 100*x) }
	var got string
	if c := pc.Counters; c != nil {
		got = fmt.Sprintf("the server's counters give a hit rate of %s (%s of %s prompt tokens from %.1f s to %.1f s)", pct(c.HitRate), num(c.Hits), num(c.Queries), c.FromS, c.ToS)
	}
	if u := pc.Usage; u != nil {
		if got != "" {
			got += "; "
		}
		got += "the responses' usage reports " + pct(*u) + " of prompt tokens cached"
	}
	if pc.Target == nil {
		return "", capitalize(got) + "."
	}
	target := *pc.Target
	if pc.Counters == nil {
		why := "no two scrapes of prefix-cache counters fell inside the stage (scrape more often, or run longer)"
		if got != "" {
			why += "; " + got
		}
		return "unknown", fmt.Sprintf("Target hit rate %s: not proved: %s.", pct(target), why)
	}
	hit := pc.Counters.HitRate
	if math.Abs(hit-target) <= CacheTolerance {
		return "reached", fmt.Sprintf("Target hit rate %s reached (within %.0f points): %s.", pct(target), 100*CacheTolerance, got)
	}
	return "missed", fmt.Sprintf("Target hit rate %s missed: %s. %s", pct(target), got, a.cacheReason(pc, hit < target))
}

// cacheReason says what the KV figures suggest of a missed target. A
// server's KV-cache usage counts the blocks its running requests hold;
// the cached prefixes wait in the rest, and are evicted, oldest first,
// when running requests need room. So the cache's capacity is estimated
// from the context in flight over the usage (the windows of the
// correlation), and what the running requests leave of it is compared
// with what the shared prefixes need.
func (a *Aggregate) cacheReason(pc *PrefixCache, below bool) string {
	if !below {
		return "More of the prompts was cached than planned: the server shares more than the prefixes (a system message or chat template every prompt starts with counts too)."
	}
	need, pool := a.poolTokens()
	capacity, running := a.kvCapacity(pc.Stage)
	switch kv := pc.KVUsageMax; {
	case capacity > 0 && need > 0 && need > capacity-running:
		return fmt.Sprintf("The cache is too small for the target: %s need about %s tokens, and the KV cache (about %s tokens, estimated from the context in flight over the KV usage) "+
			"kept at most about %s free beside the running requests (usage peaked at %.0f %%), so prefixes were evicted before they were used again.",
			pool, num(need), num(capacity), num(max(capacity-running, 0)), 100*deref(kv))
	case kv != nil && *kv >= cacheFullKV:
		why := fmt.Sprintf("The KV cache was full (usage reached %.0f %%)", 100**kv)
		if p := pc.Preemptions; p != nil && *p > 0 {
			why += fmt.Sprintf(" and %.0f requests were preempted", *p)
		}
		return why + fmt.Sprintf(": the cache is too small to hold %s and the requests in flight, so prefixes were evicted before they were used again.", pool)
	case capacity > 0:
		return fmt.Sprintf("The KV cache (about %s tokens) had room for %s beside the running requests (usage peaked at %.0f %%), so eviction does not explain it: "+
			"the server may not cache prefixes (is prefix caching on?), or its blocks are larger than prompts.prefix_cache.block_tokens.", num(capacity), pool, 100*deref(kv))
	}
	return "The server's KV figures are too few to tell whether prefixes were evicted."
}

// poolTokens is about how many tokens the shared prefixes of the
// scenario need (their number times the prefix of a prompt of the mean
// input length), and their description.
func (a *Aggregate) poolTokens() (float64, string) {
	sp := a.spec
	if sp == nil || sp.Prompts.PrefixCache == nil {
		return 0, "the shared prefixes"
	}
	c := sp.Prompts.PrefixCache
	desc := fmt.Sprintf("the %d shared prefixes", c.Prefixes)
	in := sp.Prompts.InputTokens
	if in == nil {
		return 0, desc
	}
	mean := float64(in.Value)
	switch in.Dist {
	case "uniform":
		mean = float64(in.Min+in.Max) / 2
	case "normal":
		mean = in.Mean
	}
	return float64(c.Prefixes) * c.HitRate * mean, desc
}

// kvCapacity estimates the KV cache's capacity in tokens over stage i's
// windows: the median of the context in flight over the KV usage, where
// the usage is above 5 %; and the most context the stage had in flight.
// Both are 0 when no window allows the estimate.
func (a *Aggregate) kvCapacity(stage int) (capacity, running float64) {
	var est []float64
	for _, w := range a.corr.Windows() {
		if w.Stage != stage || math.IsNaN(w.KVUsagePerc) || w.KVUsagePerc <= 5 || w.ContextSum <= 0 {
			continue
		}
		est = append(est, w.ContextSum/(w.KVUsagePerc/100))
		running = max(running, w.ContextSum)
	}
	if len(est) == 0 {
		return 0, 0
	}
	slices.Sort(est)
	return est[len(est)/2], running
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
