package tokenizer

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dlclark/regexp2"

	"github.com/servebench/servebench/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the tokenizer.json fixtures in testdata/")

// The fixtures are tokenizer.json files made here, small enough to read:
// a byte-level BPE trained on this package's word list (the layout of
// Qwen's and Llama 3's files: NFC, a Split pattern then ByteLevel) and a
// WordLevel vocabulary. Other packages' tests use them as a model's
// tokenizer that differs from o200k_base.
const (
	FixtureBPE       = "testdata/tiny-bpe.json"
	FixtureWordLevel = "testdata/tiny-wordlevel.json"
)

// llama3Pattern is the Split pattern of Llama 3's tokenizer.json.
const llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// fixtureCorpus is what the tiny BPE is trained on: the word list, its
// first 150 words three times over (so that they become whole tokens), and
// a sentence with digits and punctuation.
func fixtureCorpus() string {
	var b strings.Builder
	for i, w := range vocabulary {
		reps := 1
		if i < 150 {
			reps = 3
		}
		for range reps {
			b.WriteString(" " + w)
		}
	}
	b.WriteString(" The server's queue held 1024 requests, then 2048; didn't it?\n")
	return b.String()
}

// trainBPE learns merges as byte-level BPE training does: the most
// frequent adjacent pair (ties: the smallest pair) is merged, merges
// times. It returns the vocabulary in id order and the merges.
func trainBPE(corpus string, merges int) ([]string, [][2]string) {
	re := regexp2.MustCompile(llama3Pattern, regexp2.None)
	freq := map[string]int{}
	for _, p := range (regexSplit{re: re, behavior: "Isolated"}).split([]string{corpus}) {
		freq[byteLevelMap(p)]++
	}
	type word struct {
		syms []string
		n    int
	}
	var words []word
	for _, w := range slices.Sorted(func(yield func(string) bool) {
		for k := range freq {
			if !yield(k) {
				return
			}
		}
	}) {
		var syms []string
		for _, r := range w {
			syms = append(syms, string(r))
		}
		words = append(words, word{syms, freq[w]})
	}
	var vocab []string
	for b := range 256 {
		vocab = append(vocab, string(byteToRune[b]))
	}
	var out [][2]string
	for range merges {
		pairs := map[[2]string]int{}
		for _, w := range words {
			for i := 0; i+1 < len(w.syms); i++ {
				pairs[[2]string{w.syms[i], w.syms[i+1]}] += w.n
			}
		}
		var best [2]string
		bestN := 1
		for p, n := range pairs {
			if n > bestN || (n == bestN && n > 1 && (p[0] < best[0] || (p[0] == best[0] && p[1] < best[1]))) {
				best, bestN = p, n
			}
		}
		if bestN < 2 {
			break
		}
		out = append(out, best)
		vocab = append(vocab, best[0]+best[1])
		for wi := range words {
			s := words[wi].syms
			var merged []string
			for i := 0; i < len(s); i++ {
				if i+1 < len(s) && s[i] == best[0] && s[i+1] == best[1] {
					merged = append(merged, best[0]+best[1])
					i++
					continue
				}
				merged = append(merged, s[i])
			}
			words[wi].syms = merged
		}
	}
	return vocab, out
}

// writeTokenizerJSON lays out a tokenizer.json as Hugging Face writes one,
// the vocabulary in id order.
func writeTokenizerJSON(vocab []string, merges [][2]string, added []string, normalizer, preTokenizer, model string) []byte {
	var b bytes.Buffer
	enc := func(v any) string {
		var s bytes.Buffer
		e := json.NewEncoder(&s)
		e.SetEscapeHTML(false)
		_ = e.Encode(v)
		return strings.TrimSpace(s.String())
	}
	b.WriteString("{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [")
	for i, a := range added {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n    {\"id\": %d, \"content\": %s, \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": true}",
			len(vocab)+i, enc(a))
	}
	fmt.Fprintf(&b, "\n  ],\n  \"normalizer\": %s,\n  \"pre_tokenizer\": %s,\n  \"post_processor\": null,\n  \"decoder\": null,\n", normalizer, preTokenizer)
	fmt.Fprintf(&b, "  \"model\": {\n    %s,\n    \"vocab\": {", model)
	for i, v := range vocab {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n      %s: %d", enc(v), i)
	}
	b.WriteString("\n    }")
	if merges != nil {
		b.WriteString(",\n    \"merges\": [")
		for i, m := range merges {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "\n      %s", enc([]string{m[0], m[1]}))
		}
		b.WriteString("\n    ]")
	}
	b.WriteString("\n  }\n}\n")
	return b.Bytes()
}

func fixtureBPE() []byte {
	vocab, merges := trainBPE(fixtureCorpus(), 700)
	pre := fmt.Sprintf(`{"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": %s}, "behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]}`,
		mustJSON(llama3Pattern))
	return writeTokenizerJSON(vocab, merges, []string{"<|endoftext|>"}, `{"type": "NFC"}`, pre,
		`"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false`)
}

func fixtureWordLevel() []byte {
	vocab := []string{"[UNK]"}
	seen := map[string]bool{}
	for _, w := range vocabulary {
		if !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	vocab = append(vocab, ".", ",", "?", "!")
	return writeTokenizerJSON(vocab, nil, []string{"[SEP]"}, `{"type": "Lowercase"}`, `{"type": "Whitespace"}`,
		`"type": "WordLevel", "unk_token": "[UNK]"`)
}

func mustJSON(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestFixtures checks that the fixtures are what this file makes (-update
// rewrites them) and that they load.
func TestFixtures(t *testing.T) {
	for _, f := range []struct {
		path string
		make func() []byte
	}{{FixtureBPE, fixtureBPE}, {FixtureWordLevel, fixtureWordLevel}} {
		golden.Check(t, filepath.FromSlash(f.path), f.make(), *update)
		tok, err := Load(f.path)
		if err != nil {
			t.Fatalf("%s: %v", f.path, err)
		}
		t.Logf("%s: %d single-token words", f.path, tok.NumWords())
	}
}
