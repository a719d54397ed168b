package scenario

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/inputfile"
)

// TestIssue22ErrorCap (issue 22, item 2): a JSON syntax error skipped the
// cap of 20 errors, so a 100 MB binary file read as a JSONL dataset printed
// 389,564 error lines. Every line-oriented reader now stops at maxErrors
// problems, whatever their kind, and its last message says it stopped.
func TestIssue22ErrorCap(t *testing.T) {
	t.Parallel()
	// Random bytes: about one line in 256 bytes, none of them JSON.
	garbage := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(22, 2))
	for i := range garbage {
		garbage[i] = byte(r.IntN(256))
	}
	badJSON := strings.Repeat("not json\n", 1000)
	badField := strings.Repeat(`{"prompt": "", "output_tokens": 1}`+"\n", 1000)
	badTrace := strings.Repeat(`{"timestamp": -1, "input_length": 0, "output_length": 0, "hash_ids": [-1]}`+"\n", 1000)
	parsers := map[string]func(string) error{
		"jsonl": func(s string) error {
			_, err := parseJSONL(t.Context(), "d", strings.NewReader(s), readOpts{})
			return err
		},
		"messages": func(s string) error {
			_, err := parseMessages(t.Context(), "d", strings.NewReader(s), readOpts{})
			return err
		},
		"trace": func(s string) error {
			_, err := parseTrace(t.Context(), "d", strings.NewReader(s))
			return err
		},
	}
	for name, parse := range parsers {
		for input, data := range map[string]string{"random bytes": string(garbage), "syntax errors": badJSON, "field errors": badField, "trace field errors": badTrace} {
			t.Run(name+"/"+input, func(t *testing.T) {
				t.Parallel()
				errs := unwrapAll(parse(data))
				if len(errs) == 0 || len(errs) > maxErrors {
					t.Fatalf("%d errors, want 1 to %d", len(errs), maxErrors)
				}
				if len(errs) == maxErrors && !strings.Contains(errs[maxErrors-1].Error(), "stopped reading here, after 20 problems") {
					t.Errorf("the last error does not say why the reading stopped: %v", errs[maxErrors-1])
				}
			})
		}
	}
}

// TestIssue22NotRegular (issue 22, item 2): a character device read as a
// dataset grew to 13.8 GB. A dataset or trace that is not a regular file
// is refused when the scenario is checked and when it is read.
func TestIssue22NotRegular(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero here")
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"dataset", "name: d\nprompts: {dataset: {path: /dev/zero, format: jsonl}}\n" + stages,
			`prompts.dataset.path: "/dev/zero" is a character device, not a regular file`},
		{"trace", "name: d\nload: {stages: [{trace: {path: /dev/urandom}}]}\n",
			`load.stages[0].trace.path: "/dev/urandom" is a character device, not a regular file`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Parse("p.yaml", []byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse: %v, want %q", err, tc.want)
			}
		})
	}
	// Read without Validate's check (a path swapped in afterwards).
	var nr *inputfile.NotRegularError
	if _, err := readDataset(t.Context(), "/dev/zero", FormatShareGPT, readOpts{}); !errors.As(err, &nr) {
		t.Errorf("readDataset(/dev/zero) = %v, want a NotRegularError", err)
	}
	if _, err := readTrace(t.Context(), "/dev/zero", inputfile.Limit{What: "trace"}); !errors.As(err, &nr) {
		t.Errorf("readTrace(/dev/zero) = %v, want a NotRegularError", err)
	}
}

// TestIssue22Caps (issue 22, items 2 and 7): a dataset's file size and
// line length are capped, and so is each prompt (a 60 MB line took 4.9 GB
// to count). Each message names the cap, where it was met and the setting
// that raises it.
func TestIssue22Caps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("x", 1<<20+10)
	huge := strings.Repeat("y", MaxPromptBytes+1)
	write("long.jsonl", `{"prompt": "a", "output_tokens": 1}`+"\n"+`{"prompt": "`+long+`", "output_tokens": 1}`+"\n")
	write("long.json", `[{"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "b"}]},`+"\n"+
		`{"conversations": [{"from": "human", "value": "`+long+`"}, {"from": "gpt", "value": "b"}]}]`)
	write("huge.jsonl", `{"prompt": "`+huge+`", "output_tokens": 1}`+"\n")
	write("huge.json", `[{"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "`+huge+`"}]}]`)
	write("huge-messages.jsonl", `{"messages": [{"role": "user", "content": "`+huge+`"}], "output_tokens": 3}`+"\n")
	write("big.jsonl", strings.Repeat(`{"prompt": "a", "output_tokens": 1}`+"\n", 40_000))
	for _, tc := range []struct{ name, dataset, want string }{
		{"line", "{path: long.jsonl, max_line_mib: 1}",
			"long.jsonl:2: line longer than the 1 MiB cap on a dataset line (raise it with --set prompts.dataset.max_line_mib=N)"},
		{"sharegpt conversation", "{path: long.json, max_line_mib: 1}",
			"long.json:2: [1]: a conversation longer than the 1 MiB cap on a dataset line (raise it with --set prompts.dataset.max_line_mib=N)"},
		{"file", "{path: big.jsonl, max_file_mib: 1}",
			"big.jsonl: 1.4 MiB is over the 1 MiB cap on a dataset file (raise it with --set prompts.dataset.max_file_mib=N)"},
		{"jsonl prompt", "{path: huge.jsonl}",
			"huge.jsonl:1: prompt: is 8388609 bytes, over the 8 MiB cap on a dataset prompt (2097152 tokens, the cap synthetic prompts have too, at 4 bytes a token)"},
		{"sharegpt reply", "{path: huge.json}", "huge.json:1: [0].conversations: a turn is 8388609 bytes, over the 8 MiB cap on a dataset prompt"},
		{"messages content", "{path: huge-messages.jsonl, format: messages}", "huge-messages.jsonl:1: messages[0].content: is 8388609 bytes, over the 8 MiB cap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc, err := Parse(filepath.Join(dir, "p.yaml"), []byte("name: d\nprompts: {dataset: "+tc.dataset+"}\n"+stages))
			if err != nil {
				t.Fatal(err)
			}
			err = sc.CheckDataset(t.Context())
			if want := filepath.Join(dir, tc.want); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("CheckDataset: %v\nwant %q", err, want)
			}
		})
	}
	// Out of range settings are the scenario's problems.
	_, err := Parse("p.yaml", []byte("name: d\nprompts: {dataset: {path: testdata/prompts.jsonl, max_file_mib: -1, max_line_mib: 2000000}}\n"+stages))
	for _, want := range []string{"prompts.dataset.max_file_mib: want 1 to 1048576 MiB (0: the default), got -1", "prompts.dataset.max_line_mib: want 1 to 1048576 MiB"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse: %v, want %q", err, want)
		}
	}
}

// TestIssue22PromptTokens (issue 22, item 7): a dataset prompt over the
// token cap of synthetic prompts is refused once counted, naming its line.
// The tiny BPE fixture counts each "~" as a token, so the prompt is under
// the byte cap and over the token cap.
func TestIssue22PromptTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prompt := strings.Repeat("~", MaxPromptTokens+1)
	data := `{"prompt": "a", "output_tokens": 1}` + "\n" + `{"prompt": "` + prompt + `", "output_tokens": 1}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	tokenizer, err := filepath.Abs(fixtureBPE)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Parse(filepath.Join(dir, "p.yaml"), []byte(fmt.Sprintf("name: d\nprompts: {tokenizer: %s, dataset: {path: d.jsonl}}\n%s", tokenizer, stages)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewPrompts(t.Context(), sc)
	want := filepath.Join(dir, "d.jsonl") + ":2: the prompt of 2097153 tokens is over the 2097152-token cap on a prompt"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("NewPrompts: %v\nwant %q", err, want)
	}
}

// TestIssue22PreparationObeysContext (issue 22, item 3): one SIGTERM was
// ignored for 90 s while an 84 MB dataset was read and counted. Reading
// and counting stop when the context ends, with its cause, and report
// their progress meanwhile.
func TestIssue22PreparationObeysContext(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var b strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&b, `{"prompt": "prompt number %d of a dataset that takes a while to count", "output_tokens": 4}`+"\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := Parse(filepath.Join(dir, "p.yaml"), []byte("name: d\nprompts: {dataset: {path: d.jsonl}}\n"+stages))
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stopped by the test")
	for _, step := range []string{"read", "count tokens"} {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			var calls []string
			progress := func(s string, done, total int64, unit string) {
				calls = append(calls, fmt.Sprintf("%s %d/%d %s", s, done, total, unit))
				if strings.HasPrefix(s, step) {
					cancel(stop)
				}
			}
			_, err := NewShardPrompts(ctx, sc, Shard{}, progress)
			if !errors.Is(err, stop) {
				t.Fatalf("NewShardPrompts = %v, want the context's cause; progress: %q", err, calls)
			}
			var fe *FieldError
			if errors.As(err, &fe) {
				t.Errorf("a stop reads as a problem of the file: %v", err)
			}
		})
	}
	// An already canceled context stops the check at once.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	began := time.Now()
	if err := sc.CheckDataset(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("CheckDataset = %v, want context.Canceled", err)
	}
	t.Logf("stopped in %v", time.Since(began))
}
