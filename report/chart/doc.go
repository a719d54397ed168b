// Package chart draws a run's plots and its self-contained HTML report, a
// sweep's trade-off plot and a server log's start-up and decay plots: the
// only part of servebench that imports a plotting library (gonum/plot).
//
// It consumes a report.Aggregate and its judged report.Summary (or a
// sweep's points, or the start-up phases and stats lines package vllmlog
// read from a server log) and produces PNG and SVG figures (timeline,
// decay, latency, stages; startup and the log's decay) and report.html,
// one page with the conclusion, the workload box, the summary, the budget
// verdict, the findings and the analyst's detail, the plots inline (with an inline script that
// reads the nearest data point's value and zooms by redrawing a panel's
// axes for the range shown: readout.js, from each figure's Panels), the
// errors and the resolved scenario, loading nothing from anywhere. Their size does not
// grow with the number of requests: the timeline marks each request's
// latency up to 5,000 requests and draws per-bin quantile bands beyond.
// With GPU telemetry the timeline has a power and a utilisation panel,
// one line per GPU (gpupanels.go); without, a sentence says so. The output is a pure
// function of the records and the verdict, so `bench plot` redraws exactly
// what `bench run` drew.
//
// For a sweep or a search it draws the trade-off plot (SweepPlot, with the
// budgets as lines and each value's verdict marked), latency and
// throughput against load (LoadPlot), per-user against total output
// throughput with its Pareto frontier (ParetoPlot: left out with a
// sentence when every value served the same total output, and point
// labels placed where they overlap nothing, or left out and counted), and
// sweep.html (SweepPage), which package sweep fills from its summary.
// Every text of every plot and page is in one font family, Liberation
// Sans.
package chart
