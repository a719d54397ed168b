package tokenizer

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func TestTextHasExactTokenCount(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"o200k_base", "cl100k_base", FixtureBPE, FixtureWordLevel} {
		tok, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for _, n := range []int{0, 1, 2, 17, 128, 1000, 4097} {
			text := tok.Text(n, rng.IntN)
			if got := tok.Count(text); got != n {
				t.Errorf("%s: Text(%d) has %d tokens", name, n, got)
			}
		}
	}
}

// The counts below are Hugging Face tokenizers' own (its Rust core, through
// its Node binding) on the same files, with add_special_tokens false.
func TestCountMatchesHuggingFace(t *testing.T) {
	t.Parallel()
	texts := []string{"", " the", "the", " the model of the server", "The Server's queue: 1024 requests, then 2048!",
		"Hello, world.\n\nNew paragraph\twith tabs", "données café ﬁ", "<|endoftext|> the", " development information",
		"ünïcödé 😀 日本語", "   spaces   ", "[SEP] the . , ? unknownword"}
	for _, tc := range []struct {
		file string
		want []int
	}{
		{FixtureBPE, []int{0, 1, 2, 8, 28, 27, 15, 2, 2, 26, 8, 22}},
		{FixtureWordLevel, []int{0, 1, 1, 5, 12, 8, 3, 4, 2, 3, 1, 6}},
	} {
		tok, err := Load(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		for i, text := range texts {
			if got := tok.Count(text); got != tc.want[i] {
				t.Errorf("%s: Count(%q) = %d, Hugging Face counts %d", tc.file, text, got, tc.want[i])
			}
		}
	}
}

func TestLoadUnknown(t *testing.T) {
	t.Parallel()
	if _, err := Load("nope"); err == nil {
		t.Fatal("Load(nope) succeeded")
	}
}

func TestLoadFileErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bpe := `"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}`
	for _, tc := range []struct {
		name, body, want string
	}{
		{"not json", `{"model": `, "not a tokenizer.json"},
		{"unigram", `{"model": {"type": "Unigram", "vocab": [["a", 0]]}}`, `model.type "Unigram" is not supported`},
		{"empty vocab", `{"model": {"type": "BPE", "vocab": {}, "merges": []}}`, "the BPE vocab is empty"},
		{"merge outside vocab", `{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}}`, `model.merges[0] "a" + "b": a token that is not in the vocab`},
		{"bad merge", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]}}`, `model.merges[0] "ab": want two tokens`},
		{"unk outside vocab", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "unk_token": "<unk>"}}`, `model.unk_token "<unk>" is not in the vocab`},
		{"suffix", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "end_of_word_suffix": "</w>"}}`, `model.end_of_word_suffix "</w>" is not supported`},
		{"normalizer", `{"normalizer": {"type": "BertNormalizer"}, ` + bpe + `}`, `normalizer: type "BertNormalizer" is not supported`},
		{"nested pre-tokenizer", `{"pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "ByteLevel"}, {"type": "UnicodeScripts"}]}, ` + bpe + `}`,
			`pre_tokenizer.pretokenizers[1]: type "UnicodeScripts" is not supported`},
		{"bad regex", `{"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(("}, "behavior": "Isolated"}, ` + bpe + `}`, "pre_tokenizer.pattern: "},
		{"behavior", `{"pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "Sideways"}, ` + bpe + `}`, `behavior "Sideways" is not one of`},
		{"drops characters", `{` + bpe + `}`, "synthetic prompts cannot have exact lengths"},
		{"few words", `{"model": {"type": "WordLevel", "vocab": {"a": 0}}, "pre_tokenizer": {"type": "WhitespaceSplit"}, "normalizer": {"type": "Replace", "pattern": {"Regex": "[aeiou]"}, "content": " "}}`, "words are one token each (want 64)"},
		{"type error", `{"added_tokens": {"id": 1}, ` + bpe + `}`, "added_tokens: want a list, got object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
			if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Load: %v, want an error naming the file and saying %q", err, tc.want)
			}
		})
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("Load(missing): %v", err)
	}
}

// A tokenizer.json edited between two loads is read again.
func TestLoadFileReloadsChanges(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(FixtureBPE)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tok.json")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := Load(path); err == nil || b == a {
		t.Fatalf("a changed file was not read again: %v", err)
	}
}

func TestCalibrate(t *testing.T) {
	t.Parallel()
	tok, err := Load(FixtureBPE)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64 // Calibrate asks several at a time
	count := func(_ context.Context, text string) (int, error) { calls.Add(1); return tok.Count(text), nil }
	w, err := Calibrate(context.Background(), "server", count, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w.Name() != "server" || w.Len() < minWords {
		t.Fatalf("calibrated %d words named %q", w.Len(), w.Name())
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 100, 3000} {
		if got := tok.Count(w.Text(n, rng.IntN)); got != n {
			t.Errorf("Text(%d) has %d tokens under the tokenizer it was calibrated on", n, got)
		}
	}
	t.Logf("%d words from %d counts", w.Len(), calls.Load())

	// A tokenizer that joins words cannot give exact lengths.
	joins := func(_ context.Context, text string) (int, error) { return (len(strings.Fields(text)) + 1) / 2, nil }
	if _, err := Calibrate(context.Background(), "joins", joins, nil); err == nil || !strings.Contains(err.Error(), "joins words") {
		t.Fatalf("Calibrate with a joining tokenizer: %v", err)
	}
	// A failing counter stops the calibration with its error.
	boom := errors.New("boom")
	fail := func(context.Context, string) (int, error) { return 0, boom }
	if _, err := Calibrate(context.Background(), "fail", fail, nil); !errors.Is(err, boom) {
		t.Fatalf("Calibrate with a failing counter: %v", err)
	}
}

func BenchmarkCountFile(b *testing.B) {
	tok, err := Load(FixtureBPE)
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("The server's queue held 1024 requests, then 2048; didn't it? ", 64)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Count(text)
	}
}
