package scenario

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/servebench/servebench/internal/tokenizer"
)

func mustPrompts(t testing.TB, yaml string) *Prompts {
	t.Helper()
	sc, err := Parse("testdata/p.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPrompts(t.Context(), sc)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const stages = "load: {stages: [{concurrency: 1, requests: 1}]}\n"

// The tokenizer.json fixtures, relative to this package (and so to a
// scenario parsed as "p.yaml").
const (
	fixtureBPE       = "../internal/tokenizer/testdata/tiny-bpe.json"
	fixtureWordLevel = "../internal/tokenizer/testdata/tiny-wordlevel.json"
)

// TestServerPrompts builds synthetic prompts from words calibrated on a
// counter (here the BPE fixture, as a server's /tokenize would count): they
// have exactly their lengths under it. Without such words the scenario's
// prompts cannot be built.
func TestServerPrompts(t *testing.T) {
	t.Parallel()
	sc, err := Parse("p.yaml", []byte("name: p\nrequest: {system: be brief}\nprompts: {tokenizer: server, input_tokens: {dist: uniform, min: 1, max: 900}, shared_prefix_tokens: 1}\n"+stages))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewPrompts(t.Context(), sc); !errors.Is(err, ErrServerTokenizer) {
		t.Fatalf("NewPrompts with the server's tokenizer: %v", err)
	}
	tok, err := tokenizer.Load(fixtureBPE)
	if err != nil {
		t.Fatal(err)
	}
	words, err := tokenizer.Calibrate(context.Background(), "server", func(_ context.Context, s string) (int, error) { return tok.Count(s), nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewServerPrompts(t.Context(), sc, Shard{}, words, 7)
	if err != nil {
		t.Fatal(err)
	}
	if p.Overhead() != 7 || p.Tokenizer() != nil {
		t.Fatalf("overhead %d, tokenizer %v", p.Overhead(), p.Tokenizer())
	}
	for seq := range uint64(200) {
		pr := p.At(seq)
		if got := tok.Count(pr.Text); got != pr.InputTokens {
			t.Fatalf("seq %d: %d tokens under the server's tokenizer, intended %d", seq, got, pr.InputTokens)
		}
	}
}

// TestOverheadCountsSystem: the system message is part of what a server
// counts for a chat request, under the scenario's tokenizer; a completions
// request has none.
func TestOverheadCountsSystem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		api, system string
		want        int
	}{{"chat", "", 0}, {"chat", " be brief", 2}, {"completions", "", 0}} {
		sys := ""
		if tc.system != "" {
			sys = "request: {system: '" + tc.system + "'}\n"
		}
		p := mustPrompts(t, "name: p\ntarget: {api: "+tc.api+"}\n"+sys+stages)
		if p.Overhead() != tc.want {
			t.Errorf("%s, system %q: overhead %d, want %d", tc.api, tc.system, p.Overhead(), tc.want)
		}
	}
}

// TestSyntheticPromptsExact checks that every synthetic prompt has exactly
// its intended token count, including the shared prefix plus its suffix,
// that the prefix is the same text in every prompt, and that lengths stay
// within their distributions.
func TestSyntheticPromptsExact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, prompts string
		prefix        int
	}{
		{"fixed", "{tokenizer: o200k_base, input_tokens: 100, output_tokens: 10}", 0},
		{"uniform with prefix", "{seed: 3, input_tokens: {dist: uniform, min: 40, max: 300}, output_tokens: {dist: uniform, min: 1, max: 5}, shared_prefix_tokens: 32}", 32},
		{"normal", "{seed: 4, input_tokens: {dist: normal, mean: 200, stddev: 50}, output_tokens: {dist: normal, mean: 20, stddev: 30, min: 2, max: 40}}", 0},
		{"prefix is the whole prompt", "{input_tokens: 16, shared_prefix_tokens: 16}", 16},
		{"cl100k", "{tokenizer: cl100k_base, input_tokens: {dist: uniform, min: 1, max: 64}, shared_prefix_tokens: 1}", 1},
		{"tokenizer.json BPE", "{tokenizer: " + fixtureBPE + ", input_tokens: {dist: uniform, min: 1, max: 600}, shared_prefix_tokens: 1}", 1},
		{"tokenizer.json WordLevel", "{tokenizer: " + fixtureWordLevel + ", input_tokens: {dist: normal, mean: 300, stddev: 80, min: 20}, shared_prefix_tokens: 20}", 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc, err := Parse("p.yaml", []byte("name: p\nprompts: "+tc.prompts+"\n"+stages))
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPrompts(t.Context(), sc)
			if err != nil {
				t.Fatal(err)
			}
			in, out := sc.Prompts.InputTokens, sc.Prompts.OutputTokens
			var prefix string
			seen := map[string]bool{}
			for seq := uint64(0); seq < 300; seq++ {
				pr := p.At(seq)
				if got := p.tok.Count(pr.Text); got != pr.InputTokens {
					t.Fatalf("seq %d: %d tokens, intended %d", seq, got, pr.InputTokens)
				}
				if pr.InputTokens < in.lowest() || pr.InputTokens > in.highest() || pr.OutputTokens < out.lowest() || pr.OutputTokens > out.highest() {
					t.Fatalf("seq %d: lengths %d, %d outside %+v, %+v", seq, pr.InputTokens, pr.OutputTokens, *in, *out)
				}
				if tc.prefix > 0 {
					if seq == 0 {
						prefix = p.prefix
						if got := p.tok.Count(prefix); got != tc.prefix {
							t.Fatalf("prefix has %d tokens, want %d", got, tc.prefix)
						}
					}
					if !strings.HasPrefix(pr.Text, prefix) {
						t.Fatalf("seq %d does not start with the shared prefix", seq)
					}
				}
				if pr.InputTokens > tc.prefix+1 && seen[pr.Text] {
					t.Fatalf("seq %d repeats an earlier prompt", seq)
				}
				seen[pr.Text] = true
			}
		})
	}
}

func TestPromptsDeterministic(t *testing.T) {
	t.Parallel()
	const doc = "name: p\nprompts: {seed: 11, input_tokens: {dist: uniform, min: 5, max: 50}, output_tokens: {dist: uniform, min: 1, max: 500}, shared_prefix_tokens: 4}\n" + stages
	a, b := mustPrompts(t, doc), mustPrompts(t, doc)
	c := mustPrompts(t, strings.Replace(doc, "seed: 11", "seed: 12", 1))
	same := 0
	for _, seq := range []uint64{0, 1, 2, 1 << 40, 99} {
		if a.At(seq) != b.At(seq) {
			t.Errorf("seq %d differs between two Prompts of one scenario", seq)
		}
		if first, again := a.At(seq), a.At(seq); first != again {
			t.Errorf("seq %d differs between two calls", seq)
		}
		if a.At(seq) == c.At(seq) {
			same++
		}
	}
	if same > 1 {
		t.Errorf("seeds 11 and 12 agree on %d of 5 prompts", same)
	}
}

func TestDatasetPrompts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, dataset string
		override      string
		want          map[string]int // prompt → output tokens (0: any)
	}{
		{"sharegpt", "{path: sharegpt.json}", "", map[string]int{
			"What is the capital of France?":      7,
			"Write a haiku about GPUs.":           0,
			"Explain KV caching in one sentence.": 0,
		}},
		{"jsonl", "{path: prompts.jsonl}", "", map[string]int{
			"Summarise the plot of Hamlet.":       200,
			"List three prime numbers.":           16,
			"Translate 'good morning' to French.": 8,
		}},
		{"jsonl with output override", "{path: prompts.jsonl, format: jsonl}", ", output_tokens: 5", map[string]int{
			"Summarise the plot of Hamlet.":       5,
			"List three prime numbers.":           5,
			"Translate 'good morning' to French.": 5,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := mustPrompts(t, "name: d\nprompts: {dataset: "+tc.dataset+tc.override+"}\n"+stages)
			if p.Len() != len(tc.want) {
				t.Fatalf("Len = %d, want %d", p.Len(), len(tc.want))
			}
			// One pass visits every entry once.
			seen := map[string]bool{}
			var wg sync.WaitGroup
			var mu sync.Mutex
			for seq := range uint64(len(tc.want)) {
				wg.Go(func() {
					pr := p.At(seq + 1000)
					mu.Lock()
					defer mu.Unlock()
					want, ok := tc.want[pr.Text]
					if !ok || seen[pr.Text] {
						t.Errorf("unexpected or repeated prompt %q", pr.Text)
					}
					seen[pr.Text] = true
					if pr.InputTokens != p.tok.Count(pr.Text) || (want != 0 && pr.OutputTokens != want) || pr.OutputTokens < 1 {
						t.Errorf("%q: %+v, want output %d", pr.Text, pr, want)
					}
				})
			}
			wg.Wait()
		})
	}
}

func TestDatasetErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, format, data, want string
	}{
		{"jsonl bad json", FormatJSONL, "{\"prompt\": \"a\", \"output_tokens\": 3}\nnot json\n", "d:2: want a JSON object"},
		{"jsonl missing prompt", FormatJSONL, "{\"output_tokens\": 3}\n", "d:1: prompt: is missing"},
		{"jsonl empty prompt", FormatJSONL, "{\"prompt\": \"\", \"output_tokens\": 3}\n", "d:1: prompt: is empty"},
		{"jsonl missing output", FormatJSONL, "{\"prompt\": \"a\"}\n", "d:1: output_tokens: is missing"},
		{"jsonl bad output", FormatJSONL, "\n\n{\"prompt\": \"a\", \"output_tokens\": 0}\n", "d:3: output_tokens: want 1 to 2097152, got 0"},
		{"sharegpt not an array", FormatShareGPT, "{\"conversations\": []}", "want a ShareGPT JSON array of conversations: the file starts with {"},
		{"sharegpt truncated", FormatShareGPT, "[{\"conversations\": [", "want a ShareGPT JSON array"},
		// Issue 11, item 16: the line, in the file's terms, not Go's.
		{"jsonl wrong type", FormatJSONL, "{\"prompt\": \"a\", \"output_tokens\": \"3\"}\n",
			`d:1: want a JSON object {"prompt": ..., "output_tokens": N}: output_tokens: want an integer, got a string`},
		{"sharegpt bad element", FormatShareGPT, "[\n{\"conversations\": []},\n{\"conversations\": 3}\n]",
			"d:3: want a ShareGPT JSON array of conversations: element 1: conversations: want a list, got a number"},
		{"sharegpt syntax", FormatShareGPT, "[\n{\"conversations\": []},\n\n{\"conversations\": [x]}]",
			"d:4: want a ShareGPT JSON array of conversations: element 1: invalid character 'x' looking for beginning of value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			parse := parseJSONL
			if tc.format == FormatShareGPT {
				parse = parseShareGPT
			}
			_, err := parse(t.Context(), "d", strings.NewReader(tc.data), readOpts{})
			var fe *FieldError
			if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a *FieldError containing %q", err, tc.want)
			}
			for _, e := range unwrapAll(err) {
				if g := goTypeIn(e); g != "" {
					t.Errorf("%q names a Go type (%s)", e, g)
				}
			}
		})
	}
	if _, err := readDataset(t.Context(), "testdata/invalid/empty.yaml", FormatJSONL, readOpts{}); err == nil || !strings.Contains(err.Error(), "no usable prompt") {
		t.Errorf("empty dataset: err = %v", err)
	}
}

// FuzzDataset feeds arbitrary bytes to every dataset parser, with and
// without every turn kept: they must not panic, every entry they keep must
// have a prompt, and every turn kept a prompt and an output length (from
// the line or its answer).
func FuzzDataset(f *testing.F) {
	f.Add([]byte(`{"prompt": "a", "output_tokens": 3}`))
	f.Add([]byte(`[{"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "b"}]}]`))
	f.Add([]byte(`[{"conversations": [{"from": "system", "value": "s"}, {"from": "human", "value": "a"}, {"from": "gpt", "value": "b"}, {"from": "human", "value": "c"}, {"from": "gpt", "value": "d"}]}]`))
	f.Add([]byte(`{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}], "output_tokens": 8}`))
	f.Add([]byte("{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"assistant\", \"content\": \"b\"}]}\n\n{\"messages\": []}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, o := range []readOpts{{}, {turns: true}, {turns: true, haveOut: true}} {
			for _, parse := range []func(context.Context, string, io.Reader, readOpts) ([]entry, error){
				parseJSONL, parseShareGPT, parseMessages,
			} {
				entries, err := parse(t.Context(), "fuzz", bytes.NewReader(data), o)
				if err != nil {
					continue
				}
				for i := range entries {
					e := &entries[i]
					if e.prompt == "" {
						t.Fatalf("kept an empty prompt from %q", data)
					}
					for k, tt := range e.turns {
						if tt.prompt == "" {
							t.Fatalf("kept an empty turn %d from %q", k, data)
						}
						if !o.haveOut && tt.output == 0 && tt.answer == "" && k == len(e.turns)-1 {
							t.Fatalf("kept turn %d without an output length from %q", k, data)
						}
					}
				}
			}
		}
	})
}

func BenchmarkPromptsAt(b *testing.B) {
	for _, bc := range []struct{ name, prompts string }{
		{"in1024", "{input_tokens: 1024, output_tokens: 128}"},
		{"in1024-prefix512", "{input_tokens: 1024, output_tokens: 128, shared_prefix_tokens: 512}"},
		{"normal8192", "{input_tokens: {dist: normal, mean: 8192, stddev: 1000}, output_tokens: {dist: uniform, min: 1, max: 1000}}"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := mustPrompts(b, "name: p\nprompts: "+bc.prompts+"\n"+stages)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				p.At(uint64(i))
			}
		})
	}
}

// TestPromptsSalt is issue 9's prefix-cache trap: a second run of the same
// scenario sends the same prompts and hits the server's prefix cache. A
// salt changes every prompt's words (the shared prefix too) but not one
// length, so the workload stays the same.
func TestPromptsSalt(t *testing.T) {
	t.Parallel()
	const doc = "name: p\nprompts: {seed: 11, input_tokens: {dist: uniform, min: 8, max: 50}, output_tokens: {dist: uniform, min: 1, max: 500}, shared_prefix_tokens: 6}\n" + stages
	plain := mustPrompts(t, doc)
	salted := mustPrompts(t, strings.Replace(doc, "seed: 11", "seed: 11, salt: run-2", 1))
	again := mustPrompts(t, strings.Replace(doc, "seed: 11", "seed: 11, salt: run-2", 1))
	for seq := range uint64(200) {
		a, b, c := plain.At(seq), salted.At(seq), again.At(seq)
		if a.InputTokens != b.InputTokens || a.OutputTokens != b.OutputTokens {
			t.Fatalf("seq %d: lengths %d/%d salted %d/%d", seq, a.InputTokens, a.OutputTokens, b.InputTokens, b.OutputTokens)
		}
		if a.Text == b.Text || a.Text[:8] == b.Text[:8] {
			t.Fatalf("seq %d: the salt left the prompt (or its start) unchanged: %q", seq, b.Text[:min(len(b.Text), 40)])
		}
		if b != c {
			t.Fatalf("seq %d: one salt gave two prompts", seq)
		}
	}
}
