package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
)

// shortRun aggregates n short requests sent over one minute, whose TTFT
// climbs through the run.
func shortRun(n int) *report.Aggregate {
	a := report.New()
	a.AddHeader(&results.Header{Schema: results.Schema, Tool: "servebench", Started: time.Unix(0, 0).UTC(),
		Spec: &results.Spec{Name: "bounded", Load: results.SpecLoad{Stages: []results.SpecStage{{Name: "c64"}}}}})
	ct := make([]time.Duration, 8)
	for i := range n {
		sent := time.Duration(i)*time.Minute/time.Duration(n) + time.Millisecond
		ttft := 20*time.Millisecond + time.Duration(i%97)*time.Millisecond/10 + time.Duration(i)*time.Second/time.Duration(n)
		for k := range ct {
			ct[k] = ttft + time.Duration(k)*5*time.Millisecond
		}
		r := results.Result{Seq: uint64(i), Outcome: results.OK, API: results.APIChat, Stream: true, Scheduled: sent, Sent: sent,
			Headers: sent + time.Millisecond, FirstToken: sent + ct[0], FirstContent: sent + ct[0], LastToken: sent + ct[7],
			End: sent + ct[7] + time.Millisecond, ChunkTimes: ct, InputTokens: 16, MaxTokens: 8, PromptTokens: 16, OutputTokens: 8}
		a.Add(&r)
	}
	return a
}

// TestOutputsBounded: the timeline draws a mark per request up to
// maxMarks and bands beyond, so that timeline.svg and report.html stay
// the same size from 20,000 to 200,000 requests (before, they held two
// marks per request: 210 MB each at 1 M requests).
func TestOutputsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("aggregates and draws 220,000 requests; skipped with -short")
	}
	sizes := map[int][2]int64{}
	for _, n := range []int{2_000, 20_000, 200_000} {
		dir := t.TempDir()
		a := shortRun(n)
		if _, err := WriteFiles(dir, a, a.Summary()); err != nil {
			t.Fatal(err)
		}
		svg, err := os.ReadFile(filepath.Join(dir, "timeline.svg"))
		if err != nil {
			t.Fatal(err)
		}
		html, err := os.Stat(filepath.Join(dir, HTMLName))
		if err != nil {
			t.Fatal(err)
		}
		sizes[n] = [2]int64{int64(len(svg)), html.Size()}
		bands := strings.Contains(string(svg), "p10–p90 band")
		if bands != (n > maxMarks) {
			t.Errorf("%d requests: bands drawn %v", n, bands)
		}
		t.Logf("%d requests: timeline.svg %d bytes, report.html %d bytes", n, len(svg), html.Size())
	}
	if s := sizes[200_000]; s[0] > sizes[20_000][0]*11/10 || s[1] > sizes[20_000][1]*11/10 || s[1] > 2<<20 {
		t.Errorf("sizes grew with the requests: %v", sizes)
	}
	if sizes[2_000][0] < sizes[20_000][0] {
		t.Logf("(2,000 requests draw one mark each: %d bytes)", sizes[2_000][0])
	}
}

func TestBinQuantiles(t *testing.T) {
	var pts plotter.XYs
	for i := range 100 { // bin 0: 1..50, bin 1: 51..100
		pts = append(pts, plotter.XY{X: float64(i), Y: float64(i + 1)})
	}
	got := binQuantiles(pts, 2, []float64{0.1, 0.5, 0.9})
	want := "[{24.75 [5 25 45]} {74.25 [55 75 95]}]"
	if fmt.Sprint(got) != want {
		t.Errorf("binQuantiles = %v, want %s", got, want)
	}
	if got := binQuantiles(plotter.XYs{{X: 1, Y: 1}, {X: 1, Y: 2}, {X: 1, Y: 3}}, 5, []float64{0.5}); fmt.Sprint(got) != "[{1.5 [2]}]" {
		t.Errorf("one instant: %v", got)
	}
}
