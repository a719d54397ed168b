package sweep

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/servebench/servebench/internal/atomicfile"
	"github.com/servebench/servebench/report/chart"
)

// Figure builds the trade-off plot of a sweep summary: one point per
// combination. With a single numeric parameter the points sit at their
// values; otherwise they are evenly spaced and labelled.
func Figure(s *Summary) *chart.SweepPlot {
	sp := &chart.SweepPlot{
		Title:       fmt.Sprintf("sweep %q: latency and throughput against %s", s.Scenario, strings.Join(s.Parameters, ", ")),
		XLabel:      strings.Join(s.Parameters, ", "),
		Recommended: -1,
	}
	var single []string
	for i, p := range s.Points {
		pt := chart.SweepPlotPoint{Label: p.Label, Missing: p.Metrics == nil}
		if len(s.Parameters) == 1 {
			pt.Label = p.Values[s.Parameters[0]]
			single = append(single, pt.Label)
		}
		if m := p.Metrics; m != nil {
			pt.TTFTP50, pt.TTFTP99, pt.ITLP50, pt.ITLP99 = m.TTFTP50, m.TTFTP99, m.ITLP50, m.ITLP99
			pt.OutputTokensPerSec = m.OutputTokensPerSec
		}
		if s.Recommendation.Label != "" && p.Label == s.Recommendation.Label {
			sp.Recommended = i
		}
		sp.Points = append(sp.Points, pt)
	}
	if xs, ok := chart.SweepX(single); ok && len(single) == len(sp.Points) {
		sp.Numeric = true
		for i := range sp.Points {
			sp.Points[i].X = xs[i]
		}
	}
	return sp
}

// plot writes sweep.png and sweep.svg; nothing when no run produced figures.
func (p *Plan) plot(dir string, s *Summary) error {
	have := false
	for _, pt := range s.Points {
		have = have || pt.Metrics != nil
	}
	if !have {
		return nil
	}
	png, svg, err := Figure(s).Render()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, FilePNG), png); err != nil {
		return fmt.Errorf("sweep plot: %w", err)
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, FileSVG), svg); err != nil {
		return fmt.Errorf("sweep plot: %w", err)
	}
	return nil
}
