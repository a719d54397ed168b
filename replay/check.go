package replay

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/textable"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/sim"
)

// Figures are a stats line's figures.
type Figures struct {
	Prompt  float64 // tokens per second over the interval
	Gen     float64 // tokens per second over the interval
	Running float64
	Waiting float64
	KVPerc  float64 // percent
}

// Compared is one stats line of the log beside the simulator's line at
// the same time.
type Compared struct {
	Log    Line
	At     float64 // replay time: seconds after the first arrival
	Replay Figures
}

// GenDiff is the replay's generation throughput relative to the log's
// (NaN when the log's is 0).
func (c Compared) GenDiff() float64 {
	if c.Log.Gen == 0 {
		return math.NaN()
	}
	return c.Replay.Gen/c.Log.Gen - 1
}

// Comparison is the log's stats lines against the replay's, run in
// virtual time.
type Comparison struct {
	Lines []Compared
	OK    int // requests the replay completed
	NotOK int // requests that failed, were canceled or dropped
	// Stopped says why the run ended early (its load.max_duration); the
	// lines before still compare.
	Stopped string
}

func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("no metrics were read")
}

// grid is how often Check reads the simulator's counters: the longest of
// a second, half a second and a tenth of one on which every time it reads
// falls (Replay.Origin is on a tenth of a second).
func (r *Replay) grid() time.Duration {
	for _, g := range []float64{1, 0.5, 0.1} {
		on := true
		for _, l := range r.Lines {
			for _, t := range []float64{l.At - r.Origin, l.At - l.Interval - r.Origin} {
				k := t / g
				on = on && math.Abs(k-math.Round(k)) < 1e-6
			}
		}
		if on {
			return time.Duration(g * float64(time.Second))
		}
	}
	return 100 * time.Millisecond
}

// Check runs the scenario Write wrote (at scenarioPath) on its simulator
// in virtual time and computes the simulator's stats lines at the log's
// times, as vLLM's stat logger does: tokens counted between the line's
// time less its interval and its time, divided by the interval; running,
// waiting and KV usage at the line's time.
func Check(ctx context.Context, scenarioPath string, r *Replay) (*Comparison, error) {
	sc, err := scenario.Load(scenarioPath)
	if err != nil {
		return nil, err
	}
	if err := sc.Set("scrape.interval", r.grid().String()); err != nil {
		return nil, err
	}
	cfg, err := sim.ConfigFromURL(sc.SimTarget())
	if err != nil {
		return nil, fmt.Errorf("replay: %s: %w", scenarioPath, err)
	}
	var samples []*results.Sample
	cmp := &Comparison{}
	observe := func(rec results.Record, _ int) {
		switch {
		case rec.Sample != nil && rec.Sample.OK:
			samples = append(samples, rec.Sample)
		case rec.Result != nil && rec.Result.Outcome == results.OK:
			cmp.OK++
		case rec.Result != nil:
			cmp.NotOK++
		}
	}
	_, err = run.Simulate(ctx, sc, cfg, observe)
	if ctx.Err() != nil || len(samples) == 0 {
		return nil, fmt.Errorf("replay: running %s in virtual time: %w", scenarioPath, cmpErr(err, ctx.Err()))
	}
	if err != nil {
		cmp.Stopped = err.Error() // the lines before the stop still compare
	}
	s := series{samples, r.grid()}
	for _, l := range r.Lines {
		at := l.At - r.Origin
		f := Figures{
			Prompt:  (s.value(at, results.PromptTokens) - s.value(at-l.Interval, results.PromptTokens)) / l.Interval,
			Gen:     (s.value(at, results.GenerationTokens) - s.value(at-l.Interval, results.GenerationTokens)) / l.Interval,
			Running: s.value(at, results.Running),
			Waiting: s.value(at, results.Waiting),
			KVPerc:  100 * s.value(at, results.KVUsage),
		}
		cmp.Lines = append(cmp.Lines, Compared{Log: l, At: at, Replay: f})
	}
	return cmp, nil
}

// series is the scraped readings by time since the first (the trace's
// first arrival), every grid.
type series struct {
	s    []*results.Sample
	grid time.Duration
}

// value is meaning m at t seconds after the first reading: 0 before it;
// the last reading's counters, and no requests, after the run.
func (ser series) value(t float64, m results.Meaning) float64 {
	if t < 0 {
		return 0
	}
	s := ser.s
	at := s[0].At + time.Duration(math.Round(t*1e6))*time.Microsecond
	i := sort.Search(len(s), func(i int) bool { return s[i].At > at+time.Microsecond }) - 1
	if i < 0 {
		return 0
	}
	if i == len(s)-1 && at > s[i].At+ser.grid && (m == results.Running || m == results.Waiting || m == results.KVUsage) {
		return 0
	}
	return s[i].Values[m]
}

// Write writes the comparison as a table: each of the log's stats lines
// beside the replay's at the same time.
func (c *Comparison) Write(w io.Writer) error {
	rows := [][]string{
		{"", "", "prompt tok/s", "generation tok/s", "", "running", "waiting", "KV usage %"},
		{"log time", "replay time", "log / replay", "log / replay", "diff", "log / replay", "log / replay", "log / replay"},
	}
	pair := func(a, b string) string { return a + " / " + b }
	for _, l := range c.Lines {
		diff := "–"
		if d := l.GenDiff(); !math.IsNaN(d) {
			diff = fmt.Sprintf("%+.1f %%", 100*d)
		}
		kv := "–"
		if !math.IsNaN(l.Log.KVPerc) {
			kv = f1(l.Log.KVPerc)
		}
		rows = append(rows, []string{l.Log.Time, fmt.Sprintf("%.1f s", l.At),
			pair(f1(l.Log.Prompt), f1(l.Replay.Prompt)), pair(f1(l.Log.Gen), f1(l.Replay.Gen)), diff,
			pair(fmt.Sprint(l.Log.Running), fmt.Sprint(l.Replay.Running)), pair(fmt.Sprint(l.Log.Waiting), fmt.Sprint(l.Replay.Waiting)),
			pair(kv, f1(l.Replay.KVPerc))})
	}
	_, err := io.WriteString(w, textable.Format(rows, false)+c.verdict())
	return err
}

// verdict says, from the table's figures, how close the replay came.
func (c *Comparison) verdict() string {
	n, within5, within10, same := 0, 0, 0, 0
	worst, worstAt := 0.0, ""
	for _, l := range c.Lines {
		if l.Replay.Running == l.Log.Running {
			same++
		}
		d := l.GenDiff()
		if math.IsNaN(d) {
			continue
		}
		n++
		if math.Abs(d) <= 0.05 {
			within5++
		}
		if math.Abs(d) <= 0.10 {
			within10++
		}
		if math.Abs(d) >= math.Abs(worst) {
			worst, worstAt = d, l.Log.Time
		}
	}
	var b strings.Builder
	if n > 0 {
		fmt.Fprintf(&b, "Generation throughput within ±5 %% of the log's at %d of %d lines with tokens, within ±10 %% at %d; the largest difference %+.1f %% (%s).\n",
			within5, n, within10, 100*worst, worstAt)
	}
	fmt.Fprintf(&b, "Running count equal at %d of %d lines.\n", same, len(c.Lines))
	if c.Stopped != "" {
		fmt.Fprintf(&b, "The replay was cut short: %s.\n", c.Stopped)
	}
	return b.String()
}

func f1(x float64) string { return fmt.Sprintf("%.1f", x) }

// WriteSummary writes what `bench logs --replay` prints: the files
// written, what the replay assumed and what the log could not tell, and,
// when c is not nil, the log's stats lines beside the replay's.
func WriteSummary(w io.Writer, r *Replay, scenarioPath string, c *Comparison) error {
	var b strings.Builder
	dir := filepath.Dir(scenarioPath)
	fmt.Fprintf(&b, "Replay of %s (the server start at line %d, engine %s): %d stats lines, %d request(s)\n",
		r.Source, r.Run.FirstLine, r.Engine, len(r.Lines), len(r.Trace))
	fmt.Fprintf(&b, "  wrote %s (the scenario), %s (the simulator), %s (the arrivals)\n",
		scenarioPath, filepath.Join(dir, PresetFile), filepath.Join(dir, TraceFile))
	fmt.Fprintf(&b, "  run it: bench run %s   (--virtual for virtual time)\n\n", scenarioPath)
	b.WriteString("Assumed\n")
	for _, n := range r.Assumed {
		b.WriteString(bullet(n, "  - ", "    "))
	}
	b.WriteString("\nThe log does not tell\n")
	for _, n := range r.Unknown {
		b.WriteString(bullet(n, "  - ", "    "))
	}
	if c != nil {
		fmt.Fprintf(&b, "\nThe log against the replay, run on the simulator in virtual time (%d of %d requests completed):\n", c.OK, c.OK+c.NotOK)
	}
	if _, err := io.WriteString(w, b.String()); err != nil || c == nil {
		return err
	}
	return c.Write(w)
}
