// Package chart draws a run's plots and its self-contained HTML report, a
// sweep's trade-off plot and a server log's start-up and decay plots: the
// only part of servebench that imports a plotting library (gonum/plot).
//
// It consumes a report.Aggregate and its judged report.Summary (or a
// sweep's points, or the start-up phases and stats lines package vllmlog
// read from a server log) and produces PNG and SVG figures (timeline,
// decay, latency, stages; startup and the log's decay) and report.html,
// one page with the conclusion, the workload box, the summary, the budget
// verdict, the findings, the plots inline (with an inline script that
// reads the value under the pointer and zooms), the errors and the
// resolved scenario, loading nothing from anywhere. Their size does not
// grow with the number of requests: the timeline marks each request's
// latency up to 5,000 requests and draws per-bin quantile bands beyond. The output is a pure
// function of the records and the verdict, so `bench plot` redraws exactly
// what `bench run` drew.
//
// For a sweep or a search it draws the trade-off plot (SweepPlot, with the
// budgets as lines and each value's verdict marked), latency and
// throughput against load (LoadPlot), per-user against total output
// throughput with its Pareto frontier (ParetoPlot), and sweep.html
// (SweepPage), which package sweep fills from its summary.
package chart
