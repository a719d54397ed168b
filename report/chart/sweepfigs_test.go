package chart

import (
	"bytes"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gonum.org/v1/plot"
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
	pg.Sweep.Numeric = false // labels of three parameters, evenly spaced
	for i, v := range []string{"64", "128", "256", "512", "1024"} {
		pg.Sweep.Points[i].Label = "max_num_seqs=" + v + ",max_num_batched_tokens=16384,enable_chunked_prefill=true"
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

// layoutProbe is appended to a copy of sweep.html: it lists every two
// texts of a plot whose boxes overlap, and the values table's widths.
const layoutProbe = `<script>
(function () {
  var out = [];
  document.querySelectorAll("svg").forEach(function (svg) {
    var ts = Array.from(svg.querySelectorAll("text")).filter(function (t) { return t.textContent.trim() !== ""; });
    var rs = ts.map(function (t) { return t.getBoundingClientRect(); });
    for (var i = 0; i < ts.length; i++) for (var j = i + 1; j < ts.length; j++) {
      var a = rs[i], b = rs[j];
      var w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 0.5 && h > 0.5) out.push("overlap " + svg.closest("figure").id + ": " + JSON.stringify(ts[i].textContent) + " on " + JSON.stringify(ts[j].textContent));
    }
  });
  var tb = document.getElementById("values"), main = document.body.getBoundingClientRect();
  out.push("table " + tb.scrollWidth + " " + tb.clientWidth + " " + Math.ceil(tb.getBoundingClientRect().right) + " " + Math.ceil(main.right) + " " + document.documentElement.scrollWidth);
  var pre = document.createElement("pre"); pre.id = "layout"; pre.textContent = out.join("\n");
  document.body.append(pre);
})();
</script>
</body>`

// TestSweepHTMLLayoutInChromium opens sweep.html at a 1,366 px wide
// window in headless Chromium: no two texts of a plot overlap (tick
// labels, legend entries, point labels), and the values table fits its
// column, for the sample search, a sweep at one load (no Pareto plot)
// and the widest table (three parameters per value, eleven columns, a
// search's notes). Skipped without Chromium.
func TestSweepHTMLLayoutInChromium(t *testing.T) {
	t.Parallel()
	bin := chromiumBinary(t)
	for name, pg := range map[string]*SweepPage{"search": samplePage(), "one load": flatPage(), "wide": widePage()} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if err := WriteSweepHTML(&b, pg); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), SweepHTMLName)
			if err := os.WriteFile(path, bytes.Replace(b.Bytes(), []byte("</body>"), []byte(layoutProbe), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			dom, _ := runChromium(t, bin, path, "--dump-dom", "--window-size=1366,3000")
			m := regexp.MustCompile(`(?s)<pre id="layout">(.*?)</pre>`).FindSubmatch(dom)
			if m == nil {
				t.Fatal("no layout probe output in the page")
			}
			for _, line := range strings.Split(html.UnescapeString(string(m[1])), "\n") {
				if strings.HasPrefix(line, "overlap ") {
					t.Error(line)
				}
				var scroll, client, right, column, page int
				if _, err := fmt.Sscanf(line, "table %d %d %d %d %d", &scroll, &client, &right, &column, &page); err == nil {
					t.Logf("values table: %d px of content in %d px, right edge %d px, column's %d px, page %d px wide", scroll, client, right, column, page)
					if scroll > client || right > column || page > 1366 {
						t.Errorf("the values table does not fit 1,366 px: %d px of content in %d, right edge %d past the column's %d, page %d px", scroll, client, right, column, page)
					}
				}
			}
		})
	}
}

// TestCompactTicks: evenly spaced values named "a=1,b=2" keep only what
// varies, one parameter a line, and the axis title says the rest.
func TestCompactTicks(t *testing.T) {
	t.Parallel()
	var ticks []plot.Tick
	for i, l := range []string{"seqs=64,mnbt=2048,cp=true", "seqs=64,mnbt=8192,cp=true", "seqs=128,mnbt=2048,cp=true"} {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: l})
	}
	got, title := compactTicks(ticks, "seqs, mnbt, cp")
	if title != "seqs / mnbt (every value with cp=true)" || got[1].Label != "64\n8192" || got[2].Label != "128\n2048" {
		t.Errorf("compactTicks = %q, %q", title, []string{got[0].Label, got[1].Label, got[2].Label})
	}
	mixed := []plot.Tick{{Label: "seqs=64"}, {Label: "tp=2"}}
	if got, title := compactTicks(mixed, "seqs, tp"); got[0].Label != "seqs=64" || title != "seqs, tp" {
		t.Errorf("labels of different parameters changed: %q, %q", got[0].Label, title)
	}
}
