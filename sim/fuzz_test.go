package sim

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/servebench/servebench/internal/tokenizer"
)

// FuzzPromptIDs checks that any text maps to exactly the tokenizer's count
// of IDs, deterministically.
func FuzzPromptIDs(f *testing.F) {
	tok, err := tokenizer.Load("")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"", " the of and", "Hello, world!", "  two  spaces\n\nnewlines\t", "日本語のテキスト", "x\x00y", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		a := promptIDs(tok, text)
		if n := tok.Count(text); len(a) != n {
			t.Fatalf("%q: %d IDs, tokenizer counts %d", text, len(a), n)
		}
		if b := promptIDs(tok, text); !slicesEqual(a, b) {
			t.Fatalf("%q: IDs differ between calls", text)
		}
	})
}

func slicesEqual(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzParseConfig checks that any YAML either fails to parse or yields a
// configuration an engine can run.
func FuzzParseConfig(f *testing.F) {
	files, _ := filepath.Glob("presets/*.yaml")
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("base: tiny\nmax_num_seqs: 3\n"))
	f.Add([]byte("base: tiny\nsliding_window: 32\nsliding_window_layers: 1\n"))
	f.Add([]byte("num_gpu_blocks_override: 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseConfig(data, 0)
		if err != nil {
			return
		}
		if c.MaxModelLen > 1<<20 || c.NumLayers > 1<<10 {
			return // valid but too big to instantiate in a fuzz loop
		}
		k, err := c.Capacity()
		if err != nil {
			t.Fatalf("validated config has no capacity: %v", err)
		}
		if k.NumBlocks > 1<<22 {
			return
		}
		if _, err := NewEngine(c, NewVirtualClock(testEpoch), rand.New(rand.NewPCG(1, 1))); err != nil {
			t.Fatalf("validated config rejected by NewEngine: %v", err)
		}
	})
}

// FuzzRequestBody feeds arbitrary JSON to the request decoding path the
// handlers use; it must return a value or an *APIError, never panic.
func FuzzRequestBody(f *testing.F) {
	tok, err := tokenizer.Load("")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url"}]}]}`,
		`{"prompt":"hello","max_tokens":3}`, `{"prompt":["one"]}`, `{"prompt":[1,2,3]}`, `{"prompt":[]}`,
		`{"messages":[{"role":"user","content":null}]}`, `{"messages":[{"content":5}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req genRequest
		if err := json.NewDecoder(bytes.NewReader(body)).Decode(&req); err != nil {
			return
		}
		for _, chat := range []bool{true, false} {
			ids, err := req.promptTokens(tok, chat)
			if err != nil {
				if _, ok := err.(*APIError); !ok {
					t.Fatalf("error %T %v is not an *APIError", err, err)
				}
				continue
			}
			_ = validateLengths(2048, len(ids), req.maxTokens())
		}
		_, _ = req.includeUsage(), req.continuousUsage()
	})
}
