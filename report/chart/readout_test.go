package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/servebench/servebench/report"
)

// readoutProbe is appended to a copy of report.html: it moves the mouse
// to a few points beside a point of the timeline's first series, reads
// the readout shown, then enlarges the plot, zooms its first panel by
// half about the panel's middle and reads the ticks the zoomed panel
// draws; last it reads the readout beside a bar of the stages plot.
const readoutProbe = `<script>
(function () {
  var fig = document.getElementById("plot-timeline"), svg = fig.querySelector("svg");
  var p = JSON.parse(fig.dataset.panels)[0], s = p.s[0];
  var i = 2 * Math.floor(s.p.length / 4), x = s.p[i], y = s.p[i + 1];
  var pt = svg.createSVGPoint();
  pt.x = p.l + (x - p.x0) / (p.x1 - p.x0) * (p.r - p.l) + 3;
  pt.y = p.b - (y - p.y0) / (p.y1 - p.y0) * (p.b - p.t) + 2;
  var sc = pt.matrixTransform(svg.getScreenCTM());
  var out = [];
  out.push("pointer " + pt.x + " " + pt.y);
  svg.dispatchEvent(new MouseEvent("mousemove", {clientX: sc.x, clientY: sc.y, bubbles: true}));
  var tip = fig.querySelector(".readout");
  out.push("readout " + (tip.style.display === "block" ? tip.textContent : ""));
  out.push("ring " + svg.querySelectorAll("circle.hover").length);
  var before = svg.getAttribute("viewBox");
  fig.click();
  var mid = svg.createSVGPoint();
  mid.x = (p.l + p.r) / 2; mid.y = (p.t + p.b) / 2;
  var ms = mid.matrixTransform(svg.getScreenCTM());
  out.push("zoomed " + fig.classList.contains("zoomed") + " " + fig.zoom(ms.x, ms.y, 0.5));
  out.push("viewBox " + before + " | " + svg.getAttribute("viewBox"));
  var gs = svg.querySelectorAll("g.zoomed-panel");
  out.push("redrawn " + gs.length);
  out.push("xticks " + Array.from(gs[0].querySelectorAll("text.tick-x")).map(function (t) { return t.textContent; }).join(" "));
  out.push("yticks " + Array.from(gs[0].querySelectorAll("text.tick-y")).map(function (t) { return t.textContent; }).join(" "));
  fig.unzoom();
  out.push("unzoomed " + svg.querySelectorAll("g.zoomed-panel").length);
  var bf = document.getElementById("plot-stages"), bs = bf.querySelector("svg");
  var bp = JSON.parse(bf.dataset.panels)[0], b = bp.s[1];
  var bq = bs.createSVGPoint();
  bq.x = bp.l + (b.p[2] - bp.x0) / (bp.x1 - bp.x0) * (bp.r - bp.l) + b.o + 3;
  bq.y = bp.b - (b.p[3] - bp.y0) / (bp.y1 - bp.y0) * (bp.b - bp.t) + 5;
  var bsc = bq.matrixTransform(bs.getScreenCTM());
  out.push("bar " + bf.readout(bsc.x, bsc.y));
  var pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = out.join("\n");
  document.body.append(pre);
})();
</script>
</body>`

// probeReadoutAndZoom runs readoutProbe on the report at path: the
// readout must name the series and the values of the data point nearest
// the pointer (not the pointer's position), with a ring on the point; the
// zoom must leave the picture's viewBox alone (no magnifying) and redraw
// the timeline's panels, which share the time axis, with ticks inside the
// halved range.
func probeReadoutAndZoom(t *testing.T, bin, path string) {
	t.Helper()
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	probePath := filepath.Join(t.TempDir(), "probe.html")
	if err := os.WriteFile(probePath, bytes.Replace(page, []byte("</body>"), []byte(readoutProbe), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, logs := runChromium(t, bin, probePath, "--dump-dom")
	for _, line := range strings.Split(string(logs), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			t.Errorf("console message: %s", line)
		}
	}
	m := regexp.MustCompile(`(?s)<pre id="probe">(.*?)</pre>`).FindSubmatch(dom)
	if m == nil {
		t.Fatal("no probe output in the page")
	}
	lines := map[string]string{}
	for _, l := range strings.Split(html.UnescapeString(string(m[1])), "\n") {
		k, v, _ := strings.Cut(l, " ")
		lines[k] = v
	}
	var panels []Panel
	attr := regexp.MustCompile(`<figure id="plot-timeline" data-panels="([^"]*)"`).FindSubmatch(page)
	if err := json.Unmarshal([]byte(html.UnescapeString(string(attr[1]))), &panels); err != nil {
		t.Fatal(err)
	}
	p := panels[0]

	// The readout: the nearest point's series and values.
	var px, py float64
	if _, err := fmt.Sscan(lines["pointer"], &px, &py); err != nil {
		t.Fatalf("pointer %q: %v", lines["pointer"], err)
	}
	name, x, y := nearestPoint(p, px, py)
	want := name + " · " + p.XName + " " + jsFmt(x) + " · " + p.YName + " " + jsFmt(y)
	if got := lines["readout"]; got != want {
		t.Errorf("readout %q beside a point, want the point's own %q", got, want)
	}
	at := p.XMin + (px-p.Left)/(p.Right-p.Left)*(p.XMax-p.XMin)
	if jsFmt(at) == jsFmt(x) {
		t.Logf("the pointer's time %s formats as the point's %s: the check of x cannot tell them apart", jsFmt(at), jsFmt(x))
	}
	if lines["ring"] != "1" {
		t.Errorf("%s rings on the point read, want 1", lines["ring"])
	}

	// A bar of the stages plot: its statistic, stage and value.
	var stages []Panel
	attr = regexp.MustCompile(`<figure id="plot-stages" data-panels="([^"]*)"`).FindSubmatch(page)
	if err := json.Unmarshal([]byte(html.UnescapeString(string(attr[1]))), &stages); err != nil {
		t.Fatal(err)
	}
	bar := stages[0].Series[1]
	if want := bar.Name + " · " + stages[0].XLabels[1] + " · " + stages[0].YName + " " + jsFmt(bar.XY[3]); lines["bar"] != want {
		t.Errorf("readout %q beside a bar, want %q", lines["bar"], want)
	}

	// The zoom: the same viewBox, the time axis redrawn on every panel.
	if lines["zoomed"] != "true true" {
		t.Errorf("click and zoom: %q, want the plot enlarged and zoomed", lines["zoomed"])
	}
	if vb := strings.Split(lines["viewBox"], " | "); len(vb) != 2 || vb[0] != vb[1] {
		t.Errorf("viewBox %q: the zoom magnified the picture", lines["viewBox"])
	}
	if lines["redrawn"] != strconv.Itoa(len(panels)) {
		t.Errorf("%s panels redrawn, want all %d (they share the time axis)", lines["redrawn"], len(panels))
	}
	mid, half := (p.XMin+p.XMax)/2, (p.XMax-p.XMin)/4
	xt := strings.Fields(lines["xticks"])
	if len(xt) < 3 {
		t.Errorf("zoomed x ticks %q, want several", xt)
	}
	for _, s := range xt {
		v, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
		if err != nil || v < mid-half-1e-9 || v > mid+half+1e-9 {
			t.Errorf("zoomed x tick %q outside the halved range [%g, %g]", s, mid-half, mid+half)
		}
	}
	if len(strings.Fields(lines["yticks"])) < 3 {
		t.Errorf("zoomed y ticks %q, want several", lines["yticks"])
	}
	if lines["unzoomed"] != "0" {
		t.Errorf("%s panels still redrawn after unzoom", lines["unzoomed"])
	}
}

// nearestPoint is the data point of p nearest (px, py) in the SVG's
// coordinates, as the page's script finds it.
func nearestPoint(p Panel, px, py float64) (name string, x, y float64) {
	best := math.Inf(1)
	for _, s := range p.Series {
		for i := 0; i+1 < len(s.XY); i += 2 {
			sx := p.Left + (s.XY[i]-p.XMin)/(p.XMax-p.XMin)*(p.Right-p.Left)
			sy := p.Bottom - (s.XY[i+1]-p.YMin)/(p.YMax-p.YMin)*(p.Bottom-p.Top)
			if d := (sx-px)*(sx-px) + (sy-py)*(sy-py); d < best {
				best, name, x, y = d, s.Name, s.XY[i], s.XY[i+1]
			}
		}
	}
	return name, x, y
}

// jsFmt formats v as the page's script does.
func jsFmt(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1000:
		return report.FormatNumber(math.Round(v))
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a == 0:
		return "0"
	}
	return strconv.FormatFloat(v, 'f', max(0, 2-int(math.Floor(math.Log10(a)))), 64) // toPrecision(3)
}
