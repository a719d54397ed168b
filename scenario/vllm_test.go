package scenario

import (
	"slices"
	"strings"
	"testing"
)

func TestParseVLLMCommand(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		line string
		args []string // a subsequence of the translation's arguments
		note string
	}{
		{"vllm bench serve --model m --num-prompts 50", []string{"--target", "http://127.0.0.1:8000", "--max-concurrency", "50", "--requests", "50",
			"--input-tokens", "1024", "--output-tokens", "128", "--set", "'target.api=completions'"}, "every request at once"},
		{"python benchmarks/benchmark_serving.py --base-url http://10.0.0.5:8000/ --request-rate=4 --random-range-ratio 0.5",
			[]string{"--target", "http://10.0.0.5:8000", "--rate", "4"}, "exactly the drawn length"},
		{"vllm bench serve --dataset-name sharegpt --dataset-path 'data/share gpt.json' --goodput 'ttft:500 e2el:3000'",
			[]string{"--dataset", "data/share gpt.json", "--set", "'slo.ttft_ms=500'", "--set", "'slo.e2e_ms=3000'"}, ""},
	} {
		cmd, err := ParseVLLMCommand(c.line)
		if err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		i := 0
		for _, a := range cmd.Args {
			if i < len(c.args) && a == c.args[i] {
				i++
			}
		}
		if i < len(c.args) {
			t.Errorf("%s:\n  got  %q\n  want %q in order", c.line, cmd.Args, c.args)
		}
		if c.note != "" && !slices.ContainsFunc(cmd.Notes, func(n string) bool { return strings.Contains(n, c.note) }) {
			t.Errorf("%s: notes %q lack %q", c.line, cmd.Notes, c.note)
		}
	}
	if cmd, _ := ParseVLLMCommand("vllm bench serve --random-range-ratio 0.5"); !slices.Contains(cmd.Sets, "prompts.input_tokens={dist: uniform, min: 512, max: 1536}") {
		t.Errorf("range ratio: sets %q", cmd.Sets)
	}
	for _, bad := range []string{"vllm bench serve --request-rate", "vllm bench serve --num-prompts many", "vllm bench serve --foo 1",
		"vllm bench serve --model 'unclosed", "vllm bench serve --endpoint /v1/embeddings", "vllm bench serve --model m stray"} {
		if _, err := ParseVLLMCommand(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzParseVLLMCommand: any command line is translated or refused with an
// error; a translation's flags and sets build a valid scenario or fail with
// an error, never a panic.
func FuzzParseVLLMCommand(f *testing.F) {
	f.Add("vllm bench serve --model m --request-rate 8 --max-concurrency 16 --num-prompts 200")
	f.Add(`vllm bench serve --goodput "ttft:1 tpot:2" --burstiness 0.3 --num-warmups 2 --random-range-ratio 0.9`)
	f.Add("--base-url=http://127.0.0.1:1 --endpoint /v1/chat/completions --ignore-eos --temperature 0")
	f.Fuzz(func(t *testing.T, line string) {
		cmd, err := ParseVLLMCommand(line)
		if err != nil {
			return
		}
		if _, err := FromFlags(cmd.Flags, cmd.Sets...); err != nil && err.Error() == "" {
			t.Fatal("an empty error")
		}
	})
}
