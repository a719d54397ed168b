package replay

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/sim"
	"github.com/servebench/servebench/vllmlog"
)

const corpus = "../vllmlog/testdata/corpus/"

// TestIntervals: the stats interval is told from the lines' spacing: V1's
// 10 s with lines left out, a custom interval, V0's time since the line
// before.
func TestIntervals(t *testing.T) {
	for _, tc := range []struct {
		name, gen string
		at        []float64
		want      []float64
		note      string
	}{
		{"V1 with lines left out", "V1", []float64{0, 30, 90, 150, 220}, []float64{10, 10, 10, 10, 10}, "left out"},
		{"V1 every 10 s, rounded stamps", "V1", []float64{0, 10, 21, 30, 40}, []float64{10, 10, 10, 10, 10}, "as the lines' spacing shows"},
		{"V1 custom interval", "V1", []float64{0, 5, 10, 15}, []float64{5, 5, 5, 5}, "VLLM_LOG_STATS_INTERVAL was set"},
		{"V0 time since the line before", "V0", []float64{0, 5, 10, 16}, []float64{5, 5, 5, 6}, "V0 engine"},
		{"V0 slow steps", "V0", []float64{0, 10, 19, 29}, []float64{10, 10, 9, 10}, "median spacing"},
	} {
		lines := make([]Line, len(tc.at))
		for i, a := range tc.at {
			lines[i].At = a
		}
		notes := intervals(lines, tc.gen, 1)
		for i, l := range lines {
			if l.Interval != tc.want[i] {
				t.Errorf("%s: line %d interval %g, want %g", tc.name, i, l.Interval, tc.want[i])
			}
		}
		if len(notes) != 1 || !strings.Contains(notes[0], tc.note) {
			t.Errorf("%s: notes %q, want one saying %q", tc.name, notes, tc.note)
		}
	}
}

// TestSpread: run times keep their mean, stay within the interval and
// come longest first.
func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		n       int
		mean, d float64
	}{{1, 3.5, 10}, {4, 2, 10}, {5, 9, 10}, {3, 0, 10}, {6, 10, 10}} {
		got := spread(tc.n, tc.mean, tc.d)
		sum := 0.0
		for i, x := range got {
			sum += x
			if x < 0 || x > tc.d || (i > 0 && x > got[i-1]) {
				t.Errorf("spread(%d, %g, %g) = %v: want values in [0, %g], longest first", tc.n, tc.mean, tc.d, got, tc.d)
			}
		}
		if math.Abs(sum/float64(tc.n)-tc.mean) > 1e-9 {
			t.Errorf("spread(%d, %g, %g) = %v: mean %g", tc.n, tc.mean, tc.d, got, sum/float64(tc.n))
		}
	}
}

// TestLeastSquares recovers a step cost from exact points, and drops a
// column the points cannot tell.
func TestLeastSquares(t *testing.T) {
	truth := []float64{5000, 40, 30} // µs, µs per request, ns per token read
	var pts []decodePoint
	for _, n := range []float64{1, 4, 16} {
		for _, read := range []float64{1e4, 1e5, 4e5} {
			step := (truth[0] + truth[1]*n + truth[2]*read/1000) * 1e-6
			pts = append(pts, decodePoint{n: n, step: step, read: read})
		}
	}
	beta, ok := leastSquares(pts, true, true)
	if !ok {
		t.Fatal("no fit")
	}
	for i := range truth {
		if math.Abs(beta[i]-truth[i]) > 1e-6*math.Max(1, truth[i]) {
			t.Errorf("coefficient %d: %g, want %g", i, beta[i], truth[i])
		}
	}
	if _, ok := leastSquares([]decodePoint{{n: 2, step: 0.01, read: 5}, {n: 2, step: 0.01, read: 5}}, true, false); ok {
		t.Error("a fit of the running count from points that all ran 2 requests: want none")
	}
}

func parse(t *testing.T, path string) *vllmlog.Report {
	t.Helper()
	rep, err := vllmlog.ParseFiles(context.Background(), []string{path}, vllmlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestBudgetFromPrefillBound: a log that does not print
// max_num_batched_tokens, prefill-bound at 24,000 tokens/s with requests
// waiting, prefilled about 8,800 tokens per decode step: vLLM's 8192.
func TestBudgetFromPrefillBound(t *testing.T) {
	r, err := Build(parse(t, corpus+"006-v1-prefill-bound.log"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Config.MaxNumBatchedTokens != 8192 {
		t.Errorf("max_num_batched_tokens %d, want 8192", r.Config.MaxNumBatchedTokens)
	}
	if !strings.Contains(strings.Join(r.Assumed, "\n"), "each decode step prefilled about 88") {
		t.Errorf("the budget's reason is not said: %q", r.Assumed)
	}
}

// TestRefused: logs whose stats lines cannot be replayed are refused with
// the reason.
func TestRefused(t *testing.T) {
	for _, tc := range []struct{ file, why string }{
		{seeds + "deepseek-r1-32b.log", "has no stats line"},
		{corpus + "014-v0-finished-requests.log", "has 1 stats line(s), a replay needs at least 2"},
		{corpus + "003-v0-idle.log", "show no work at all"},
		{corpus + "022-v1-stalled-debug-level.log", "not one token generated or prefilled"},
	} {
		_, err := Build(parse(t, tc.file))
		if !errors.Is(err, ErrTooFew) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: %v, want ErrTooFew saying %q", filepath.Base(tc.file), err, tc.why)
		}
	}
}

// TestCorpus builds the replay of every vLLM log of the corpus: each is
// refused with a reason, or written as a scenario that loads on a
// simulator that starts, with a trace whose requests fit max_model_len.
// The logs of one steady stream replay within 5 % at every line.
func TestCorpus(t *testing.T) {
	steady := map[string]bool{"001-v0-decode-one-request.log": true, "008-v1-spec-decode-metrics.log": true, "043-v1-first-interval-partial.log": true}
	paths, err := filepath.Glob(corpus + "*.log")
	if err != nil || len(paths) < 30 {
		t.Fatalf("corpus: %d logs, %v", len(paths), err)
	}
	built := 0
	for _, p := range paths {
		rep := parse(t, p)
		if len(rep.Unreadable()) > 0 {
			continue // another engine's log: bench logs refuses it first
		}
		r, err := Build(rep)
		if errors.Is(err, ErrTooFew) {
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
			continue
		}
		built++
		sp, err := r.Write(t.TempDir(), false)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := scenario.Load(sp)
		if err != nil {
			t.Errorf("%s: the written scenario does not load: %v", filepath.Base(p), err)
			continue
		}
		if _, err := sim.ConfigFromURL(sc.SimTarget()); err != nil {
			t.Errorf("%s: the written preset does not load: %v", filepath.Base(p), err)
		}
		for i, a := range r.Trace {
			if a.Input < 1 || a.Output < 1 || a.Input+a.Output > r.Config.MaxModelLen || (i > 0 && a.At < r.Trace[i-1].At) {
				t.Errorf("%s: arrival %d %+v (max_model_len %d)", filepath.Base(p), i, a, r.Config.MaxModelLen)
			}
		}
		if !steady[filepath.Base(p)] {
			continue
		}
		c, err := Check(context.Background(), sp, r)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range c.Lines {
			if l.Log.Gen > 0 && !within(l.Replay.Gen, l.Log.Gen, 0.05) {
				t.Errorf("%s, %s: replay %.1f tokens/s, log %.1f", filepath.Base(p), l.Log.Time, l.Replay.Gen, l.Log.Gen)
			}
		}
	}
	if built < 8 {
		t.Errorf("%d corpus logs replayed, want the 8 or more with timed stats lines showing work", built)
	}
}

// TestWriteRefusesToReplace: an earlier replay's files are kept unless
// forced.
func TestWriteRefusesToReplace(t *testing.T) {
	r, err := Build(parse(t, seeds+"gpt-oss-20b.log"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := r.Write(dir, false); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, TraceFile), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Write(dir, false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("second write: %v, want a refusal naming --force", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, TraceFile)); string(b) != "mine\n" {
		t.Error("the refused write replaced the trace")
	}
	if _, err := r.Write(dir, true); err != nil {
		t.Errorf("forced write: %v", err)
	}
}
