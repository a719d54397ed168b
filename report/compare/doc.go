// Package compare compares two runs benchstat-style and gates on
// regressions: for the whole run and each stage both have, latency
// percentiles, throughput and error rate side by side, the relative
// change, and a Mann-Whitney U test on per-request values, Holm-adjusted
// over each table.
//
// It consumes two report.Aggregates (each one run, or several merged
// files) and Options (significance level, smallest change flagged,
// --max-regression limits) and produces a Comparison, written as text
// (WriteText) or JSON. The statistics are in stats.go.
package compare
