package chart

import (
	"bytes"
	"strings"
	"testing"
)

// TestSweepPlotBudgetedPercentile: a TTFT budget on the p90 draws the
// p90 on the TTFT panel (not the p99), while the ITL panel, whose budget
// is on the p99, keeps the p99; without a budget naming another
// statistic both panels draw the p50 and the p99.
func TestSweepPlotBudgetedPercentile(t *testing.T) {
	t.Parallel()
	sp := samplePage().Sweep
	sp.Budgets = []SweepBudget{{Panel: "ttft", Stat: "p90", Name: "TTFT p90 ≤ 150 ms", Limit: 150}, {Panel: "itl", Stat: "p99", Name: "ITL p99 ≤ 12 ms", Limit: 12}}
	for i := range sp.Points {
		sp.Points[i].Stats = map[string]float64{"ttft.p90": sp.Points[i].TTFTP99 * 0.8}
	}
	legend := func(sp *SweepPlot) (p90, p99 int) {
		_, svg, err := sp.Render()
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(svg, []byte(">p90<")), bytes.Count(svg, []byte(">p99<"))
	}
	if p90, p99 := legend(sp); p90 != 1 || p99 != 1 {
		t.Errorf("budget on the TTFT p90: legends name p90 %d and p99 %d times, want once each (TTFT: p90; ITL: p99)", p90, p99)
	}
	sp.Points[2].Stats = nil // a point without the figure: the panel cannot draw it
	if p90, p99 := legend(sp); p90 != 0 || p99 != 2 {
		t.Errorf("the p90 missing at one value: legends name p90 %d and p99 %d times, want 0 and 2", p90, p99)
	}
	sp.Budgets = nil
	if p90, p99 := legend(sp); p90 != 0 || p99 != 2 {
		t.Errorf("no budgets: legends name p90 %d and p99 %d times, want 0 and 2", p90, p99)
	}
}

// TestParetoFlat: a sweep whose every value serves the same load (total
// output within 2 %) gets no Pareto plot, and sweep.html says why in a
// sentence instead.
func TestParetoFlat(t *testing.T) {
	t.Parallel()
	pg := samplePage()
	if why := pg.Pareto.Flat(); why != "" {
		t.Errorf("a search from 500 to 1,700 tok/s is called flat: %s", why)
	}
	pg = flatPage()
	why := pg.Pareto.Flat()
	if !strings.Contains(why, "every value served the same total output (714–715 tok/s, within 2 %)") {
		t.Errorf("Flat() = %q", why)
	}
	var b bytes.Buffer
	if err := WriteSweepHTML(&b, pg); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); strings.Contains(s, `id="plot-pareto"`) || !strings.Contains(s, `<p class="note omitted">No Pareto plot: every value served the same total output`) {
		t.Error("sweep.html draws the flat Pareto plot, or does not say why it has none")
	}
}

// TestParetoLabels: labels that would overlap are left out, and the plot
// says how many; spread points keep every label.
func TestParetoLabels(t *testing.T) {
	t.Parallel()
	pp := samplePage().Pareto
	if _, _, err := pp.Render(); err != nil {
		t.Fatal(err)
	}
	if pp.omitted != 0 || pp.LabelsNote() != "" {
		t.Errorf("the sample's five labels: %d left out (%q), want none", pp.omitted, pp.LabelsNote())
	}
	// Forty values crowded on a short stretch of the frontier.
	var pts []LoadPoint
	for i := range 40 {
		pts = append(pts, LoadPoint{Label: "max_num_seqs=" + strings.Repeat("9", 1+i%3), Load: 1, TPOTP50: 10 + float64(i%4)*0.1,
			OutputTokensPerSec: 1000 + float64(i)})
	}
	pp = &ParetoPlot{Title: "crowded", Series: []LoadSeries{{Points: pts}}}
	_, svg, err := pp.Render()
	if err != nil {
		t.Fatal(err)
	}
	drawn := bytes.Count(svg, []byte(">max_num_seqs="))
	if pp.omitted == 0 || drawn+pp.omitted != 40 {
		t.Errorf("crowded: %d labels drawn, %d left out; want some left out and 40 in all", drawn, pp.omitted)
	}
	if note := pp.LabelsNote(); !strings.Contains(note, "left out where they would have overlapped") {
		t.Errorf("LabelsNote() = %q", note)
	}
}

// flatPage is a sweep of a server setting at one offered load, as
// scenarios/mnbt-sweep.yaml runs: every value serves 714–715 tok/s.
func flatPage() *SweepPage {
	pg := samplePage()
	var pts []LoadPoint
	for i, v := range []string{"1024", "2048", "4096", "8192", "16384"} {
		pts = append(pts, LoadPoint{Label: v, Load: 2.42, TTFTP50: 190 - 10*float64(i), TTFTP99: 500, ITLP50: 6.7, ITLP99: 30 + 25*float64(i),
			TPOTP50: 9.2 - 0.01*float64(i), OutputTokensPerSec: 714 + 0.3*float64(i)})
	}
	pg.Pareto = &ParetoPlot{Title: "flat", Series: []LoadSeries{{Points: pts}}}
	pg.Load = nil
	return pg
}

// widePage is sweep.html at its widest: three parameters in every label,
// the eleven columns package sweep fills, and a search's notes.
func widePage() *SweepPage {
	pg := samplePage()
	pg.Columns = []string{"runs", "ok", "failed", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "TPOT p50", "tok/s per user", "output tok/s", "req/s"}
	pg.Rows = nil
	yes, no := true, false
	for i, v := range []string{"64", "128", "256", "512", "1024"} {
		pass := &yes
		if i > 2 {
			pass = &no
		}
		pg.Rows = append(pg.Rows, SweepPageRow{
			Label: "max_num_seqs=" + v + ",max_num_batched_tokens=16384,enable_chunked_prefill=true",
			Cells: []string{"3", "1,234.5", "12.3", "12,345.6", "23,456.7", "123.4", "1,234.5", "123.4", "12.3", "12,345.6", "123.45"},
			Pass:  pass, Marked: i == 2,
			Note: "majority 2 of 3 (2 of 3 runs passed); near the boundary: overall.ttft_ms.p99 from 150 samples (fewer than 200), overall.itl_ms.p99",
		})
	}
	return pg
}
