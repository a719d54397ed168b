package vllmlog

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/servebench/servebench/internal/atomicfile"
	"github.com/servebench/servebench/report/chart"
)

// FileJSON is the JSON report WriteFiles writes beside the plots.
const FileJSON = "logs.json"

// WriteFiles writes into dir the JSON report (logs.json) and, for every
// server start, startup.png/.svg (where start-up time went) and, when the
// log holds a stretch of steady decoding, decay.png/.svg (generation
// throughput against the context in flight, with the fitted law). With
// several server starts the plots' names begin with "run-N-". It returns
// the paths written.
func WriteFiles(dir string, rep *Report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("logs: %w", err)
	}
	var written []string
	path := filepath.Join(dir, FileJSON)
	if err := atomicfile.Write(path, func(w io.Writer) error { return Write(w, rep, "json") }); err != nil {
		return nil, fmt.Errorf("logs: %w", err)
	}
	written = append(written, path)
	for i, r := range rep.Runs {
		prefix := ""
		if len(rep.Runs) > 1 {
			prefix = fmt.Sprintf("run-%d-", i+1)
		}
		var figs []namedFigure
		if sp := StartupFigure(r); sp != nil {
			figs = append(figs, namedFigure{"startup", sp})
		}
		if dp := DecayFigure(r); dp != nil {
			figs = append(figs, namedFigure{"decay", dp})
		}
		for _, f := range figs {
			png, svg, err := f.fig.Render()
			if err != nil {
				return written, fmt.Errorf("logs: %w", err)
			}
			for _, out := range []struct {
				ext  string
				data []byte
			}{{".png", png}, {".svg", svg}} {
				p := filepath.Join(dir, prefix+f.name+out.ext)
				if err := atomicfile.WriteBytes(p, out.data); err != nil {
					return written, fmt.Errorf("logs: %w", err)
				}
				written = append(written, p)
			}
		}
	}
	return written, nil
}

// namedFigure is a plot and the file name it is written under.
type namedFigure struct {
	name string
	fig  interface {
		Render() (pngData, svgData []byte, err error)
	}
}

// StartupFigure is the bar chart of a run's start-up phases, or nil when
// the log states none.
func StartupFigure(r *Run) *chart.StartupPlot {
	if len(r.Startup.Phases) == 0 {
		return nil
	}
	sp := &chart.StartupPlot{Title: "Where start-up time went"}
	if r.Startup.WallS > 0 {
		sp.Title = fmt.Sprintf("Where start-up time went: %s in all", duration(r.Startup.WallS))
	}
	if name := r.Config.modelName(); name != "" {
		sp.Title += " (" + name + ")"
	}
	for _, ph := range r.Startup.Phases {
		sp.Phases = append(sp.Phases, chart.StartupPhase{Name: ph.Name, Seconds: ph.Seconds})
	}
	return sp
}

// DecayFigure is the plot of a run's decay stretch, or nil without one.
func DecayFigure(r *Run) *chart.LogDecayPlot {
	d := r.Runtime.Decay
	if d == nil || len(d.points) == 0 {
		return nil
	}
	dp := &chart.LogDecayPlot{
		Title:  fmt.Sprintf("Generation throughput %s → %s tokens/s (%s) while only decoding", f1(d.StartTPS), f1(d.EndTPS), signedPct(d.Change)),
		XLabel: "context in flight (tokens, estimated from KV-cache usage)",
		Fit:    d.Fit, Streams: d.Streams,
	}
	for i, p := range d.points {
		x := math.NaN()
		if i < len(d.ctx) {
			x = d.ctx[i]
		}
		dp.Points = append(dp.Points, chart.LogDecayPoint{X: x, TokensPerSec: p.GenerationTPS})
	}
	if len(d.ctx) == 0 {
		dp.XLabel = "KV-cache usage (%)"
		dp.Fit = nil
		for i, p := range d.points {
			dp.Points[i].X = p.KVUsagePerc
		}
	}
	return dp
}
