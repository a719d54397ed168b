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
		for _, format := range Formats {
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
