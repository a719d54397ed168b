package cli

import (
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/internal/golden"
)

// TestReportTextGolden runs `bench report` on the preemption fixture: the
// terminal summary goes to stdout, byte for byte the golden file package
// report's TestWriteTextGolden pins (go test ./report -update rewrites
// it), and nothing goes to stderr.
func TestReportTextGolden(t *testing.T) {
	t.Parallel()
	e, out, errb := testEnv()
	if err := bench(context.Background(), e, []string{"report", "../../../report/testdata/preempt.jsonl.gz"}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "../../../report/testdata/summary.txt.golden", out.Bytes(), false)
	if errb.Len() > 0 {
		t.Errorf("stderr = %q, want nothing", errb)
	}
}

// TestReportExports runs `bench report --format csv` and `--format vllm`
// on the preemption fixture: stdout is the golden file package report's
// export tests pin, stderr stays empty, and an unknown format is a usage
// error that names the formats.
func TestReportExports(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ format, golden string }{
		{"csv", "requests.csv"},
		{"vllm", "vllm.jsonl"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			t.Parallel()
			e, out, errb := testEnv()
			if err := bench(context.Background(), e, []string{"report", "../../../report/testdata/preempt.jsonl.gz", "--format", tc.format}); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "../../../report/testdata/"+tc.golden+".golden", out.Bytes(), false)
			if errb.Len() > 0 {
				t.Errorf("stderr = %q, want nothing", errb)
			}
		})
	}
	checkCLI(t, cliCase{"unknown format", []string{"report", "../../../report/testdata/preempt.jsonl.gz", "--format", "xml"}, 2,
		"want text, json, csv or vllm"})
}

// TestReportCSVWarnsOnStderr cuts the fixture's last line short, as a killed
// run leaves it: the CSV on stdout keeps every whole record and no warning,
// and the warning goes to stderr.
func TestReportCSVWarnsOnStderr(t *testing.T) {
	t.Parallel()
	f, err := os.Open("../../../report/testdata/preempt.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "results.jsonl")
	if err := os.WriteFile(path, data[:len(data)-20], 0o644); err != nil {
		t.Fatal(err)
	}
	e, out, errb := testEnv()
	if err := bench(context.Background(), e, []string{"report", path, "--format", "csv"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(errb.String(), "warning: ") {
		t.Errorf("stderr = %q, want the cut line's warning", errb)
	}
	if strings.Contains(out.String(), "warning") {
		t.Errorf("the warning is in the CSV")
	}
	if rows := strings.Count(out.String(), "\n"); rows < 20 {
		t.Errorf("%d CSV lines, want the whole records", rows)
	}
}

// TestReportVerboseGolden runs `bench report --verbose` on the preemption
// fixture: every finding and the analyst's detail (the decode law, Pearson
// r, the cross-check), which the plain summary leaves to report.html.
func TestReportVerboseGolden(t *testing.T) {
	t.Parallel()
	e, out, errb := testEnv()
	if err := bench(context.Background(), e, []string{"report", "--verbose", "../../../report/testdata/preempt.jsonl.gz"}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/terminal/report-verbose.golden", out.Bytes(), *update)
	if errb.Len() > 0 {
		t.Errorf("stderr = %q, want nothing", errb)
	}
}
