// Package report turns results into a summary and judges it: per-stage
// and overall statistics from HdrHistograms, the correlation of client
// figures with server state (package correlate), budget verdicts, baseline
// comparisons, and the writers for the terminal, JSON, JUnit and Markdown,
// and the exports: a per-request CSV read straight from results files
// (WriteCSV) and vLLM's saved-result format (WriteVLLM).
// Package chart draws the plots and the HTML page; it is the only part
// that needs a plotting library.
//
// It consumes the records of one or more results files (results.Header,
// results.Result and results.Sample, in any order, from any number of
// machines) through Aggregate.AddRecord, or FromFiles, and produces a
// Summary, the documented, versioned contract written to summary.json,
// with its Correlation and Verdict sections. `bench run` adds each record
// to an Aggregate as it writes it, and `bench report` reads the file back
// into another: the two summaries are the same bytes. The metric table
// (results.Metrics, or the copy given to NewFor or Reader.Metrics) says
// which figures exist, their units and direction: every latency metric
// of it is aggregated, budgeted and exported (the per-request CSV's last
// columns) without a line here. Stage.Dist reads a latency metric from
// the Stage field whose JSON key is its name, or from Stage.Latencies
// when it has none; Stage.Figure computes the figures of a whole stage.
//
// The correlation's sentences come in two lists: Findings, the conclusion
// and what a user acts on (dropped arrivals, a stage that never steadied,
// client and server that disagree, preemptions, the other stages'
// verdicts), and Details, the analyst's material (throughput changes and
// by KV-cache usage, the decode law, Pearson r, the agreeing
// cross-checks). The terminal summary (Text) gives the conclusion and the
// first two findings; Text.Verbose and report.html give both lists.
//
// The aggregate's memory does not grow with the number of requests:
// histograms, time bins that coarsen with the run's length, and the
// per-request figures (goodput, rank tests, latency over time) of at most
// 100,000 completed requests a stage, then of a uniform sample of that
// many chosen by a hash of each request (so whatever the order of the
// records), which the verdict's note then names.
//
// The shards of a sharded run (results.Header.Shard) merge through the
// same path: Reader checks they are one complete set of one scenario,
// reads them in shard order so the summary does not depend on the order
// of the files, keeps one shard's scrapes of a server, and the summary
// says which shards it holds and how far apart they began (shards.go).
//
// A session stage's records add session figures (sessions.go: sessions
// completed per second, durations, context reached, session goodput), and
// the prefix-cache figures (cache.go) prove a target hit rate from the
// server's own counter deltas, beside the responses' usage, and say what
// the KV figures suggest when it was missed.
package report
