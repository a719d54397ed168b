package scenario

import (
	"fmt"
	"math"
)

// PrefixCache makes synthetic prompts hit a server's prefix cache at a
// chosen rate (PromptSpec.PrefixCache). Every prompt starts with one of
// Prefixes shared prefixes, taken in turn (request k uses prefix k mod
// Prefixes), then words of its own. The prefix is as long as makes
// HitRate of the prompt's tokens, counted with what the server puts
// before the prompt (the system message; with prompts.tokenizer server,
// the chat template), end on a block boundary: a server caches whole
// blocks, so once the prefixes are cached, that share is what it can
// serve from its cache and no more. A stage with prime: true sends each
// prefix once first, so that the measured stages find them cached; the
// run's summary then computes the hit rate the server reached from its
// own counters and says why when it missed.
type PrefixCache struct {
	// HitRate is the target share of prompt tokens served from the cache,
	// from 0 to 0.99 (0.5 or "50%").
	HitRate Fraction `yaml:"hit_rate" json:"hit_rate"`
	// Prefixes is the number of distinct shared prefixes (default 1). The
	// server's cache must hold them all, besides the requests running,
	// for the target to be reached.
	Prefixes int `yaml:"prefixes" json:"prefixes"`
	// BlockTokens is the server's KV-cache block size in tokens (vLLM's
	// --block-size; default 16).
	BlockTokens int `yaml:"block_tokens" json:"block_tokens"`
}

// DefaultBlockTokens is vLLM's default KV-cache block size.
const DefaultBlockTokens = 16

// maxPrefixes bounds prompts.prefix_cache.prefixes (a typo, not a need).
const maxPrefixes = 100_000

func (c *PrefixCache) defaults() {
	if c == nil {
		return
	}
	if c.Prefixes == 0 {
		c.Prefixes = 1
	}
	if c.BlockTokens == 0 {
		c.BlockTokens = DefaultBlockTokens
	}
}

// prefixCache checks prompts.prefix_cache and the prime stages.
func (v *validator) prefixCache(sc *Scenario) {
	c := sc.Prompts.PrefixCache
	for i := range sc.Load.Stages {
		st := &sc.Load.Stages[i]
		if !st.Prime {
			continue
		}
		f := fmt.Sprintf("load.stages[%d]", i)
		if c == nil {
			v.add(f+".prime", "primes the prefixes of prompts.prefix_cache, which is not set")
		}
		for _, x := range []struct {
			field string
			set   bool
		}{
			{"rate", st.RatePerSec != 0}, {"requests", st.Requests != 0}, {"duration", st.Duration != 0},
			{"trace", st.Trace != nil}, {"session", st.Session != nil}, {"until", st.Until != nil}, {"warmup", st.Warmup != Warmup{}},
		} {
			if x.set {
				v.add(f+"."+x.field, "does not apply to a prime stage: it sends each shared prefix once, with concurrency workers, all as warmup")
			}
		}
	}
	if c == nil {
		return
	}
	const f = "prompts.prefix_cache"
	p := &sc.Prompts
	if !(c.HitRate >= 0 && c.HitRate <= 0.99) {
		v.add(f+".hit_rate", "want a share from 0 to 0.99 (0.5 or 50%%), got %.4g", float64(c.HitRate))
	}
	if c.Prefixes < 1 || c.Prefixes > maxPrefixes {
		v.add(f+".prefixes", "want 1 to %d shared prefixes, got %d", maxPrefixes, c.Prefixes)
	}
	if c.BlockTokens < 1 || c.BlockTokens > 1024 {
		v.add(f+".block_tokens", "want the server's KV block size, 1 to 1024 tokens (vLLM's default is 16), got %d", c.BlockTokens)
	}
	switch {
	case p.Dataset.Path != "":
		v.add(f, "applies to synthetic prompts only: a dataset's prompts are its own")
	case p.SharedPrefixTokens > 0:
		v.add(f, "and prompts.shared_prefix_tokens both set a shared prefix: keep one")
	case p.Conversation != nil:
		v.add(f, "applies to single prompts: a conversation's history is its own prefix")
	case sc.Target.API == "embeddings":
		v.add(f, "applies to generation: an embeddings request is not served from a prefix cache")
	}
}

// PrefixTokens is the length of the shared prefix of a prompt of n
// tokens after overhead tokens of the server's own: overhead+prefix is
// the multiple of the block size nearest HitRate of overhead+n, less a
// block when that would leave the prompt no token of its own.
func (c *PrefixCache) PrefixTokens(n, overhead int) int {
	b := c.BlockTokens
	total := overhead + n
	shared := int(math.Round(float64(c.HitRate)*float64(total)/float64(b))) * b
	for shared > overhead && shared-overhead >= n {
		shared -= b
	}
	return max(shared-overhead, 0)
}

// Prime returns the prompt that primes shared prefix i: the prefix as
// long as the longest prompt's, asking for one token.
func (p *Prompts) Prime(i int) Prompt {
	n := max(p.cache.PrefixTokens(p.in.highest(), p.overhead), 1)
	return Prompt{Text: p.Text(TextID(TextPrefix, uint64(i)), n), InputTokens: n, OutputTokens: 1}
}

// PrefixCount is the number of shared prefixes (prompts.prefix_cache), 0
// without them.
func (p *Prompts) PrefixCount() int {
	if p.cache == nil {
		return 0
	}
	return p.cache.Prefixes
}
