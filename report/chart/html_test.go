package chart

import (
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/scenario"

	"bytes"
	"context"
	"flag"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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
		`<ul class="findings" id="details">`, "Decode time per token per stream", "Pearson r", // the analyst's detail
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
// log nothing to the console, its DOM must hold the four plots, hovering
// a point must read that point's value, zooming must rescale the axes,
// and a screenshot must show the plots (pixels of their line colours). It
// is skipped when Chromium is not installed; CI installs it with
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

	probeReadoutAndZoom(t, bin, path)

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

// chromiumBinary finds headless Chromium or skips the test politely (and
// under -race, where the plain pass runs the browser checks).
func chromiumBinary(t *testing.T) string {
	t.Helper()
	if raceEnabled {
		t.Skip("under -race: the browser checks run in the plain pass (a browser runs no Go code to race)")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium not installed (apt-get install -y chromium)")
	return ""
}

// runChromium opens the page at path in headless Chromium with args
// (--dump-dom, --screenshot=FILE, --window-size=W,H; 1200 × 6000 by
// default) and returns what it printed.
func runChromium(t *testing.T, bin, path string, args ...string) (stdout, stderr []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0"}
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--window-size=") }) {
		base = append(base, "--window-size=1200,6000")
	}
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
