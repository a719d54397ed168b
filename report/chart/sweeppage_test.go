package chart

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// samplePage is a search of an open-loop rate: latency grows past the
// capacity, throughput levels off; TTFT and ITL budgets and a minimum
// throughput are drawn.
func samplePage() *SweepPage {
	yes, no := true, false
	sp := &SweepPlot{Title: "search", XLabel: "load.stages[0].rate", Numeric: true, Recommended: 2, RecommendedLabel: "capacity",
		Budgets: []SweepBudget{{Panel: "ttft", Name: "TTFT p99 ≤ 200 ms", Limit: 200}, {Panel: "itl", Name: "ITL p99 ≤ 12 ms", Limit: 12},
			{Panel: "throughput", Name: "output tokens/s ≥ 800", Limit: 800}}}
	var pts []LoadPoint
	for i, x := range []float64{5, 10, 15, 20, 30} {
		pass := &yes
		if x > 15 {
			pass = &no
		}
		ttft := 20 + 10*x + max(0, x-15)*80
		p := SweepPlotPoint{Label: strconv.FormatFloat(x, 'g', -1, 64), X: x, Pass: pass, TTFTP50: ttft / 2, TTFTP99: ttft, ITLP50: 4 + x/10, ITLP99: 6 + x/5,
			OutputTokensPerSec: min(100*x, 1700)}
		sp.Points = append(sp.Points, p)
		pts = append(pts, LoadPoint{Label: p.Label, Load: x, TTFTP50: p.TTFTP50, TTFTP99: p.TTFTP99, ITLP50: p.ITLP50, ITLP99: p.ITLP99,
			TPOTP50: 4 + x/10 + float64(i%2), OutputTokensPerSec: p.OutputTokensPerSec, Pass: pass})
	}
	series := []LoadSeries{{Points: pts}}
	return &SweepPage{Scenario: "capacity", Kind: "search", Parameters: []string{"load.stages[0].rate"}, Started: time.Unix(0, 0), Runs: 6,
		Answer: "capacity 15 requests/s: the highest load.stages[0].rate whose budgets pass", Answered: true,
		Searches: []SweepPageSearch{{Answer: "15 requests/s", Bracket: "[15, 20) requests/s", Confidence: "high", Reason: "15 passed (clear); 20 failed (clear)"}},
		Budgets:  []string{"overall.ttft_ms.p99 ≤ 200"}, Columns: []string{"runs", "TTFT p99"},
		Rows:     []SweepPageRow{{Label: "rate=15", Cells: []string{"1", "170"}, Pass: &yes, Marked: true, Note: "clear"}, {Label: "rate=20 <b>", Cells: []string{"1", "620"}, Pass: &no}},
		Failures: []string{"rate=30 (run 1): server exited"},
		Sweep:    sp, Load: &LoadPlot{Title: "load", XLabel: "rate", Series: series}, Pareto: &ParetoPlot{Title: "pareto", Series: series}}
}

func writeSample(t *testing.T) (string, string) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSweepHTML(&b, samplePage()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), SweepHTMLName)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("SWEEP_PLOT_DIR"); dir != "" { // to look at it
		_ = os.WriteFile(filepath.Join(dir, SweepHTMLName), b.Bytes(), 0o644)
		pg := samplePage()
		for name, r := range map[string]interface {
			Render() ([]byte, []byte, error)
		}{"sweep": pg.Sweep, "load": pg.Load, "pareto": pg.Pareto} {
			if png, _, err := r.Render(); err == nil {
				_ = os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
			}
		}
	}
	return path, b.String()
}

// TestSweepHTMLContent checks sweep.html's parts, that text is escaped,
// that the budget lines are in the trade-off plot's legend, and that the
// page loads nothing from anywhere.
func TestSweepHTMLContent(t *testing.T) {
	t.Parallel()
	_, s := writeSample(t)
	for _, want := range []string{
		`<p id="answer" class="answer">capacity 15 requests/s`, `<table id="searches">`, `[15, 20) requests/s`,
		`<table id="values">`, `<tr class="marked"><td class="value">rate=15</td>`, `<td class="fail">missed</td>`, `rate=20 &lt;b&gt;`,
		`<ul id="budgets">`, `<ul id="failures">`,
		`<figure id="plot-sweep">`, `<figure id="plot-load">`, `<figure id="plot-pareto">`,
		"budget: TTFT p99 ≤ 200 ms", "budget: ITL p99 ≤ 12 ms", "budget: output tokens/s ≥ 800", "capacity: 15",
		"budgets met", "budgets missed", "Pareto frontier",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("sweep.html lacks %q", want)
		}
	}
	if n := strings.Count(s, `<svg class="plot"`); n != 3 {
		t.Errorf("%d inline SVG plots, want 3", n)
	}
	external := regexp.MustCompile(`(?i)(\ssrc\s*=|\shref\s*=|url\(|@import|<link|<script|<iframe|<img)`)
	if m := external.FindAllString(s, 5); len(m) > 0 {
		t.Errorf("sweep.html references external resources: %q", m)
	}
}

// TestSweepHTMLInChromium opens sweep.html in headless Chromium: nothing
// on the console, three plots in the DOM, and a screenshot that shows the
// budget lines (the plots' red) and the curves (palette blue). Skipped
// without Chromium.
func TestSweepHTMLInChromium(t *testing.T) {
	t.Parallel()
	bin := chromiumBinary(t)
	path, _ := writeSample(t)
	dom, logs := runChromium(t, bin, path, "--dump-dom")
	for _, line := range strings.Split(string(logs), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			t.Errorf("console message: %s", line)
		}
	}
	if n := bytes.Count(dom, []byte(`<svg class="plot"`)); n != 3 {
		t.Errorf("rendered DOM holds %d plots, want 3", n)
	}
	img := screenshot(t, bin, path)
	// The plots' red (200, 30, 30), told apart from the page's "missed"
	// text (179, 38, 30) by a tight tolerance.
	red, blue := countWithin(img, 200, 30, 30, 12), countNear(img, 0, 114, 178)
	t.Logf("%d budget-red and %d plot-blue pixels in the screenshot", red, blue)
	if red < 1500 {
		t.Errorf("%d budget-red pixels, want ≥ 1500: the budget lines are not shown", red)
	}
	if blue < 2000 {
		t.Errorf("%d plot-blue pixels, want ≥ 2000: the curves are not shown", blue)
	}
}

// TestFrontier keeps the points no other beats on both throughputs.
func TestFrontier(t *testing.T) {
	t.Parallel()
	pts := []LoadPoint{
		{OutputTokensPerSec: 100, TPOTP50: 10}, // 100 per user
		{OutputTokensPerSec: 200, TPOTP50: 20}, // 50: on the frontier
		{OutputTokensPerSec: 150, TPOTP50: 25}, // 40: beaten by 200/50
		{OutputTokensPerSec: 300, TPOTP50: 40}, // 25
		{OutputTokensPerSec: 250, TPOTP50: 0},  // no TPOT: left out
	}
	if got, want := Frontier(pts), []int{0, 1, 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("Frontier = %v, want %v", got, want)
	}
}
