package tokenizer

import (
	"os"
	"testing"
)

// FuzzParseHF feeds arbitrary documents to the tokenizer.json reader: it
// must refuse or accept them without panicking, and a tokenizer it accepts
// must count any text.
func FuzzParseHF(f *testing.F) {
	for _, p := range []string{FixtureBPE, FixtureWordLevel} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "The server's queue: 1024 requests!")
	}
	f.Add([]byte(`{"normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}, "model": {"type": "BPE", "byte_fallback": true, "fuse_unk": true, "unk_token": "<unk>", "vocab": {"<unk>": 0, "<0x41>": 1, "▁": 2, "a": 3, "▁a": 4}, "merges": [["▁", "a"]]}}`), "a aA é")
	f.Add([]byte(`{"pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": true}, "model": {"type": "WordLevel", "vocab": {"▁a": 0}}}`), " a  b")
	f.Add([]byte(`{"pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": false}, {"type": "Punctuation", "behavior": "MergedWithPrevious"}, {"type": "Split", "pattern": {"String": "x"}, "behavior": "MergedWithNext", "invert": true}, {"type": "WhitespaceSplit"}, {"type": "ByteLevel", "add_prefix_space": true}]}, "model": {"type": "BPE", "vocab": {"Ġ": 0, "a": 1}, "merges": []}}`), "12a, bx 3!")
	f.Fuzz(func(t *testing.T, doc []byte, text string) {
		tok, err := parseHF(doc)
		if err != nil {
			return
		}
		if n := tok.count(text); n < 0 {
			t.Fatalf("count %q = %d", text, n)
		}
	})
}

// FuzzCount checks the fixtures on arbitrary text: counting never panics,
// and a text's count is at most its length in bytes (byte-level BPE; an
// invalid byte counts as U+FFFD, three bytes, as a server receives it).
func FuzzCount(f *testing.F) {
	tok, err := Load(FixtureBPE)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"", " the", "<|endoftext|>x", "\xff\xfe", "1234567890", "  \n\t "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if n := tok.Count(text); n < 0 || n > 3*len(text) {
			t.Fatalf("Count(%q) = %d for %d bytes", text, n, len(text))
		}
	})
}
