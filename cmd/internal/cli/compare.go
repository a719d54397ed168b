package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/compare"
)

const compareUsage = `Usage: bench compare BASE NEW [flags]
       bench compare BASE1 BASE2 … vs NEW1 NEW2 … [flags]

Compares a baseline run with a new one (results files or run directories),
benchstat-style: for the whole run and each stage both have, every latency
percentile (TTFT, TTFC, ITL, TPOT, E2E), throughput and error rate, the
relative change with its 95 % interval, and whether it is a change. A
directory of shard directories (shard-0/, shard-1/, …) stands for their
merge.

With one run a side, a change's interval comes from each run's own
sampling error (distribution-free for percentiles, Wilson for the error
rate, batch means for throughput): run-to-run noise is unknown. Give
repeats on both sides (BASE1 BASE2 … vs NEW1 NEW2 …) and the interval comes
from the runs' spread (Welch): a change is called only beyond the noise
the repeats show. With --history FILE, each comparison adds its base runs
to a baseline history, and once it holds three runs of the base's
workload (lengths, stages, model), a comparison with one run a side takes
its interval from the spread of the history's runs. A change is a regression or an improvement when its
interval excludes 0 and it is at least --min-change; a p-value from a
two-sided Mann-Whitney U test on per-request values is shown beside each
latency, and decides a gate on a figure without an interval. Runs whose workloads
differ (lengths, API, dataset, stage shapes) are refused unless
--different-workloads; different offered loads are flagged.

--max-regression makes a gate: exit code 3 when the change's interval
lies beyond N% worse, 4 when it straddles N% (the runs cannot tell), 0
when it lies within. SCOPE is a stage (default: the whole run); metrics:
ttft_ms, ttfc_ms, itl_ms, tpot_ms, e2e_ms (.p50, .p90, .p95, .p99, .p99_9,
.mean, .max), output_tokens_per_s, requests_per_s, error_rate.

Examples:
  bench compare runs/v0.11.1 runs/v0.11.2
  bench compare base/results.jsonl new/results.jsonl --max-regression ttft_ms.p99=10% --max-regression itl_ms.p50=5%
  bench compare runs/main runs/pr --max-regression closed-8:tpot_ms.p50=3% --max-regression output_tokens_per_s=5%
  bench compare runs/nightly runs/pr --history ci/baseline-history.jsonl --max-regression ttft_ms.p99=10%
`

func compareCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "compare", compareUsage)
	var gates multiFlag
	fs.Var(&gates, "max-regression", "gate: fail when `[SCOPE:]METRIC[.STAT]=N%` got worse by more than N% (repeatable)")
	alpha := fs.Float64("alpha", compare.DefaultAlpha, "significance level of the rank test")
	minChange := fs.String("min-change", "5%", "smallest relative change flagged as a regression or improvement")
	format := choiceFlag(fs, "format", "text", []string{"text", "json"}, "output format: text or json")
	partial := fs.Bool("partial", false, "accept sharded runs whose results lack shards")
	different := fs.Bool("different-workloads", false, "compare runs whose workloads differ, flagged in the first line, instead of refusing")
	mixed := fs.Bool("mixed", false, "merge results of different scenarios (refused otherwise: the figures would mix their workloads)")
	history := fs.String("history", "", "baseline history `FILE` (JSON lines): its runs of the base's workload give the run-to-run noise; the base runs are added to it")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	baseArgs, newArgs, err := compareSides(pos)
	if err != nil {
		return err
	}
	if *format != "text" && *format != "json" {
		return usagef("compare: --format %q: want text or json", *format)
	}
	if !(*alpha > 0 && *alpha < 1) {
		return usagef("compare: --alpha %g: want a level between 0 and 1", *alpha)
	}
	_, mc, err := compare.ParseMaxRegression("error_rate=" + *minChange)
	if err != nil {
		return usagef("compare: --min-change %q: want a percentage like 5%%", *minChange)
	}
	if mc == 0 {
		mc = -1 // compare.Options: negative means no minimum
	}
	opts := compare.Options{Alpha: *alpha, MinChange: mc, MaxRegression: map[string]float64{},
		BaseLabel: "base", NewLabel: "new", DifferentWorkloads: *different}
	for _, g := range gates {
		k, v, err := compare.ParseMaxRegression(g)
		if err != nil {
			return usageError{err: fmt.Errorf("compare: --max-regression: %w", err)}
		}
		opts.MaxRegression[k] = v
	}
	rd := report.Reader{Partial: *partial, Mixed: *mixed}
	base, baseRuns, err := compareSide(rd, "base", baseArgs)
	if err != nil {
		return err
	}
	cand, newRuns, err := compareSide(rd, "new", newArgs)
	if err != nil {
		return err
	}
	opts.BaseRuns, opts.NewRuns = baseRuns, newRuns
	if *history != "" {
		if opts.History, err = readHistory(*history); err != nil {
			return err
		}
	}
	c, err := compare.Runs(base, cand, opts)
	if err != nil {
		return usageError{err: fmt.Errorf("compare: %w", err)}
	}
	if *history != "" {
		runs := baseRuns
		if len(runs) == 0 {
			runs = []*report.Aggregate{base}
		}
		if err := recordHistory(e, *history, opts.History, runs); err != nil {
			return err
		}
	}
	if *format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(c); err != nil {
			return fmt.Errorf("compare: %w", err)
		}
	} else if err := compare.WriteText(e.stdout, c); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	return gateErr(c)
}

// gateErr is the exit of a comparison's gates: a regression beyond a
// limit (3), else a limit the runs cannot tell (4), else none.
func gateErr(c *compare.Comparison) error {
	failed, unclear := 0, 0
	for _, g := range c.Gates {
		switch {
		case g.Inconclusive:
			unclear++
		case !g.Pass:
			failed++
		}
	}
	switch {
	case failed > 0:
		return fmt.Errorf("%w: %d of %d regression limits exceeded", errBudget, failed, len(c.Gates))
	case unclear > 0:
		return fmt.Errorf("%w: %d of %d regression limits cannot be told (their intervals straddle the limits)", errInconclusive, unclear, len(c.Gates))
	}
	return nil
}

// readHistory reads a baseline history file; a missing one is empty.
func readHistory(path string) ([]compare.HistoryRun, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("compare: --history: %w", err)
	}
	defer f.Close()
	h, err := compare.ReadHistory(f)
	if err != nil {
		return nil, fmt.Errorf("compare: --history %s: %w", path, err)
	}
	return h, nil
}

// recordHistory appends the base runs the history lacks and says so.
func recordHistory(e env, path string, hist []compare.HistoryRun, base []*report.Aggregate) error {
	add := compare.NewRuns(hist, base, time.Now())
	if len(add) == 0 {
		fmt.Fprintf(e.stderr, "history %s: the base runs are in it already (%d runs in all)\n", path, len(hist))
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("compare: --history: %w", err)
	}
	if err := compare.WriteHistory(f, add); err != nil {
		f.Close()
		return fmt.Errorf("compare: --history %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("compare: --history %s: %w", path, err)
	}
	fmt.Fprintf(e.stderr, "history %s: added %d base run(s) (%d runs in all)\n", path, len(add), len(hist)+len(add))
	return nil
}

// compareSides splits the positional arguments into the base runs and
// the new ones: BASE NEW, or BASE… vs NEW….
func compareSides(pos []string) (base, cand []string, err error) {
	if i := slices.Index(pos, "vs"); i >= 0 {
		base, cand = pos[:i], pos[i+1:]
		if len(base) == 0 || len(cand) == 0 || slices.Contains(cand, "vs") {
			return nil, nil, usagef("compare: want BASE… vs NEW…, runs on both sides of one vs")
		}
		return base, cand, nil
	}
	if len(pos) != 2 {
		return nil, nil, usagef("compare: want BASE and NEW, or BASE1 BASE2 … vs NEW1 NEW2 …, got %d arguments", len(pos))
	}
	return pos[:1], pos[1:], nil
}

// compareSide reads one side: its runs pooled, and each run alone when
// there are several.
func compareSide(rd report.Reader, label string, paths []string) (*report.Aggregate, []*report.Aggregate, error) {
	var runs []*report.Aggregate
	if len(paths) > 1 {
		for _, p := range paths {
			a, err := rd.FromFiles(p)
			if err != nil {
				return nil, nil, readError("compare: "+label, err)
			}
			runs = append(runs, a)
		}
	}
	pooled, err := rd.FromFiles(paths...)
	if err != nil {
		return nil, nil, readError("compare: "+label, err)
	}
	return pooled, runs, nil
}
