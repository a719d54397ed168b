package chart

import (
	"fmt"
	"math"
	"net/url"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/servebench/servebench/report/correlate"
)

// gpuPanelHeight is what each per-GPU panel adds to the timeline's
// height, inches.
const gpuPanelHeight = 1.9

// noGPUNote is the timeline's sentence for a run without GPU telemetry.
const noGPUNote = "No GPU telemetry was read (no scrape.gpu source): no per-GPU power or utilisation panel."

// gpuPanels returns the timeline's per-GPU panels, each with one line
// per GPU: power (W), and utilisation (%) when the telemetry has it;
// none without GPU telemetry.
func gpuPanels(rec *recorder, gpus []correlate.GPUSeries) (panels []*plot.Plot, names []string, ymax []float64) {
	if len(gpus) == 0 {
		return nil, nil, nil
	}
	sources := map[string]bool{}
	for _, g := range gpus {
		sources[g.Source] = true
	}
	pts := func(s []correlate.GPUPoint, scale float64) plotter.XYs {
		out := make(plotter.XYs, 0, len(s))
		for _, p := range s {
			out = append(out, plotter.XY{X: p.At.Seconds(), Y: p.V * scale})
		}
		return out
	}
	add := func(title, name string, get func(g correlate.GPUSeries) []correlate.GPUPoint, percent bool) {
		scale := 1.0
		if percent {
			scale = 100
		}
		p := newPlot("", "", title)
		top, n := 0.0, 0
		for i, g := range gpus {
			xy := pts(get(g), scale)
			if len(xy) == 0 {
				continue
			}
			addLine(rec, p, gpuLabel(g, len(sources) > 1), xy, colour(i), i >= 7)
			top, n = max(top, maxY(xy)), n+1
		}
		if n == 0 {
			return
		}
		p.Y.Tick.Marker = niceTicks{}
		if percent {
			// 0 to 100 labelled, the legend above.
			top = max(top, 100)
			p.Y.Tick.Marker = percentTicks{}
		}
		headroom(p, top, min(n, 8)) // fitLegend sets the top once the panel's height is known
		panels, names, ymax = append(panels, p), append(names, name), append(ymax, top)
	}
	add("GPU power (W)", "power (W)", func(g correlate.GPUSeries) []correlate.GPUPoint { return g.Power }, false)
	add("GPU utilisation (%)", "GPU utilisation (%)", func(g correlate.GPUSeries) []correlate.GPUPoint { return g.Util }, true)
	return panels, names, ymax
}

// gpuTimelineHeight is what the per-GPU panels add to the timeline's
// height: gpuPanelHeight each, and, past four GPUs, a legend line more
// in every panel for each further GPU (the panels share the height
// alike).
func gpuTimelineHeight(panels, gpus, rows int) vg.Length {
	if panels == 0 {
		return 0
	}
	return vg.Length(panels)*gpuPanelHeight*vg.Inch + vg.Length(max(0, gpus-4)*rows)*vg.Points(11)
}

// fitLegend raises the top of p's y axis so that its legend, at the top
// of the data area dc, stays above the data (up to ymax): a panel of
// many GPUs has as many legend lines. The legend takes at most three
// quarters of the panel.
func fitLegend(p *plot.Plot, dc draw.Canvas, ymax float64) {
	if ymax <= 0 {
		ymax = 1
	}
	h := p.Legend.Rectangle(dc).Size().Y + vg.Points(8)
	frac := math.Min(float64(h/dc.Size().Y), 0.75)
	p.Y.Max = ymax / (1 - frac)
}

// gpuLabel names a GPU by its index and the tail of its UUID (which
// tells apart GPUs of one model, where a UUID's head may not), and by
// its source's host when the run read several sources.
func gpuLabel(g correlate.GPUSeries, host bool) string {
	s := "GPU " + g.Key
	if u := g.UUID; u != "" {
		s += fmt.Sprintf(" (…%s)", u[max(0, len(u)-8):])
	}
	if host {
		h := g.Source
		if u, err := url.Parse(g.Source); err == nil && u.Host != "" {
			h = u.Host
		}
		s = h + " " + s
	}
	return s
}
