// Package tokenizer counts tokens and synthesises texts of an exact token
// length, offline, so that servebench's synthetic prompts and the built-in
// simulator agree on token counts without a network or a model download.
//
// It consumes an embedded encoding's name (o200k_base, the gpt-oss family's
// base encoding, is the default; cl100k_base is also embedded), the path of
// a model's Hugging Face tokenizer.json (BPE and WordLevel models, see
// hf.go), or, through Calibrate, a server's own counting (its /tokenize
// endpoint). It produces token counts (Tokenizer) and vocabularies of
// words that are one token each (Words), from which texts of an exact
// length are built.
package tokenizer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// Names of the embedded encodings, and the word that asks for the server's
// own counting (resolved by the caller through Calibrate).
const (
	O200kBase  = "o200k_base"
	Cl100kBase = "cl100k_base"
	Server     = "server"
)

// IsFile reports whether a tokenizer name is a tokenizer.json path rather
// than an embedded encoding or Server: it ends in ".json".
func IsFile(name string) bool { return strings.HasSuffix(strings.ToLower(name), ".json") }

// Tokenizer counts tokens and builds texts of exact token lengths.
// It is immutable after Load and safe for concurrent use.
type Tokenizer struct {
	name  string
	enc   encoder
	words *Words
}

// encoder counts the tokens of a text.
type encoder interface {
	count(text string) int
}

// tiktokenEncoder counts with an embedded tiktoken encoding.
type tiktokenEncoder struct{ enc *tiktoken.Tiktoken }

func (e tiktokenEncoder) count(text string) int { return len(e.enc.EncodeOrdinary(text)) }

// cache holds loaded tokenizers. Loading o200k_base parses 200k BPE ranks
// (≈ 0.3 s), a large tokenizer.json about as long, so each is loaded at
// most once per process (a file again when it changed); the cached values
// are immutable.
var cache sync.Map // key → func() (*Tokenizer, error)

// Load returns the named embedded encoding ("" means Default), or the
// tokenizer of the tokenizer.json file at the path name (IsFile).
func Load(name string) (*Tokenizer, error) {
	if name == "" {
		name = Default
	}
	key := name
	if IsFile(name) {
		abs, err := filepath.Abs(name)
		if err != nil {
			return nil, fmt.Errorf("tokenizer %s: %w", name, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("tokenizer %s: %w", name, err)
		}
		key = fmt.Sprintf("%s\x00%d\x00%d", abs, fi.Size(), fi.ModTime().UnixNano())
	} else if _, ok := specs[name]; !ok {
		return nil, fmt.Errorf("tokenizer %q: unknown encoding (known: o200k_base, cl100k_base, or the path of a tokenizer.json)", name)
	}
	f, _ := cache.LoadOrStore(key, sync.OnceValues(func() (*Tokenizer, error) {
		if IsFile(name) {
			return loadFile(name)
		}
		return load(name)
	}))
	return f.(func() (*Tokenizer, error))()
}

// loadFile reads a Hugging Face tokenizer.json.
func loadFile(path string) (*Tokenizer, error) {
	hf, err := loadHF(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	t := &Tokenizer{name: path, enc: hf}
	if t.words, err = findWords(t.enc.count, hf.vocabWords()); err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	return t, nil
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
	t := &Tokenizer{name: name, enc: tiktokenEncoder{enc}}
	if t.words, err = findWords(t.enc.count, nil); err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", name, err)
	}
	return t, nil
}

// Name is the encoding's name, or the tokenizer.json's path.
func (t *Tokenizer) Name() string { return t.name }

// Count returns the number of tokens in text. Special tokens are treated as
// ordinary text by an embedded encoding, as servers do for user content; a
// tokenizer.json's added tokens count one each where they appear. Neither
// adds the tokens a server puts around a prompt (BOS, a chat template).
func (t *Tokenizer) Count(text string) int { return t.enc.count(text) }

// Words returns the tokenizer's single-token words.
func (t *Tokenizer) Words() *Words { return t.words }

// Word returns the i-th single-token word (Words.Word).
func (t *Tokenizer) Word(i int) string { return t.words.Word(i) }

// NumWords is the size of the single-token vocabulary (Words.Len).
func (t *Tokenizer) NumWords() int { return t.words.Len() }

// Text returns a text of exactly n tokens (Words.Text).
func (t *Tokenizer) Text(n int, pick func(vocab int) int) string { return t.words.Text(n, pick) }

// Words is a vocabulary of words (each with a leading space) that are one
// token each, alone or after one another, under some tokenizer: a text of
// n of them is n tokens long. It is immutable and safe for concurrent use.
type Words struct {
	name string
	list []string
}

// Name names the tokenizer the words were found for.
func (w *Words) Name() string { return w.name }

// Word returns the i-th word (with its leading space); i wraps.
func (w *Words) Word(i int) string {
	if i < 0 {
		i = -i
	}
	return w.list[i%len(w.list)]
}

// Len is the number of words.
func (w *Words) Len() int { return len(w.list) }

// Text returns a text of exactly n tokens whose words are chosen by pick,
// which is called n times with the vocabulary size and returns an index.
func (w *Words) Text(n int, pick func(vocab int) int) string {
	var b strings.Builder
	b.Grow(n * 7)
	for range n {
		b.WriteString(w.Word(pick(len(w.list))))
	}
	return b.String()
}

// minWords is the fewest single-token words a tokenizer must have for
// synthetic prompts: fewer would repeat visibly (and prefix-cache alike).
const minWords = 64

// findWords returns the common English words of this package's list, then
// extra candidates (a tokenizer.json's own words), that count one token
// each with a leading space, after checking that texts of them add up
// (a tokenizer that merged across words could not make exact lengths).
func findWords(count func(string) int, extra []string) (*Words, error) {
	w, err := Calibrate(context.Background(), "", func(_ context.Context, text string) (int, error) { return count(text), nil }, extra)
	if err != nil {
		return nil, err
	}
	return w, nil
}
