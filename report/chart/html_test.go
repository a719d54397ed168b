package chart

import (
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/scenario"

	"bytes"
	"context"
	"encoding/json"
	"flag"
	"html"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// screenshot names a PNG file for TestHTMLInChromium to keep its
// screenshot in, for a person to look at:
//
//	go test ./report/chart -run Chromium -screenshot /tmp/report.png
var screenshotFile = flag.String("screenshot", "", "write report.html's screenshot to this PNG file")

// fixtureBudgets are budgets for the preemption fixture: the TTFT one
// passes (p99 15.8 ms), the E2E one fails (p99 1,850 ms).
const fixtureBudgets = `name: preempt
load:
  stages:
    - {name: fits, concurrency: 3, requests: 9}
    - {name: overflows, concurrency: 8, requests: 16}
budgets:
  overall:
    ttft_ms: {p99: 20}
    e2e_ms: {p99: 1500}
`

// fixtureHTML writes the report of the preemption fixture, judged against
// fixtureBudgets, and returns its path and bytes.
func fixtureHTML(t *testing.T) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	a, err := report.FromFiles("../testdata/preempt.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Parse("budgets.yaml", []byte(fixtureBudgets))
	if err != nil {
		t.Fatal(err)
	}
	s := a.Summary()
	s.Verdict = a.Evaluate(s, sc.Budgets, sc.SLO)
	if _, err := WriteFiles(dir, a, s); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, HTMLName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

// TestHTMLContent checks the page's parts and that it loads nothing from
// anywhere: no src, href, url(), @import, <link> or <script>.
func TestHTMLContent(t *testing.T) {
	t.Parallel()
	_, page := fixtureHTML(t)
	s := string(page)
	for _, want := range []string{
		`<p class="conclusion" id="conclusion">Saturated in stage &#34;overflows&#34;`, // the conclusion opens the page
		`<table class="about" id="about">`, `<th scope="row">load</th><td>fits: closed loop, 3 workers; 9 requests<br>overflows: closed loop, 8 workers; 16 requests</td>`,
		`<th scope="row">output tokens</th><td>asked max_tokens 400; measured 400 each</td>`,
		`<h2>Summary</h2>`, `<table id="summary">`, `<td>overflows</td>`, // summary table rows
		`<table id="throughput">`, `<td>overflows</td><td>4.71</td><td>1,883</td><td>2,296</td><td>2,353</td><td>8</td>`,
		`<table id="latency">`, `<th>mean</th><th title="standard deviation, of the population (as vLLM's std_*_ms)">std</th><th>p50</th><th>p90</th><th>p99</th>`,
		`<td title="time to first token, sent → first content or reasoning">TTFT</td><td>fits</td><td>9</td><td>4.56</td><td>0.68</td><td>4.63</td><td>5.47</td><td>5.49</td>`,
		`<th title="inter-token latency, per token">ITL p50</th>`,                                   // hover titles on the columns
		`<h2 id="verdict">Budgets: <span class="fail">FAIL</span></h2>`,                             // the budget verdict
		`<ul class="findings" id="findings">`, "The server preempted 4 times", "seq 12, 15, 23, 24", // findings
		`<table id="stages">`,
		`<figure id="plot-timeline" `, `<figure id="plot-decay" `, `<figure id="plot-latency" `, `<figure id="plot-stages" `,
		`id="errors"`,
		`<pre id="scenario">`, `&#34;name&#34;: &#34;preempt&#34;`, // the resolved scenario, escaped
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if n := strings.Count(s, "Saturated in stage"); n != 1 {
		t.Errorf("the conclusion is stated %d times, want once (it opens the page, not the findings)", n)
	}
	if n := strings.Count(s, `<svg class="plot"`); n != 4 {
		t.Errorf("%d inline SVG plots, want 4", n)
	}
	external := regexp.MustCompile(`(?i)(\ssrc\s*=|\shref\s*=|url\(|@import|<link|<iframe|<img|fetch\(|XMLHttpRequest|import\(|WebSocket)`)
	if m := external.FindAllString(s, 5); len(m) > 0 {
		t.Errorf("report.html references external resources: %q", m)
	}
	if n := strings.Count(s, "<script"); n != 1 || !strings.Contains(s, "<script>\n(function () {") {
		t.Errorf("report.html has %d scripts, want the one inline readout script", n)
	}
	for _, name := range PlotNames() {
		if !regexp.MustCompile(`<figure id="plot-` + name + `" data-panels="\[\{`).MatchString(s) {
			t.Errorf("plot %s has no panels for the readout", name)
		}
	}
	if !strings.Contains(s, "<title>Output tok/s, each request&#39;s TTFT") {
		t.Error("the timeline's SVG has no <title> (the browser's tooltip)")
	}
}

// TestHTMLInChromium opens the report in headless Chromium: the page must
// log nothing to the console, its DOM must hold the four plots, and a
// screenshot must show them (pixels of the plots' line colours). It is
// skipped when Chromium is not installed; CI installs it with
// `apt-get install -y chromium`.
func TestHTMLInChromium(t *testing.T) {
	t.Parallel()
	bin := chromiumBinary(t)
	path, _ := fixtureHTML(t)
	dir := t.TempDir()
	chrome := func(args ...string) (stdout, stderr []byte) {
		t.Helper()
		return runChromium(t, bin, path, args...)
	}

	dom, logs := chrome("--dump-dom")
	for _, line := range strings.Split(string(logs), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			t.Errorf("console message: %s", line)
		}
	}
	if n := bytes.Count(dom, []byte(`<svg class="plot"`)); n != 4 {
		t.Errorf("rendered DOM holds %d plots, want 4", n)
	}
	// What a reader must find: the conclusion, the workload box, mean and
	// std beside the percentiles, and the budget verdict.
	for _, want := range []string{`id="conclusion"`, `<table class="about" id="about">`, `<th scope="row">server</th>`,
		`<th>mean</th><th title="standard deviation, of the population (as vLLM's std_*_ms)">std</th><th>p50</th><th>p90</th><th>p99</th>`, `<h2 id="verdict">Budgets: <span class="fail">FAIL</span></h2>`} {
		if !bytes.Contains(dom, []byte(want)) {
			t.Errorf("rendered DOM lacks %q", want)
		}
	}

	// Point at the middle of the timeline's first panel, from a script
	// appended to a copy of the page: the readout must give the time and
	// the tok/s there; a click must enlarge the plot.
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	probe := `<script>
(function () {
  var fig = document.getElementById("plot-timeline"), svg = fig.querySelector("svg");
  var p = JSON.parse(fig.dataset.panels)[0], pt = svg.createSVGPoint();
  pt.x = (p.l + p.r) / 2; pt.y = (p.t + p.b) / 2;
  var s = pt.matrixTransform(svg.getScreenCTM());
  var out = document.createElement("pre"); out.id = "probe"; out.textContent = fig.readout(s.x, s.y);
  fig.click();
  var before = svg.getAttribute("viewBox");
  var c = svg.getBoundingClientRect();
  fig.zoom(c.left + c.width / 2, c.top + c.height / 2, 0.5);
  var z = document.createElement("pre"); z.id = "zoom";
  z.textContent = "zoomed=" + fig.classList.contains("zoomed") + " viewBox " + before + " → " + svg.getAttribute("viewBox");
  document.body.append(out, z);
})();
</script>
</body>`
	probePath := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(probePath, bytes.Replace(page, []byte("</body>"), []byte(probe), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	probeDOM, probeLogs := runChromium(t, bin, probePath, "--dump-dom")
	for _, line := range strings.Split(string(probeLogs), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			t.Errorf("console message: %s", line)
		}
	}
	m := regexp.MustCompile(`<pre id="probe">time since start \(s\) ([0-9.]+) · output tok/s ([0-9,]+)</pre>`).FindSubmatch(probeDOM)
	if m == nil {
		i := bytes.Index(probeDOM, []byte(`<pre id="probe">`))
		t.Fatalf("no readout in the probed page: %q", probeDOM[max(i, 0):min(max(i, 0)+200, len(probeDOM))])
	}
	var panels []Panel
	if err := json.Unmarshal([]byte(html.UnescapeString(regexp.MustCompile(`<figure id="plot-timeline" data-panels="([^"]*)"`).FindStringSubmatch(string(page))[1])), &panels); err != nil {
		t.Fatal(err)
	}
	near := func(got string, want float64) bool {
		v, err := strconv.ParseFloat(strings.ReplaceAll(got, ",", ""), 64)
		return err == nil && math.Abs(v-want) <= 0.01*math.Abs(want)+0.01
	}
	p := panels[0]
	if !near(string(m[1]), (p.XMin+p.XMax)/2) || !near(string(m[2]), (p.YMin+p.YMax)/2) {
		t.Errorf("readout %q at the panel's middle, want time %.2f s and %.0f tok/s", m[0], (p.XMin+p.XMax)/2, (p.YMin+p.YMax)/2)
	}
	// Enlarged, zooming by half about the middle halves the viewBox about
	// its centre.
	z := regexp.MustCompile(`<pre id="zoom">zoomed=(\w+) viewBox 0 0 ([0-9.]+) ([0-9.]+) → ([-0-9.]+) ([-0-9.]+) ([0-9.]+) ([0-9.]+)</pre>`).FindSubmatch(probeDOM)
	switch {
	case z == nil:
		t.Error("no zoom probe in the page")
	case string(z[1]) != "true":
		t.Error("a click does not enlarge the plot")
	default:
		f := make([]float64, 7)
		for i := 2; i < len(z); i++ {
			f[i-2], _ = strconv.ParseFloat(string(z[i]), 64)
		}
		w, h, x, y, nw, nh := f[0], f[1], f[2], f[3], f[4], f[5]
		if math.Abs(nw-w/2) > 1 || math.Abs(nh-h/2) > 1 || math.Abs(x+nw/2-w/2) > w*0.02 || math.Abs(y+nh/2-h/2) > h*0.02 {
			t.Errorf("zoom by half about the middle: viewBox %q", z[0])
		}
	}

	shot := filepath.Join(dir, "shot.png")
	if *screenshotFile != "" {
		shot = *screenshotFile
	}
	chrome("--screenshot=" + shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The timeline's client line and the bars are palette blue
	// (0, 114, 178); text and tables never are.
	n := countNear(img, 0, 114, 178)
	t.Logf("%d plot-blue pixels in the screenshot", n)
	if n < 2000 {
		t.Errorf("screenshot has %d plot-blue pixels, want ≥ 2000: the plots are not shown", n)
	}
}

// chromiumBinary finds headless Chromium or skips the test politely.
func chromiumBinary(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium not installed (apt-get install -y chromium)")
	return ""
}

// runChromium opens the page at path in headless Chromium with args
// (--dump-dom, --screenshot=FILE) and returns what it printed.
func runChromium(t *testing.T, bin, path string, args ...string) (stdout, stderr []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0", "--window-size=1200,6000"}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), "file://"+path)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.Bytes(), errb.Bytes()
}

// screenshot opens the page and decodes Chromium's screenshot of it.
func screenshot(t *testing.T, bin, path string) image.Image {
	t.Helper()
	shot := filepath.Join(t.TempDir(), "shot.png")
	runChromium(t, bin, path, "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func countNear(img image.Image, r, g, b int) int { return countWithin(img, r, g, b, 24) }

// countWithin counts the pixels whose every channel is within tol of
// (r, g, b).
func countWithin(img image.Image, r, g, b, tol int) int {
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if iabs(int(cr>>8)-r) < tol && iabs(int(cg>>8)-g) < tol && iabs(int(cb>>8)-b) < tol {
				n++
			}
		}
	}
	return n
}

func iabs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
