package chart

import (
	"bytes"
	"image/png"
	"math"
	"strings"
	"testing"

	"github.com/servebench/servebench/report/correlate"
)

// TestLogPlots renders the start-up bar chart and the log's decay plot:
// valid PNG and SVG holding the phase names and the fitted law.
func TestLogPlots(t *testing.T) {
	t.Parallel()
	startup := &StartupPlot{Title: "Where start-up time went", Phases: []StartupPhase{
		{"API server and engine start", 100}, {"weight loading", 545.24}, {"torch.compile", 63.97}}}
	fit := correlate.FitDecode([]correlate.Window{
		{Decoding: 6, OutputTokensPerSec: 544.8, ContextSum: 10398}, {Decoding: 6, OutputTokensPerSec: 468, ContextSum: 55000},
		{Decoding: 6, OutputTokensPerSec: 396, ContextSum: 107000}, {Decoding: 6, OutputTokensPerSec: 348.6, ContextSum: 154445}})
	decay := &LogDecayPlot{Title: "decay", XLabel: "context in flight", Streams: 6, Fit: fit,
		Points: []LogDecayPoint{{10398, 544.8}, {55000, 468}, {107000, 396}, {154445, 348.6}, {math.NaN(), 1}}}
	for _, tc := range []struct {
		name   string
		render func() ([]byte, []byte, error)
		want   []string
	}{
		{"startup", startup.Render, []string{"weight loading", "545.24 s (77 %)"}},
		{"decay", decay.Render, []string{"stats lines", "fit: 6 requests"}},
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
	if _, _, err := (&StartupPlot{}).Render(); err == nil {
		t.Error("a start-up plot without phases renders")
	}
	if _, _, err := (&LogDecayPlot{Points: []LogDecayPoint{{math.NaN(), 1}}}).Render(); err == nil {
		t.Error("a decay plot without points renders")
	}
}
