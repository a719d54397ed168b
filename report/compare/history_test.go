package compare

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

// TestReadHistoryNamesTheLine: a bad line is named, blank lines are
// skipped, and what WriteHistory writes reads back.
func TestReadHistoryNamesTheLine(t *testing.T) {
	runs := []HistoryRun{{Run: "a", Workload: "w", Figures: map[string]float64{"overall|ttft_ms|p50": 12.5}},
		{Run: "b", Workload: "w", Figures: map[string]float64{}}}
	var buf bytes.Buffer
	if err := WriteHistory(&buf, runs); err != nil {
		t.Fatal(err)
	}
	got, err := ReadHistory(strings.NewReader("\n" + buf.String()))
	if err != nil || len(got) != 2 || got[0].Figures["overall|ttft_ms|p50"] != 12.5 {
		t.Fatalf("round trip: %v %v", got, err)
	}
	_, err = ReadHistory(strings.NewReader(buf.String() + "{\"run\": 3}\n"))
	if !errors.Is(err, ErrHistoryLine) || !strings.HasPrefix(err.Error(), "line 3:") {
		t.Errorf("bad line: %v", err)
	}
	_, err = ReadHistory(strings.NewReader(`{"run":"x"}` + "\n"))
	if !errors.Is(err, ErrHistoryLine) || !strings.Contains(err.Error(), "line 1: ") {
		t.Errorf("line without a workload: %v", err)
	}
}

// TestHistoryInterval: the interval is on the log scale (never below
// −100 %), widens with the history's spread, and is absent with too few
// runs or none that vary.
func TestHistoryInterval(t *testing.T) {
	hn := &historyNoise{runs: 3, cv: map[string][]float64{
		"overall|ttft_ms|p50": {100, 150, 80},
		"overall|itl_ms|p50":  {10, 10.1, 9.9},
		"overall|tpot_ms|p50": {10, 10, 10},
		"overall|e2e_ms|p50":  {10, 11},
	}}
	lo, hi, ok := hn.interval("overall", "ttft_ms", "p50", 0.2, 1, 1)
	if !ok || lo <= -1 || lo >= 0 || hi <= 0.2 {
		t.Errorf("wide spread: [%g, %g] %v", lo, hi, ok)
	}
	nlo, nhi, ok := hn.interval("overall", "itl_ms", "p50", 0.2, 1, 1)
	if !ok || !(nlo > 0.1 && nlo < 0.2 && nhi > 0.2 && nhi < 0.3) {
		t.Errorf("narrow spread: [%g, %g] %v", nlo, nhi, ok)
	}
	// By hand: sd of ln(10), ln(10.1), ln(9.9); t(2) = 4.303; √2.
	l := []float64{math.Log(10), math.Log(10.1), math.Log(9.9)}
	half := 4.302653 * math.Sqrt(variance(l)) * math.Sqrt2
	if want := math.Expm1(math.Log1p(0.2) + half); math.Abs(nhi-want) > 1e-4 {
		t.Errorf("upper bound %g, want %g", nhi, want)
	}
	if _, _, ok := hn.interval("overall", "tpot_ms", "p50", 0.2, 1, 1); ok {
		t.Error("no spread: an interval")
	}
	if _, _, ok := hn.interval("overall", "e2e_ms", "p50", 0.2, 1, 1); ok {
		t.Error("two runs: an interval")
	}
}

func FuzzReadHistory(f *testing.F) {
	f.Add([]byte(`{"run":"a","workload":"w","figures":{"overall|ttft_ms|p50":1}}` + "\n\n{}"))
	f.Add([]byte("{\"run\":\"a\",\"workload\":\"w\",\"figures\":{\"k\":1e309}}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		runs, err := ReadHistory(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, h := range runs {
			if h.Run == "" || h.Workload == "" {
				t.Fatalf("accepted a run without its identity: %+v", h)
			}
		}
	})
}
