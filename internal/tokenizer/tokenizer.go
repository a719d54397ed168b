// Package tokenizer counts and synthesises text in an offline BPE encoding,
// so that servebench's synthetic prompts and the built-in simulator agree on
// token counts without a network or a model download.
//
// It consumes an encoding name (o200k_base, the gpt-oss family's base
// encoding, is the default; cl100k_base is also embedded) and produces token
// counts and texts of an exact token length.
package tokenizer

import (
	"fmt"
	"strings"
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

// Default is the encoding used when a scenario names none.
const Default = "o200k_base"

// spec describes one embedded encoding: its BPE file in the offline loader's
// assets, its special tokens and its pre-tokenisation pattern.
type spec struct {
	file    string
	special map[string]int
	pattern string
}

// The patterns are the published pre-tokenisation regular expressions of
// each encoding (facts of the encoding, not code).
var specs = map[string]spec{
	"o200k_base": {
		file:    "o200k_base.tiktoken",
		special: map[string]int{"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
		pattern: strings.Join([]string{
			`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
			`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
			`\p{N}{1,3}`,
			` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
			`\s*[\r\n]+`,
			`\s+(?!\S)`,
			`\s+`,
		}, "|"),
	},
	"cl100k_base": {
		file: "cl100k_base.tiktoken",
		special: map[string]int{"<|endoftext|>": 100257, "<|fim_prefix|>": 100258,
			"<|fim_middle|>": 100259, "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
		pattern: `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	},
}

// Tokenizer counts tokens and builds texts of exact token lengths.
// It is immutable after Load and safe for concurrent use.
type Tokenizer struct {
	name  string
	enc   *tiktoken.Tiktoken
	words []string // each " word" encodes to exactly one token, alone or after another
}

// cache holds loaded encodings. Loading o200k_base parses 200k BPE ranks
// (≈ 0.3 s), so each encoding is loaded at most once per process; the cached
// values are immutable.
var cache sync.Map // name → func() (*Tokenizer, error)

// Load returns the named encoding ("" means Default).
func Load(name string) (*Tokenizer, error) {
	if name == "" {
		name = Default
	}
	if _, ok := specs[name]; !ok {
		return nil, fmt.Errorf("tokenizer %q: unknown encoding (known: o200k_base, cl100k_base)", name)
	}
	f, _ := cache.LoadOrStore(name, sync.OnceValues(func() (*Tokenizer, error) { return load(name) }))
	return f.(func() (*Tokenizer, error))()
}

func load(name string) (*Tokenizer, error) {
	s := specs[name]
	ranks, err := loader.NewOfflineLoader().LoadTiktokenBpe(s.file)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: load ranks: %w", name, err)
	}
	bpe, err := tiktoken.NewCoreBPE(ranks, s.special, s.pattern)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", name, err)
	}
	set := make(map[string]any, len(s.special))
	for k := range s.special {
		set[k] = true
	}
	enc := tiktoken.NewTiktoken(bpe, &tiktoken.Encoding{Name: name, PatStr: s.pattern,
		MergeableRanks: ranks, SpecialTokens: s.special}, set)
	t := &Tokenizer{name: name, enc: enc}
	for _, w := range vocabulary {
		if len(enc.EncodeOrdinary(" "+w)) == 1 {
			t.words = append(t.words, " "+w)
		}
	}
	if len(t.words) < 64 {
		return nil, fmt.Errorf("tokenizer %s: only %d single-token words", name, len(t.words))
	}
	return t, nil
}

// Name is the encoding's name.
func (t *Tokenizer) Name() string { return t.name }

// Count returns the number of tokens in text (special tokens are treated as
// ordinary text, as servers do for user content).
func (t *Tokenizer) Count(text string) int { return len(t.enc.EncodeOrdinary(text)) }

// Word returns the i-th single-token word (with its leading space); i wraps.
// Concatenated words tokenize to one token each, so a text of n words is n
// tokens long.
func (t *Tokenizer) Word(i int) string {
	if i < 0 {
		i = -i
	}
	return t.words[i%len(t.words)]
}

// NumWords is the size of the single-token vocabulary Word draws from.
func (t *Tokenizer) NumWords() int { return len(t.words) }

// Text returns a text of exactly n tokens whose words are chosen by pick,
// which is called n times with the vocabulary size and returns an index.
func (t *Tokenizer) Text(n int, pick func(vocab int) int) string {
	var b strings.Builder
	b.Grow(n * 7)
	for range n {
		b.WriteString(t.Word(pick(len(t.words))))
	}
	return b.String()
}
