package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestWriteTextGolden pins the terminal summary of the preemption fixture:
// the workload and environment box, the stage table, the whole run's
// throughput and latency table with mean and std, and the findings.
// cmd/bench's TestReportTextGolden checks `bench report` prints the same
// bytes on stdout.
func TestWriteTextGolden(t *testing.T) {
	t.Parallel()
	a, err := FromFiles(preemptFixture)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteText(&b, a.Summary()); err != nil {
		t.Fatal(err)
	}
	goldenFile(t, "summary.txt", b.Bytes())
}

// TestWriteTextBox checks the box's facts that the fixture lacks (the
// server's version, drawn lengths, a dataset, merged files, warmup) and that
// long latencies read in human units.
func TestWriteTextBox(t *testing.T) {
	t.Parallel()
	long := Dist{Count: 40, Mean: 201_000, Std: 95_000, P50: 183_000, P90: 330_000, P99: 383_517, Max: 390_100}
	s := &Summary{Version: "v1.2.3", Scenario: "long", Target: "http://127.0.0.1:8000", Model: "m",
		ServerVersion: "0.11.2", Host: "gen-1,gen-2", Files: 2, DurationS: 1234,
		Started: time.Date(2026, 11, 22, 3, 4, 5, 0, time.UTC),
		Workload: &Workload{TargetURL: "http://127.0.0.1:8000", API: "chat", Dataset: "sharegpt.json", SharedPrefixTokens: 0,
			Stages: []StageLoad{{Name: "open", Loop: "open", Rate: 2, Arrival: "poisson", DurationS: 600}}},
		Overall: Stage{Index: -1, Name: "overall", E2E: long,
			Requests: Requests{Scheduled: 50, OK: 40, Failed: 2, Dropped: 8, Warmup: 4},
			Tokens: Tokens{PromptPerRequest: &Counts{Count: 40, Mean: 412.25, Std: 37.5, Min: 320, Max: 512},
				OutputRequested: &Counts{Count: 50, Mean: 1024, Min: 1024, Max: 1024}}},
	}
	s.Stages = []Stage{s.Overall}
	s.Stages[0].Index, s.Stages[0].Name = 0, "open"
	var b bytes.Buffer
	if err := WriteText(&b, s); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"  target         http://127.0.0.1:8000, chat API\n",
		"  server         version 0.11.2 (GET /version)\n",
		"  client         servebench v1.2.3 on gen-1,gen-2 (2 results files merged)\n",
		"  started        2026-11-22 03:04:05 UTC, ran 20 min 34 s\n",
		"  load           open: open loop, Poisson arrivals at 2 req/s; 10 min\n",
		"  requests       40 ok of 50 scheduled; 2 failed, 8 dropped at the cap; 4 warmup requests left out\n",
		"  input tokens   asked from sharegpt.json; measured mean 412 ± 37.5, 320–512\n",
		"  output tokens  asked max_tokens 1024 each\n",
		"6 min 24 s", // E2E p99 in the stage table and the latency table
		"E2E           3 min 21 s  1 min 35 s  3 min 3 s  5 min 30 s  6 min 24 s  6 min 30 s\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "383517") || strings.Contains(got, "383,517") {
		t.Errorf("a long latency is printed in milliseconds:\n%s", got)
	}
}

// TestOverTime checks the per-request latencies by send time the timeline
// plots: one per ok request, sent within the run, their largest the E2E
// maximum of the summary.
func TestOverTime(t *testing.T) {
	t.Parallel()
	a, err := FromFiles(preemptFixture)
	if err != nil {
		t.Fatal(err)
	}
	s := a.Summary()
	sent, e2e := a.Scope(nil).OverTime("e2e_ms")
	if int64(len(sent)) != s.Overall.Requests.OK || len(e2e) != len(sent) {
		t.Fatalf("%d send times and %d values, want %d", len(sent), len(e2e), s.Overall.Requests.OK)
	}
	top := 0.0
	for i := range sent {
		if sent[i] < 0 || sent[i] > s.DurationS {
			t.Errorf("request sent at %.3f s, outside the run's %.3f s", sent[i], s.DurationS)
		}
		top = max(top, e2e[i])
	}
	if d := top - s.Overall.E2E.Max; d < -1 || d > 1 {
		t.Errorf("largest E2E %.1f ms, summary max %.1f ms", top, s.Overall.E2E.Max)
	}
	if sent, _ := a.Scope(nil).OverTime("no_such_metric"); sent != nil {
		t.Errorf("an unknown metric has %d points", len(sent))
	}
}

// TestOverallPeakNotBelowStages checks that the whole run's peak output
// tok/s is never below a stage's: the fixture's run-aligned seconds
// straddle the busiest second of stage "overflows".
func TestOverallPeakNotBelowStages(t *testing.T) {
	t.Parallel()
	a, err := FromFiles(preemptFixture)
	if err != nil {
		t.Fatal(err)
	}
	s := a.Summary()
	for _, st := range s.Stages {
		if st.PeakOutputTokensPerSec > s.Overall.PeakOutputTokensPerSec {
			t.Errorf("stage %s peaks at %v tok/s, above the whole run's %v", st.Name, st.PeakOutputTokensPerSec, s.Overall.PeakOutputTokensPerSec)
		}
	}
}
