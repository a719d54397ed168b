package vllmlog

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the parser as a log: it must never
// panic or fail, and every writer must handle what it produced. The seed
// corpus is every line of the test logs and of the corpus of real logs
// (testdata/corpus), and the whole files.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.log"))
	corpus, _ := filepath.Glob(filepath.Join("testdata", "corpus", "*.log"))
	files = append(files, corpus...)
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		for _, line := range bytes.Split(data, []byte("\n")) {
			f.Add(line)
		}
	}
	f.Add([]byte("non-default args: {\n'a': 1,\n"))
	f.Add([]byte("x INFO 01-25 11:26:58 y (A pid=1) ERROR 01-25 11:26:59 z ^[[0;36m^M"))
	f.Add([]byte("Traceback (most recent call last):\n  File \"a\", line 1\n^^^\nValueError: x\nwrapped"))
	f.Add([]byte("vllm serve m --tp -1 \\\n--max-model-len 9999999999999999999 \\\n"))
	f.Add([]byte("Engine 000: Avg generation throughput: 1e308 tokens/s, Running: -1 reqs, GPU KV cache usage: 1e400%"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := Parse(context.Background(), "fuzz", bytes.NewReader(data), Options{})
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		for _, format := range formats {
			if err := Write(io.Discard, rep, format); err != nil {
				t.Fatalf("Write %s: %v", format, err)
			}
		}
		var back Report
		var b bytes.Buffer
		if err := Write(&b, rep, "json"); err != nil || json.Unmarshal(b.Bytes(), &back) != nil || back.Lines != rep.Lines {
			t.Fatalf("the JSON report does not read back: %v", err)
		}
		for _, r := range rep.Runs {
			StartupFigure(r)
			DecayFigure(r)
		}
	})
}

// FuzzModelConfig (issue 22, item 10) feeds arbitrary bytes as the
// --model-config config.json of a log whose KV cache it describes (gemma-4-31b,
// whose real config.json seeds it): the read must never panic, a config it
// accepts has positive layer counts, heads and dimensions, and the check
// and every writer must handle what it produced.
func FuzzModelConfig(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "gemma-4-31b.config.json"))
	if err != nil {
		f.Fatal(err)
	}
	logData, err := os.ReadFile(filepath.Join("testdata", "gemma-4-31b.log"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"num_hidden_layers": 4, "num_key_value_heads": 2, "head_dim": 64, "sliding_window": 512, "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]}`))
	f.Add([]byte(`{"text_config": {"num_hidden_layers": 4096, "num_attention_heads": 1, "hidden_size": 9223372036854775807}}`))
	f.Add([]byte(`{"num_hidden_layers": 2, "num_key_value_heads": 1e300, "head_dim": 1e300}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := parseModelConfig(data)
		if err != nil {
			return
		}
		for _, a := range d.layers {
			if a.Layers < 0 || a.KVHeads < 1 || a.HeadDim < 1 || a.SlidingWindow < 0 {
				t.Fatalf("accepted layers %+v from %q", a, data)
			}
		}
		path := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := Parse(context.Background(), "fuzz", bytes.NewReader(logData), Options{ModelConfig: path})
		if err != nil {
			t.Fatalf("Parse with the config: %v", err)
		}
		for _, format := range formats {
			if err := Write(io.Discard, rep, format); err != nil {
				t.Fatalf("Write %s: %v", format, err)
			}
		}
	})
}
