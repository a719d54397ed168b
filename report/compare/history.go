package compare

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/stats"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
)

// A baseline history keeps the figures of baseline runs of one workload,
// one JSON object a line, so that a comparison with a single run a side
// still knows the run-to-run noise: the spread of the same figure over the
// runs the history holds.

// HistoryRun is one baseline run in a history file.
type HistoryRun struct {
	// Run identifies the run: its scenario, target and start time. A run
	// already in the history is not added again.
	Run      string    `json:"run"`
	Recorded time.Time `json:"recorded"`
	// Workload is the run's workload and model, as JSON (its target URL
	// left out): only runs of the same workload estimate one's noise.
	Workload string `json:"workload"`
	// Figures maps "SCOPE|METRIC|STAT" ("overall|ttft_ms|p99",
	// "closed-8|output_tokens_per_s|") to the run's value.
	Figures map[string]float64 `json:"figures"`
}

// minHistory is the fewest runs of a workload a history needs to estimate
// its run-to-run noise (a standard deviation from two runs has one degree
// of freedom; its t quantile is 12.7, and the interval says so).
const minHistory = 3

// ErrHistoryLine is returned for a history line that cannot be read.
var ErrHistoryLine = errors.New("history line not understood")

// ReadHistory reads a history file's runs; an error names the line.
func ReadHistory(r io.Reader) ([]HistoryRun, error) {
	var out []HistoryRun
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var h HistoryRun
		if err := json.Unmarshal([]byte(text), &h); err != nil {
			return nil, fmt.Errorf("line %d: %w: %w", line, ErrHistoryLine, err)
		}
		if h.Run == "" || h.Workload == "" {
			return nil, fmt.Errorf("line %d: %w: no run or workload", line, ErrHistoryLine)
		}
		out = append(out, h)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", len(out)+1, err)
	}
	return out, nil
}

// WriteHistory appends runs to a history, one line each.
func WriteHistory(w io.Writer, runs []HistoryRun) error {
	enc := json.NewEncoder(w)
	for _, h := range runs {
		if err := enc.Encode(h); err != nil {
			return fmt.Errorf("history: %w", err)
		}
	}
	return nil
}

// NewHistoryRun is a run's entry in a history, recorded at now.
func NewHistoryRun(s *report.Summary, now time.Time) HistoryRun {
	h := HistoryRun{Run: fmt.Sprintf("%s %s %s", s.Scenario, s.Target, s.Started.UTC().Format(time.RFC3339Nano)),
		Recorded: now.UTC(), Workload: workloadKey(s), Figures: map[string]float64{}}
	scopes := []string{"overall"}
	for _, st := range s.Stages {
		scopes = append(scopes, st.Name)
	}
	runs := []*report.Summary{s}
	for _, scope := range scopes {
		for _, m := range results.Metrics() {
			stats := m.Stats()
			if m.Class != results.Latency {
				stats = []string{""}
			}
			for _, stat := range stats {
				if v := runValues(runs, scope, m.Name, stat); len(v) == 1 && !math.IsNaN(v[0]) {
					h.Figures[historyKey(scope, m.Name, stat)] = v[0]
				}
			}
		}
	}
	return h
}

// workloadKey is what a history run must share with a comparison's base
// to estimate its noise: the workload (less the target's URL) and model.
func workloadKey(s *report.Summary) string {
	var w report.Workload
	if s.Workload != nil {
		w = *s.Workload
		w.TargetURL = ""
	}
	b, _ := json.Marshal(struct {
		Model    string          `json:"model"`
		Workload report.Workload `json:"workload"`
	}{s.Model, w})
	return string(b)
}

func historyKey(scope, metric, stat string) string { return scope + "|" + metric + "|" + stat }

// historyNoise is the run-to-run noise a history shows for the base's
// workload: each figure's relative standard deviation over its runs.
type historyNoise struct {
	runs int                  // runs of the workload in the history
	cv   map[string][]float64 // key → the figure in each run
}

// noiseFrom keeps the history's runs of the base's workload; nil when
// there are fewer than minHistory.
func noiseFrom(hist []HistoryRun, base *report.Summary) (*historyNoise, int) {
	key := workloadKey(base)
	hn := &historyNoise{cv: map[string][]float64{}}
	for _, h := range hist {
		if h.Workload != key {
			continue
		}
		hn.runs++
		for k, v := range h.Figures {
			hn.cv[k] = append(hn.cv[k], v)
		}
	}
	if hn.runs < minHistory {
		return nil, hn.runs
	}
	return hn, hn.runs
}

// interval is a row's 95 % interval of the relative change from the
// history's spread of the figure, on a log scale (a figure's run-to-run
// noise is relative, and a change can be no lower than −100 %):
// exp(ln(1+change) ± t(k−1) · s · √(1/nb + 1/nn)) − 1, where s is the
// standard deviation of the figure's logarithm over the k history runs
// and nb, nn the runs on each side. ok is false when the history has fewer
// than minHistory positive values of the figure, or they do not vary.
func (hn *historyNoise) interval(scope, metric, stat string, change float64, nb, nn int) (lo, hi float64, ok bool) {
	var logs []float64
	for _, v := range hn.cv[historyKey(scope, metric, stat)] {
		if v > 0 {
			logs = append(logs, math.Log(v))
		}
	}
	if len(logs) < minHistory || math.IsNaN(change) || change <= -1 {
		return 0, 0, false
	}
	sd := math.Sqrt(variance(logs))
	if sd == 0 {
		// No spread at all (a deterministic simulator): the history says
		// nothing of the noise; each run's own sampling error does.
		return 0, 0, false
	}
	half := stats.TQuantile(0.975, float64(len(logs)-1)) * sd * math.Sqrt(1/float64(nb)+1/float64(nn))
	c := math.Log1p(change)
	return math.Expm1(c - half), math.Expm1(c + half), true
}

// NewRuns is the base side's runs not yet in the history, as entries to
// append to it, recorded at now.
func NewRuns(hist []HistoryRun, base []*report.Aggregate, now time.Time) []HistoryRun {
	var out []HistoryRun
	for _, a := range base {
		h := NewHistoryRun(a.Summary(), now)
		if !slices.ContainsFunc(hist, func(o HistoryRun) bool { return o.Run == h.Run }) &&
			!slices.ContainsFunc(out, func(o HistoryRun) bool { return o.Run == h.Run }) {
			out = append(out, h)
		}
	}
	return out
}
