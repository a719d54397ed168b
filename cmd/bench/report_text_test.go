package main

import (
	"context"
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
	if err := bench(context.Background(), e, []string{"report", "../../report/testdata/preempt.jsonl.gz"}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "../../report/testdata/summary.txt.golden", out.Bytes(), false)
	if errb.Len() > 0 {
		t.Errorf("stderr = %q, want nothing", errb)
	}
}
