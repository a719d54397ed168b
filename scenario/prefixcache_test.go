package scenario

import (
	"strings"
	"testing"
)

// TestPrefixTokens: the shared prefix plus what the server puts before
// the prompt ends on the block boundary nearest the target share of the
// whole, and never takes the prompt's last token.
func TestPrefixTokens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name               string
		rate               float64
		n, overhead, block int
		want               int
	}{
		{"none", 0, 512, 0, 16, 0},
		{"half", 0.5, 512, 0, 16, 256},
		{"nearest block", 0.9, 512, 0, 16, 464},          // 460.8 → 29 blocks
		{"with a system message", 0.5, 500, 12, 16, 244}, // 256 − 12
		{"overhead above the target", 0.01, 500, 40, 16, 0},
		{"never the whole prompt", 0.99, 20, 0, 16, 16},
		{"large blocks", 0.5, 100, 0, 64, 64},
	} {
		c := PrefixCache{HitRate: Fraction(tc.rate), Prefixes: 1, BlockTokens: tc.block}
		if got := c.PrefixTokens(tc.n, tc.overhead); got != tc.want {
			t.Errorf("%s: PrefixTokens(%d, %d) = %d, want %d", tc.name, tc.n, tc.overhead, got, tc.want)
		}
	}
}

// TestPrefixCachePrompts: request k's prompt starts with shared prefix k
// mod prefixes, as long as the target makes it, then words of its own;
// it has exactly its drawn length; the prime prompt of a prefix is the
// prefix of the longest prompt, which every prompt's prefix starts.
func TestPrefixCachePrompts(t *testing.T) {
	t.Parallel()
	sc, err := Parse("pc.yaml", []byte(`name: pc
prompts: {input_tokens: {dist: uniform, min: 300, max: 700}, output_tokens: 8, prefix_cache: {hit_rate: 0.75, prefixes: 3}}
load: {stages: [{name: p, concurrency: 1, prime: true}, {name: m, concurrency: 2, requests: 10}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPrompts(t.Context(), sc)
	if err != nil {
		t.Fatal(err)
	}
	tok := p.Tokenizer()
	for seq := range uint64(12) {
		pr := p.At(seq)
		if got := tok.Count(pr.Text); got != pr.InputTokens {
			t.Fatalf("seq %d: %d tokens, want %d", seq, got, pr.InputTokens)
		}
		shared := sc.Prompts.PrefixCache.PrefixTokens(pr.InputTokens, 0)
		prime := p.Prime(int(seq % 3))
		if !strings.HasPrefix(prime.Text, pr.Text[:len(p.Text(TextID(TextPrefix, seq%3), shared))]) || prime.OutputTokens != 1 {
			t.Errorf("seq %d: its prefix is not the start of prefix %d's prime prompt", seq, seq%3)
		}
		other := p.At(seq + 3)
		n := min(shared, sc.Prompts.PrefixCache.PrefixTokens(other.InputTokens, 0))
		a, b := p.Text(TextID(TextPrefix, seq%3), n), other.Text
		if !strings.HasPrefix(b, a) {
			t.Errorf("seq %d and %d do not share prefix %d's first %d tokens", seq, seq+3, seq%3, n)
		}
		if next := p.At(seq + 1); strings.HasPrefix(next.Text, p.Text(TextID(TextPrefix, seq%3), 16)) {
			t.Errorf("seq %d and %d share a prefix: they should use different ones", seq, seq+1)
		}
	}
}
