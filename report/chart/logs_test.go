package chart

import (
	"bytes"
	"image/png"
	"math"
	"strings"
	"testing"

	"github.com/servebench/servebench/report/correlate"
	"github.com/servebench/servebench/vllmlog"
)

// TestLogPlots renders the start-up bar chart and the log's decay plot:
// valid PNG and SVG holding the phase names and the fitted law.
func TestLogPlots(t *testing.T) {
	t.Parallel()
	startup := &vllmlog.StartupPlot{Title: "Where start-up time went", Phases: []vllmlog.StartupPhase{
		{Name: "API server and engine start", Seconds: 100}, {Name: "weight loading", Seconds: 545.24}, {Name: "torch.compile", Seconds: 63.97}}}
	fit := correlate.FitDecode([]correlate.Window{
		{Decoding: 6, OutputTokensPerSec: 544.8, ContextSum: 10398}, {Decoding: 6, OutputTokensPerSec: 468, ContextSum: 55000},
		{Decoding: 6, OutputTokensPerSec: 396, ContextSum: 107000}, {Decoding: 6, OutputTokensPerSec: 348.6, ContextSum: 154445}})
	decay := &vllmlog.LogDecayPlot{Title: "decay", XLabel: "context in flight", Streams: 6, Fit: fit,
		Points: []vllmlog.LogDecayPoint{{X: 10398, TokensPerSec: 544.8}, {X: 55000, TokensPerSec: 468}, {X: 107000, TokensPerSec: 396}, {X: 154445, TokensPerSec: 348.6}, {X: math.NaN(), TokensPerSec: 1}}}
	for _, tc := range []struct {
		name   string
		render func() ([]byte, []byte, error)
		want   []string
	}{
		{"startup", func() ([]byte, []byte, error) { return RenderStartup(startup) }, []string{"weight loading", "545.24 s (77 %)"}},
		{"decay", func() ([]byte, []byte, error) { return RenderLogDecay(decay) }, []string{"stats lines", "fit: 6 requests"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pngData, svgData, err := tc.render()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := png.Decode(bytes.NewReader(pngData)); err != nil {
				t.Errorf("png: %v", err)
			}
			if err := wellFormedXML(svgData); err != nil {
				t.Errorf("svg: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(svgData), w) {
					t.Errorf("the SVG lacks %q", w)
				}
			}
		})
	}
	if _, _, err := RenderStartup(&vllmlog.StartupPlot{}); err == nil {
		t.Error("a start-up plot without phases renders")
	}
	if _, _, err := RenderLogDecay(&vllmlog.LogDecayPlot{Points: []vllmlog.LogDecayPoint{{X: math.NaN(), TokensPerSec: 1}}}); err == nil {
		t.Error("a decay plot without points renders")
	}
}
