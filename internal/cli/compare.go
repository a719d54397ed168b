package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/compare"
)

const compareUsage = `Usage: bench compare BASE NEW [--max-regression [SCOPE:]METRIC[.STAT]=N% ...] [--alpha 0.05] [--min-change 5%] [--format text|json] [--partial] [--mixed]

Compares a baseline run with a new one (results files or run directories),
benchstat-style: for the whole run and each stage both have, every latency
percentile (TTFT, TTFC, ITL, TPOT, E2E), throughput and error rate, the
relative change, and whether it is significant. A directory of shard
directories (shard-0/, shard-1/, …) stands for their merge.

Significance comes from a two-sided Mann-Whitney U test on per-request
values (each request's mean ITL); it tests a shift of the whole
distribution, so a change confined to the tail may not be called
significant. A change is a regression or an improvement when p < alpha and
at least --min-change. Different offered loads are flagged.

--max-regression makes a gate: exit code 3 when a figure got worse by more
than N% (latencies: significantly). SCOPE is a stage (default: the whole
run); metrics: ttft_ms, ttfc_ms, itl_ms, tpot_ms, e2e_ms (.p50, .p90, .p95,
.p99, .p99_9, .mean, .max), output_tokens_per_s, requests_per_s, error_rate.

Examples:
  bench compare runs/v0.11.1 runs/v0.11.2
  bench compare base/results.jsonl new/results.jsonl --max-regression ttft_ms.p99=10% --max-regression itl_ms.p50=5%
  bench compare runs/main runs/pr --max-regression closed-8:tpot_ms.p50=3% --max-regression output_tokens_per_s=5%
`

func compareCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "compare", compareUsage)
	var gates multiFlag
	fs.Var(&gates, "max-regression", "gate: fail when `[SCOPE:]METRIC[.STAT]=N%` got worse by more than N% (repeatable)")
	alpha := fs.Float64("alpha", compare.DefaultAlpha, "significance level of the rank test")
	minChange := fs.String("min-change", "5%", "smallest relative change flagged as a regression or improvement")
	format := fs.String("format", "text", "output format: text or json")
	partial := fs.Bool("partial", false, "accept sharded runs whose results lack shards")
	mixed := fs.Bool("mixed", false, "merge results of different scenarios (refused otherwise: the figures would mix their workloads)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		fs.Usage()
		return usagef("compare: want BASE and NEW, got %d arguments", len(pos))
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
		BaseLabel: "base", NewLabel: "new"}
	for _, g := range gates {
		k, v, err := compare.ParseMaxRegression(g)
		if err != nil {
			return usageError{fmt.Errorf("compare: --max-regression: %w", err)}
		}
		opts.MaxRegression[k] = v
	}
	rd := report.Reader{Partial: *partial, Mixed: *mixed}
	base, err := rd.FromFiles(pos[0])
	if err != nil {
		return readError("compare: base", err)
	}
	cand, err := rd.FromFiles(pos[1])
	if err != nil {
		return readError("compare: new", err)
	}
	c, err := compare.Runs(base, cand, opts)
	if err != nil {
		return usageError{fmt.Errorf("compare: %w", err)}
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
	if !c.Pass {
		failed := 0
		for _, g := range c.Gates {
			if !g.Pass {
				failed++
			}
		}
		return fmt.Errorf("%w: %d of %d regression limits exceeded", errBudget, failed, len(c.Gates))
	}
	return nil
}
