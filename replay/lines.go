package replay

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/servebench/servebench/vllmlog"
)

// minLines is the fewest stats lines a replay is built from: a line's
// throughputs average an interval whose length only its neighbour's time
// tells, and one line is one figure, not a load over time.
const minLines = 2

// ErrTooFew is the error (wrapped, with the reason) for a log whose stats
// lines cannot be replayed.
var ErrTooFew = errors.New("too few stats lines to replay")

// Line is one stats line of the log as the replay reads it: what the
// server did in the interval that ends at At.
type Line struct {
	LogLine  int64   // the line's number in the file
	Time     string  // "MM-DD HH:MM:SS" as printed
	At       float64 // seconds after the server start's first timestamp
	Interval float64 // seconds the throughputs average over
	Prompt   float64 // prompt tokens per second
	Gen      float64 // generation tokens per second
	Running  float64
	Waiting  float64
	KVPerc   float64 // GPU KV-cache usage, percent; NaN when not printed
	HitPerc  float64 // prefix-cache hit rate, percent; NaN when not printed
}

// pick chooses the server start and engine series to replay: the start
// with the most stats lines (the last of equals), its first engine.
func pick(rep *vllmlog.Report) (*vllmlog.Run, *vllmlog.Series, error) {
	var run *vllmlog.Run
	var series *vllmlog.Series
	for _, r := range rep.Runs {
		if len(r.Runtime.Engines) == 0 {
			continue
		}
		// The first engine's series: the run's stats lines.
		if s := r.Runtime.Engines[0]; series == nil || len(s.Points) >= len(series.Points) {
			run, series = r, s
		}
	}
	if series == nil {
		return nil, nil, fmt.Errorf("%w: the log has no stats line (\"Avg prompt throughput: …, Avg generation throughput: …\"); "+
			"vLLM prints one every 10 s while it has work, so a log of a server that served nothing, or a start-up excerpt, has none", ErrTooFew)
	}
	return run, series, nil
}

// readLines converts a series' points into Lines with their intervals,
// or says why they cannot be replayed.
func readLines(run *vllmlog.Run, s *vllmlog.Series) ([]Line, []string, error) {
	where := fmt.Sprintf("%s, the server start at line %d", run.File, run.FirstLine)
	if len(s.Points) < minLines {
		return nil, nil, fmt.Errorf("%w: %s has %d stats line(s), a replay needs at least %d: a line's throughputs are averages over the interval since the line before, and one line shows a moment, not a load over time",
			ErrTooFew, where, len(s.Points), minLines)
	}
	var lines []Line
	work, tokens := false, false
	for _, p := range s.Points {
		if math.IsNaN(p.OffsetS) {
			return nil, nil, fmt.Errorf("%w: the stats line at line %d of %s has no timestamp, so the intervals between lines are unknown", ErrTooFew, p.Line, where)
		}
		if math.IsNaN(p.GenerationTPS) || math.IsNaN(p.Running) {
			return nil, nil, fmt.Errorf("%w: the stats line at line %d of %s prints no generation throughput or running count", ErrTooFew, p.Line, where)
		}
		l := Line{LogLine: p.Line, Time: p.Time, At: p.OffsetS, Prompt: zeroNaN(p.PromptTPS), Gen: p.GenerationTPS,
			Running: p.Running, Waiting: zeroNaN(p.Waiting) + zeroNaN(p.Swapped), KVPerc: p.KVUsagePerc, HitPerc: p.PrefixHitPerc}
		if len(lines) > 0 && l.At <= lines[len(lines)-1].At {
			return nil, nil, fmt.Errorf("%w: the stats lines at lines %d and %d of %s do not advance in time", ErrTooFew, lines[len(lines)-1].LogLine, p.Line, where)
		}
		work = work || l.Gen > 0 || l.Prompt > 0 || l.Running > 0 || l.Waiting > 0
		tokens = tokens || l.Gen > 0 || l.Prompt > 0
		lines = append(lines, l)
	}
	if !work {
		return nil, nil, fmt.Errorf("%w: the %d stats lines of %s show no work at all (no tokens, nothing running or waiting): there is no load to replay", ErrTooFew, len(lines), where)
	}
	if !tokens {
		return nil, nil, fmt.Errorf("%w: the %d stats lines of %s show requests but not one token generated or prefilled (a stalled engine: see bench logs' diagnosis); the simulator does not stall, so there is no throughput to replay", ErrTooFew, len(lines), where)
	}
	notes := intervals(lines, run.Config.Generation, s.Stride)
	return lines, notes, nil
}

func zeroNaN(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// v1Interval is vLLM V1's default VLLM_LOG_STATS_INTERVAL, seconds;
// v0Interval is V0's minimum time between stats lines.
const (
	v1Interval = 10
	v0Interval = 5
)

// intervals sets each line's Interval and says how it was told.
//
// V1 prints a line every VLLM_LOG_STATS_INTERVAL (10 s) and leaves out a
// line when it and the one before had no throughput, so gaps are
// multiples of the interval; pasted excerpts leave lines out too. V0
// prints a line at the first engine step 5 s or more after the previous
// one, covering the time since it.
func intervals(lines []Line, generation string, stride int) []string {
	gaps := make([]float64, 0, len(lines)-1)
	for i := 1; i < len(lines); i++ {
		gaps = append(gaps, lines[i].At-lines[i-1].At)
	}
	var notes []string
	if stride > 1 {
		notes = append(notes, fmt.Sprintf("the log is long: each of its points averages %d stats lines, so the replay's intervals are %d lines long", stride, stride))
	}
	if generation == "V0" {
		sorted := slices.Sorted(slices.Values(gaps))
		lines[0].Interval = max(v0Interval, sorted[len(sorted)/2])
		for i := 1; i < len(lines); i++ {
			lines[i].Interval = gaps[i-1]
		}
		return append(notes, fmt.Sprintf("V0 engine: each stats line covers the time since the one before; the first line's, which the log does not show, is taken as %s, the median spacing (V0 prints at most every 5 s)", secs(lines[0].Interval)))
	}
	d := slices.Min(gaps)
	multiples := true
	for _, g := range gaps {
		k := math.Round(g / v1Interval)
		multiples = multiples && k >= 1 && math.Abs(g-k*v1Interval) <= 1
	}
	switch {
	case multiples:
		d = v1Interval
		if slices.Max(gaps) > v1Interval+1 {
			notes = append(notes, "the stats lines are 10 s apart or a multiple of it: the 10 s interval of vLLM's default VLLM_LOG_STATS_INTERVAL, with the lines between left out of the log (or not printed while idle)")
		} else {
			notes = append(notes, "stats interval 10 s (vLLM's default VLLM_LOG_STATS_INTERVAL), as the lines' spacing shows")
		}
	default:
		var near []float64
		for _, g := range gaps {
			if g <= 1.5*d {
				near = append(near, g)
			}
		}
		slices.Sort(near)
		d = max(1, math.Round(near[len(near)/2]))
		notes = append(notes, fmt.Sprintf("stats interval %s, the usual spacing of the lines (not vLLM's default 10 s: VLLM_LOG_STATS_INTERVAL was set, or lines are missing)", secs(d)))
	}
	for i := range lines {
		lines[i].Interval = d
	}
	return notes
}

func secs(s float64) string {
	if s == math.Trunc(s) {
		return fmt.Sprintf("%.0f s", s)
	}
	return fmt.Sprintf("%.1f s", s)
}
