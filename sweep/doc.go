// Package sweep runs a scenario once per value of one or more server
// settings (or scenario fields), relaunching the server for every run, and
// recommends a value: servebench's answer to "which max_num_batched_tokens
// should this deployment use?".
//
// It consumes a scenario with a sweep block (scenario.Sweep) and a RunFunc
// that runs one scenario into a directory (the CLI's `bench run` path, so
// this package does not depend on the command). NewPlan lays the sweep out
// as jobs: the cartesian product of the parameters' values, each repeated,
// each with its derived scenario. Plan.Execute runs them in order: with a
// server section it starts the rendered command in its own process group
// with a log file per run, polls the readiness URL until the server is ready,
// exits or times out, runs the load, then stops the group (SIGTERM, then
// SIGKILL after the grace period); with a sim:// target the values become
// the simulator's settings (sim://PRESET?name=value). A run whose server
// does not start, exits, or serves no request is recorded as failed and
// the sweep goes on. It produces one results directory per run, sweep.json
// (Summary: every run, each value's mean figures with their 95 % intervals
// (Metrics.CI: the run's own from its summary.json, or over repeats the
// hull of the averaged own intervals and a Student-t interval over the
// runs) and its verdict met, missed or inconclusive, the recommendation,
// and a warning when the values' speculative decoding drafted different
// lengths, whose acceptance rates do not compare),
// sweep.csv (one row per run), the trade-off plot sweep.png/sweep.svg
// (TTFT and ITL p50 and the statistic each budget judges, or the p99,
// against the value, throughput below, each with its intervals as error
// bars, the budgets as lines and each value's verdict marked) and
// sweep.html, one
// self-contained page with the answer in a sentence, the table, that plot,
// the load curves and the Pareto plot of per-user against total output
// throughput (page.go).
//
// # Recommendation
//
// Among the values whose every run completed, the one with the highest
// output-token throughput that meets the scenario's budgets (the verdict
// in each run's summary.json); without budgets, the one with the highest
// throughput and no failed request, with its TTFT and ITL p99 shown so a
// person can judge them. With sweep.rank_by the figure maximised is the
// good output tokens (those of requests meeting the slo; all of them
// without one) per joule of GPU energy or per dollar of the scenario's
// cost instead, and sweep.pareto_x puts tokens/s per GPU, tokens per
// joule or $ per 1M tokens on the Pareto plot's x axis. Throughputs within 1 % of the best count as equal
// (below capacity every value serves the offered load) and the lowest E2E
// p50 breaks the tie. The reason cites the figures' 95 % intervals and
// names the qualifying values whose throughput intervals overlap the
// chosen one's (the choice stands; the data do not show it faster than
// them); a value whose budgets were inconclusive is excluded with the
// interval that straddled the limit. When no value qualifies, the
// recommendation is empty and its reason lists why each value was
// excluded.
//
// # Search
//
// With a search block (scenario.SweepSearch) Execute answers the capacity
// question instead, once per combination of the parameters: the highest
// value of one stage's rate or concurrency whose budgets pass (search.go).
// It probes the low end, which must pass, and the high end, which must
// fail, then bisects on the grid low + k·resolution until the passing and
// failing values are neighbours; each probe is a full run with its own
// directory (launching the server, if any, for every probe). A probe near
// the boundary (a deciding budget within the margin of its limit, or a
// percentile judged on too few samples) runs again, up to the search's
// repeats, and the majority decides (the simulator gets its next seed for
// each repeat). An open-loop probe is watched while it runs and stopped
// early when the server is plainly over-saturated (saturation.go). The
// answer (SearchResult) names the bracket the capacity lies in and the
// confidence it was decided with; sweep.json holds it under "search", with
// every probe.
package sweep
