// Package results owns servebench's results-file format: the records a run
// writes (a header, one request record per scheduled request, the server's
// /metrics samples, warnings), their derived figures, and the codec that
// writes them as NDJSON and reads them back, one file or several merged.
//
// It sits at the bottom of the pipeline scenario → run → client Result
// records → report: the client produces Result records, the scraper Sample
// records, the run writes them with a Writer, and every report (summary,
// correlation, verdict, comparison, plots) is rebuilt from files through
// Files. It imports the standard library only, so that a program that only
// reads results files links nothing else.
//
// # The file
//
// A results file is NDJSON, gzip-compressed when its name ends in ".gz".
// Every line is one JSON object whose first key is "kind": the codec writes
// it, the record structs do not carry it. The first line is the header
// (KindHeader); then, in the order they happened, request records
// (KindRequest), scrape samples (KindScrape) and warnings (KindWarning).
// Every time in a record is an offset from the run's epoch
// (Header.Started), taken with the monotonic clock and encoded in
// nanoseconds. Schema is the format's version; new fields may appear within
// a version, a renamed or removed field bumps it.
//
// # Derived figures
//
// A Result holds raw observations only. TTFT, TTFC, ITL, TPOT, E2E and the
// schedule figures are methods, defined once in figures.go; Rates turns
// successive scrape samples into per-interval counter deltas.
package results
