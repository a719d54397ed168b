package chart

import (
	"bytes"
	"fmt"
	"image/color"
	"regexp"
	"strings"
	"testing"
)

// barPaths finds the error bars of one colour in a sweep plot's SVG: each
// bar is one path of three strokes (cap, stem, cap); it returns the x of
// each stem.
func barPaths(t *testing.T, svg []byte, c color.RGBA) []string {
	t.Helper()
	re := regexp.MustCompile(fmt.Sprintf(`<path d="(M[^"]*)" style="fill:none;stroke:#%02X%02X%02X;`, c.R, c.G, c.B))
	var xs []string
	for _, m := range re.FindAllSubmatch(svg, -1) {
		moves := strings.Split(string(m[1]), "M")[1:]
		if len(moves) != 3 {
			t.Errorf("a bar path of %d strokes, want 3 (cap, stem, cap): %s", len(moves), m[1])
			continue
		}
		x, _, _ := strings.Cut(moves[1], ",")
		xs = append(xs, x)
	}
	return xs
}

// TestSweepPlotErrorBars (issue 21): the trade-off plot draws each value's
// 95 % interval as an error bar on every series that has one (TTFT and ITL
// p50 and p99, throughput), none where a value has no interval, and says
// so in its title; a value whose interval straddles a budget is squared
// in amber, and an inconclusive verdict has its own mark.
func TestSweepPlotErrorBars(t *testing.T) {
	t.Parallel()
	sp := samplePage().Sweep
	plain, plainSVG, err := sp.Render()
	if err != nil || len(plain) == 0 {
		t.Fatal(err)
	}
	if n := len(barPaths(t, plainSVG, barColour(sweepBlue))); n != 0 || bytes.Contains(plainSVG, []byte("95 % intervals")) {
		t.Errorf("without intervals: %d bars, or a title that promises them", n)
	}
	around := func(v, f float64) [2]float64 { return [2]float64{v * (1 - f), v * (1 + f)} }
	for i := range sp.Points {
		pt := &sp.Points[i]
		pt.CI = map[string][2]float64{"ttft.p50": around(pt.TTFTP50, 0.1), "itl.p50": around(pt.ITLP50, 0.05),
			"itl.p99": around(pt.ITLP99, 0.1), "throughput": around(pt.OutputTokensPerSec, 0.03)}
		if i < 4 { // the last value: too few samples for a p99 interval
			pt.CI["ttft.p99"] = around(pt.TTFTP99, 0.05)
		}
	}
	// TTFT p99 at 15 req/s is 170 ms: [150, 210] straddles its 200 ms budget.
	sp.Points[2].CI["ttft.p99"] = [2]float64{150, 210}
	no := false
	sp.Points[3].Pass, sp.Points[3].Verdict = &no, "inconclusive"
	_, svg, err := sp.Render()
	if err != nil {
		t.Fatal(err)
	}
	blue, orange, green := barPaths(t, svg, barColour(sweepBlue)), barPaths(t, svg, barColour(sweepOrange)), barPaths(t, svg, barColour(sweepGreen))
	if len(blue) != 10 || len(orange) != 9 || len(green) != 5 {
		t.Errorf("bars: %d p50 (want 5 values × 2 panels), %d p99 (want 4 TTFT + 5 ITL), %d throughput (want 5)", len(blue), len(orange), len(green))
	}
	distinct := map[string]bool{}
	for _, x := range green {
		distinct[x] = true
	}
	if len(distinct) != 5 {
		t.Errorf("the throughput bars stand at %d distinct x, want one per value: %v", len(distinct), green)
	}
	for _, want := range []string{"(bars: 95 % intervals)", ">interval straddles the budget<", ">budgets inconclusive<", ">budgets missed<"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
	sp.Points[2].CI["ttft.p99"] = [2]float64{150, 190}
	delete(sp.Points[4].CI, "itl.p99") // 12 ms ± 10 %: it straddles the ITL p99 budget of 12 ms
	if _, svg, _ := sp.Render(); bytes.Contains(svg, []byte("interval straddles the budget")) {
		t.Error("an interval below the budget is marked as straddling it")
	}
}

// TestSweepHTMLIntervals: the table prints each figure's interval under
// it and an inconclusive verdict as such, not as missed.
func TestSweepHTMLIntervals(t *testing.T) {
	t.Parallel()
	pg := samplePage()
	no := false
	pg.Rows[1].Pass, pg.Rows[1].Verdict = &no, "inconclusive"
	pg.Rows[0].CIs = []string{"", "150–190"}
	pg.CINote = "Under each figure, its 95 % interval."
	var b bytes.Buffer
	if err := WriteSweepHTML(&b, pg); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{`<td>170<br><span class="ci">150–190</span></td>`, `<td class="inconclusive">inconclusive</td>`, "Under each figure, its 95 % interval."} {
		if !strings.Contains(s, want) {
			t.Errorf("sweep.html lacks %s", want)
		}
	}
	if strings.Count(s, `<td class="fail">missed</td>`) != 0 {
		t.Error("the inconclusive row also says missed")
	}
	pts := pg.Pareto.Series[0].Points
	pts[3].Pass, pts[3].Verdict = &no, "inconclusive"
	_, svg, err := pg.Pareto.Render()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(svg, []byte(">budgets inconclusive<")) || !bytes.Contains(svg, []byte(">budgets missed<")) {
		t.Error("the Pareto plot does not mark the inconclusive value as such beside the missed one")
	}
}
