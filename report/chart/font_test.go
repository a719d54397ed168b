package chart

import (
	"regexp"
	"strings"
	"testing"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/correlate"
	"github.com/servebench/servebench/vllmlog"
)

// fontFamily finds every font family an SVG or a page names, in a style
// (font-family: X;) or an attribute (font-family="X").
var fontFamily = regexp.MustCompile(`font-family\s*(?::\s*((?:"[^"]*"|[^;"}])+)|=\s*"([^"]+)")`)

// families returns the distinct font families doc names, each with the
// first of its fallbacks only (the one a reader sees where it is
// installed), and how many texts name each.
func families(doc []byte) map[string]int {
	out := map[string]int{}
	for _, m := range fontFamily.FindAllSubmatch(doc, -1) {
		f := string(m[1])
		if f == "" {
			f = string(m[2])
		}
		first, _, _ := strings.Cut(f, ",")
		out[strings.Trim(strings.TrimSpace(first), `"'`)]++
	}
	return out
}

// everySVG renders every figure the package draws: a run's four plots
// (the preemption fixture), a sweep's trade-off, load and Pareto plots,
// and a server log's start-up and decay plots.
func everySVG(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	a, err := report.FromFiles("../testdata/preempt.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	figs, err := Figures(a, a.Summary())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range figs {
		out[f.Name] = f.SVG
	}
	pg := samplePage()
	for name, r := range map[string]interface {
		Render() ([]byte, []byte, error)
	}{"sweep": pg.Sweep, "load": pg.Load, "pareto": pg.Pareto} {
		_, svg, err := r.Render()
		if err != nil {
			t.Fatal(err)
		}
		out[name] = svg
	}
	fit := correlate.FitDecode([]correlate.Window{
		{Decoding: 6, OutputTokensPerSec: 544.8, ContextSum: 10398}, {Decoding: 6, OutputTokensPerSec: 468, ContextSum: 55000},
		{Decoding: 6, OutputTokensPerSec: 396, ContextSum: 107000}, {Decoding: 6, OutputTokensPerSec: 348.6, ContextSum: 154445}})
	if _, svg, err := RenderStartup(&vllmlog.StartupPlot{Title: "start-up", Phases: []vllmlog.StartupPhase{
		{Name: "engine start", Seconds: 100}, {Name: "weight loading", Seconds: 545}}}); err == nil {
		out["startup"] = svg
	} else {
		t.Fatal(err)
	}
	if _, svg, err := RenderLogDecay(&vllmlog.LogDecayPlot{Title: "decay", XLabel: "context", Streams: 6, Fit: fit,
		Points: []vllmlog.LogDecayPoint{{X: 10398, TokensPerSec: 544.8}, {X: 154445, TokensPerSec: 348.6}}}); err == nil {
		out["log-decay"] = svg
	} else {
		t.Fatal(err)
	}
	return out
}

// TestOneFont reads the font family of every text in every SVG the
// package draws, and the pages' own: one family, the one report.html and
// sweep.html name first, everywhere (gonum's default is a serif).
func TestOneFont(t *testing.T) {
	if raceEnabled {
		t.Skip("under -race: the plain pass reads every drawing's fonts; the drawing code races are the other tests'")
	}
	t.Parallel()
	want := string(plotFont().Typeface) + " " + string(plotFont().Variant) // "Liberation Sans"
	for name, svg := range everySVG(t) {
		got := families(svg)
		if len(got) == 0 {
			t.Errorf("%s.svg names no font family", name)
		}
		for f, n := range got {
			if f != want {
				t.Errorf("%s.svg: %d texts in %q, want %q", name, n, f, want)
			}
		}
	}
	_, page := fixtureHTML(t)
	_, sweepPage := writeSample(t)
	for name, doc := range map[string][]byte{"report.html": page, "sweep.html": []byte(sweepPage)} {
		for f, n := range families(doc) {
			if f != want && f != "ui-monospace" { // the error messages' column is monospace on purpose
				t.Errorf("%s: %d texts in %q, want %q", name, n, f, want)
			}
		}
	}
}
