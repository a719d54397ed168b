package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/sim"
)

// TestCompareKnowsTheNoise is issue 21's comparison acceptance, in virtual
// time: two runs of the same scenario and seed on the simulator call no
// change; the same scenario on a simulator whose every step costs 20 %
// more calls a regression on ITL, TPOT and E2E, each with a 95 % interval
// that holds the true +20 %.
func TestCompareKnowsTheNoise(t *testing.T) {
	t.Parallel()
	cfg, err := sim.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	slow := fmt.Sprintf("sim://tiny?seed=5&step_overhead_us=%g&per_seq_us=%g&per_kv_token_ns=%g&per_prefill_token_us=%g",
		1.2*cfg.StepOverheadUS, 1.2*cfg.PerSeqUS, 1.2*cfg.PerKVTokenNS, 1.2*cfg.PerPrefillTokenUS)
	dir := t.TempDir()
	run := func(name, target string) string {
		out := filepath.Join(dir, name)
		e, stdout, errb := testEnv()
		err := bench(context.Background(), e, []string{"run", "--target", target, "--concurrency", "4", "--requests", "300",
			"--input-tokens", "256", "--output-tokens", "48", "--virtual", "--quiet", "--out", out})
		if err != nil {
			t.Fatalf("run %s: %v\n%s%s", name, err, stdout, errb)
		}
		return out
	}
	a, b, c := run("a", "sim://tiny?seed=5"), run("b", "sim://tiny?seed=5"), run("slow", slow)
	compareJSON := func(base, cand string) (rows map[string][3]float64, verdicts map[string]string) {
		e, out, errb := testEnv()
		if err := bench(context.Background(), e, []string{"compare", base, cand, "--format", "json"}); err != nil {
			t.Fatalf("compare: %v\n%s", err, errb)
		}
		var cmp struct {
			Tables []struct {
				Scope string
				Rows  []struct {
					Metric, Stat, Verdict string
					Change                *float64
					Lo                    *float64 `json:"change_lo"`
					Hi                    *float64 `json:"change_hi"`
				} `json:"rows"`
			} `json:"tables"`
		}
		if err := json.Unmarshal(out.Bytes(), &cmp); err != nil {
			t.Fatal(err)
		}
		rows, verdicts = map[string][3]float64{}, map[string]string{}
		for _, r := range cmp.Tables[0].Rows {
			key := strings.TrimSuffix(r.Metric+"."+r.Stat, ".")
			verdicts[key] = r.Verdict
			if r.Change != nil && r.Lo != nil && r.Hi != nil {
				rows[key] = [3]float64{*r.Change, *r.Lo, *r.Hi}
			}
		}
		return rows, verdicts
	}
	_, same := compareJSON(a, b)
	for k, v := range same {
		if v != "~" {
			t.Errorf("same scenario and seed: %s called %q", k, v)
		}
	}
	rows, slower := compareJSON(a, c)
	for _, k := range []string{"itl_ms.p50", "tpot_ms.p50", "e2e_ms.p50"} {
		r, ok := rows[k]
		if !ok || slower[k] != "regression" || !(r[1] <= 0.2 && 0.2 <= r[2]) || math.Abs(r[0]-0.2) > 0.03 {
			t.Errorf("20 %% slower: %s %q change %v: want a regression whose interval holds +20 %%", k, slower[k], r)
		}
	}
}

// TestCompareDifferentWorkloads: 1,024-token prompts against 512-token
// ones is not a comparison of servers: refused (exit 2) naming the
// difference, or, with --different-workloads, flagged in the first line.
func TestCompareDifferentWorkloads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, n := range []string{"512", "1024"} {
		e, out, errb := testEnv()
		if err := bench(context.Background(), e, []string{"run", "--target", "sim://tiny", "--concurrency", "2", "--requests", "20",
			"--input-tokens", n, "--output-tokens", "16", "--virtual", "--quiet", "--out", filepath.Join(dir, n)}); err != nil {
			t.Fatalf("run: %v\n%s%s", err, out, errb)
		}
	}
	e, _, _ := testEnv()
	err := bench(context.Background(), e, []string{"compare", filepath.Join(dir, "1024"), filepath.Join(dir, "512")})
	if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "input tokens 1024 against 512") {
		t.Errorf("different workloads: exit %d, %v", exitCode(err), err)
	}
	e, out, _ := testEnv()
	if err := bench(context.Background(), e, []string{"compare", filepath.Join(dir, "1024"), filepath.Join(dir, "512"), "--different-workloads"}); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(out.String(), "\n"); !strings.HasPrefix(first, "DIFFERENT WORKLOADS: input tokens 1024 against 512") {
		t.Errorf("first line %q", first)
	}
}

// TestCompareHistory: a baseline history of runs with other seeds gives a
// single-run comparison its run-to-run noise: another seed on the same
// server calls no change, a server 20 % slower calls regressions of its
// per-token times whose intervals hold the true +20 %, and the base runs
// are added to the history once.
func TestCompareHistory(t *testing.T) {
	t.Parallel()
	cfg, err := sim.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(name, target string) string {
		out := filepath.Join(dir, name)
		e, stdout, errb := testEnv()
		if err := bench(context.Background(), e, []string{"run", "--target", target, "--rate", "40", "--requests", "200",
			"--input-tokens", "256", "--output-tokens", "48", "--seed", name[len(name)-1:], "--virtual", "--quiet", "--out", out}); err != nil {
			t.Fatalf("run %s: %v\n%s%s", name, err, stdout, errb)
		}
		return out
	}
	slowURL := fmt.Sprintf("sim://tiny?step_overhead_us=%g&per_seq_us=%g&per_kv_token_ns=%g&per_prefill_token_us=%g",
		1.2*cfg.StepOverheadUS, 1.2*cfg.PerSeqUS, 1.2*cfg.PerKVTokenNS, 1.2*cfg.PerPrefillTokenUS)
	h1, h2, h3, h4 := run("h1", "sim://tiny"), run("h2", "sim://tiny"), run("h3", "sim://tiny"), run("h4", "sim://tiny")
	base, other, slow := run("b5", "sim://tiny"), run("o6", "sim://tiny"), run("s7", slowURL)
	hist := filepath.Join(dir, "history.jsonl")
	// Each night's baseline compared with that day's candidate goes into
	// the history.
	for i, h := range []string{h1, h2, h3} {
		e, _, errb := testEnv()
		if err := bench(context.Background(), e, []string{"compare", h, h4, "--history", hist}); err != nil {
			t.Fatalf("compare: %v\n%s", err, errb)
		}
		if want := fmt.Sprintf("added 1 base run(s) (%d runs in all)", i+1); !strings.Contains(errb.String(), want) {
			t.Errorf("history not recorded: %s", errb)
		}
	}
	compareJSON := func(cand string) (noise string, runs int, rows map[string][3]float64, verdicts map[string]string) {
		e, out, errb := testEnv()
		if err := bench(context.Background(), e, []string{"compare", base, cand, "--history", hist, "--format", "json"}); err != nil {
			t.Fatalf("compare: %v\n%s", err, errb)
		}
		var c struct {
			Noise       string `json:"noise"`
			HistoryRuns int    `json:"history_runs"`
			Tables      []struct {
				Rows []struct {
					Metric, Stat, Verdict string
					Change                *float64
					Lo                    *float64 `json:"change_lo"`
					Hi                    *float64 `json:"change_hi"`
				} `json:"rows"`
			} `json:"tables"`
		}
		if err := json.Unmarshal(out.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		rows, verdicts = map[string][3]float64{}, map[string]string{}
		for _, r := range c.Tables[0].Rows {
			key := strings.TrimSuffix(r.Metric+"."+r.Stat, ".")
			verdicts[key] = r.Verdict
			if r.Change != nil && r.Lo != nil && r.Hi != nil {
				rows[key] = [3]float64{*r.Change, *r.Lo, *r.Hi}
			}
		}
		return c.Noise, c.HistoryRuns, rows, verdicts
	}
	noise, n, rows, same := compareJSON(other)
	if noise != "history" || n < 3 {
		t.Fatalf("noise %q from %d history runs, want history from 3 or more", noise, n)
	}
	for k, v := range same {
		if v != "~" {
			t.Errorf("another seed, same server: %s called %q (change %v)", k, v, rows[k])
		}
	}
	// Per-token times scale with the step cost; end-to-end latency, in an
	// open loop near capacity, grows by more (queueing).
	_, _, rows, slower := compareJSON(slow)
	for _, k := range []string{"itl_ms.p50", "tpot_ms.p50"} {
		r, ok := rows[k]
		if !ok || slower[k] != "regression" || !(r[1] <= 0.2 && 0.2 <= r[2]) {
			t.Errorf("20 %% slower: %s %q change %v: want a regression whose interval holds +20 %%", k, slower[k], r)
		}
	}
	lines, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(lines), "\n"); got != 4 {
		t.Errorf("history holds %d runs, want 4 (h1–h3 and b5 once)", got)
	}
}
