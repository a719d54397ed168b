// Package report turns results files into summaries, verdicts and pictures:
// HdrHistogram aggregation per stage and overall, and writers for the
// terminal, JSON and other formats.
//
// It consumes the records of one or more results files (client.Header and
// client.Result, in any order, from any number of machines) through
// Aggregate.Add, and produces a Summary, the documented, versioned contract
// written to summary.json. `bench run` builds its summary by reading its own
// results file back through the same path as `bench report`, so the live
// and offline reports cannot drift.
package report
