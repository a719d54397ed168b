package vllmlog

import (
	"fmt"
	"math"

	"github.com/servebench/servebench/internal/decodelaw"
)

// FileJSON is the JSON report WriteFiles writes beside the plots.
const FileJSON = "logs.json"

// StartupPlot is the data of a chart of where a server's start-up time
// went, one bar per phase in order (report/chart draws it).
type StartupPlot struct {
	Title  string
	Phases []StartupPhase
}

// StartupPhase is one bar.
type StartupPhase struct {
	Name    string
	Seconds float64
}

// LogDecayPlot is the data of a plot of a server's generation throughput against the context in
// flight, from its periodic log lines, with the fitted decode law.
type LogDecayPlot struct {
	Title  string
	XLabel string
	Points []LogDecayPoint
	// Fit, when it holds, is drawn as Streams / (a + b · x).
	Fit     *decodelaw.Fit
	Streams float64
}

// LogDecayPoint is one stats line.
type LogDecayPoint struct {
	X            float64 // context in flight, tokens (or KV usage, per XLabel)
	TokensPerSec float64
}

// StartupFigure is the bar chart of a run's start-up phases, or nil when
// the log states none.
func StartupFigure(r *Run) *StartupPlot {
	if len(r.Startup.Phases) == 0 {
		return nil
	}
	sp := &StartupPlot{Title: "Where start-up time went"}
	if r.Startup.WallS > 0 {
		sp.Title = fmt.Sprintf("Where start-up time went: %s in all", duration(r.Startup.WallS))
	}
	if name := r.Config.modelName(); name != "" {
		sp.Title += " (" + name + ")"
	}
	for _, ph := range r.Startup.Phases {
		sp.Phases = append(sp.Phases, StartupPhase{Name: ph.Name, Seconds: ph.Seconds})
	}
	return sp
}

// DecayFigure is the plot of a run's decay stretch, or nil without one.
func DecayFigure(r *Run) *LogDecayPlot {
	d := r.Runtime.Decay
	if d == nil || len(d.points) == 0 {
		return nil
	}
	dp := &LogDecayPlot{
		Title:  fmt.Sprintf("Generation throughput %s → %s tokens/s (%s) while only decoding", f1(d.StartTPS), f1(d.EndTPS), signedPct(d.Change)),
		XLabel: "context in flight (tokens, estimated from KV-cache usage)",
		Fit:    d.Fit, Streams: d.Streams,
	}
	for i, p := range d.points {
		x := math.NaN()
		if i < len(d.ctx) {
			x = d.ctx[i]
		}
		dp.Points = append(dp.Points, LogDecayPoint{X: x, TokensPerSec: p.GenerationTPS})
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
