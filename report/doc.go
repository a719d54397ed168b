// Package report turns results files into summaries, explanations,
// verdicts and pictures: HdrHistogram aggregation per stage and overall,
// the correlation of client-side figures with scraped server state on one
// timeline, budget verdicts, baseline comparisons, plots, and writers for
// the terminal, JSON, JUnit, Markdown and a self-contained HTML report.
//
// It consumes the records of one or more results files (Header,
// Result and Sample, in any order, from any number of
// machines) through Aggregate.AddHeader, Add and AddSample, and produces a
// Summary, the documented, versioned contract written to summary.json,
// with its Correlation and Verdict sections. `bench run` builds its summary
// by reading its own results file back through the same path as
// `bench report`, so the live and offline reports cannot drift.
package report
