package chart

import (
	"github.com/servebench/servebench/report"

	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func fixtureHTML(t *testing.T) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	a, err := report.FromFiles("../testdata/preempt.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WriteFiles(dir, a, a.Summary()); err != nil {
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
		`<h2>Summary</h2>`, `<table id="summary">`, `<td>overflows</td>`, // summary table rows
		`<ul class="findings" id="findings">`, "The server preempted 4 times", "seq 12, 15, 23, 24", // findings
		`<table id="stages">`,
		`<figure id="plot-timeline">`, `<figure id="plot-decay">`, `<figure id="plot-latency">`, `<figure id="plot-stages">`,
		`id="errors"`,
		`<pre id="scenario">`, `&#34;name&#34;: &#34;preempt&#34;`, // the resolved scenario, escaped
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if n := strings.Count(s, `<svg class="plot"`); n != 4 {
		t.Errorf("%d inline SVG plots, want 4", n)
	}
	external := regexp.MustCompile(`(?i)(\ssrc\s*=|\shref\s*=|url\(|@import|<link|<script|<iframe|<img)`)
	if m := external.FindAllString(s, 5); len(m) > 0 {
		t.Errorf("report.html references external resources: %q", m)
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
	dom, logs := runChromium(t, bin, path, "--dump-dom")
	for _, line := range strings.Split(string(logs), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			t.Errorf("console message: %s", line)
		}
	}
	if n := bytes.Count(dom, []byte(`<svg class="plot"`)); n != 4 {
		t.Errorf("rendered DOM holds %d plots, want 4", n)
	}

	img := screenshot(t, bin, path)
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
