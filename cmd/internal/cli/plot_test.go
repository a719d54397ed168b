package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlotRebuildsFromResults draws the plots and report.html from the
// report package's fixture (a real sim://tiny run) and checks every file
// is written and named on stdout.
func TestPlotRebuildsFromResults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e, out, errb := testEnv()
	if err := bench(context.Background(), e, []string{"plot", "../../../report/testdata/preempt.jsonl.gz", "--out", dir}); err != nil {
		t.Fatalf("plot: %v\nstderr: %s", err, errb)
	}
	for _, name := range []string{"timeline", "decay", "latency", "stages"} {
		for _, ext := range []string{".png", ".svg"} {
			p := filepath.Join(dir, name+ext)
			if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
				t.Errorf("%s: %v", p, err)
			}
			if !strings.Contains(out.String(), p) {
				t.Errorf("stdout does not name %s:\n%s", p, out)
			}
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte(`<svg class="plot"`)) {
		t.Error("report.html holds no plot")
	}
}

func TestPlotUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"no results file", []string{"plot"}, exitUsage},
		{"missing file", []string{"plot", "no/such/results.jsonl", "--out", t.TempDir()}, exitFailed},
		{"help", []string{"plot", "--help"}, exitOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, _, _ := testEnv()
			if got := exitCode(bench(context.Background(), e, tc.args)); got != tc.code {
				t.Errorf("exit code = %d, want %d", got, tc.code)
			}
		})
	}
}
