// Package run owns one benchmark run: it turns a scenario into a results
// file and a judged summary, the way `bench run` and each value of
// `bench sweep` do.
//
// It consumes a validated scenario.Scenario and Options (output directory,
// API key, progress writer) and produces, in the output directory,
// results.jsonl (written record by record as requests finish), summary.json,
// the plots, report.html and, for a scenario with budgets, junit.xml and
// verdict.md; Run returns the same summary. Data flows one way: the
// scheduler (schedule.go) paces the scenario's stages and hands requests to
// the client, the client's results.Result records and the scraper's
// results.Sample records go to a single writer goroutine, which writes each
// to the file and adds it to a report.Aggregate, so the summary is exactly
// what `bench report` rebuilds from the file.
//
// Run fixes the epoch every offset counts from, starts the target (the
// built-in simulator in-process for sim://PRESET), detects the model,
// opens the connection pool before the load, and watches the harness
// itself (health.go), so that a client-side bottleneck is reported rather
// than measured as server latency. It never touches signals or process
// state: canceling its context is the graceful stop.
//
// The scheduler runs conversations (conversation.go: each closed-loop
// worker a user, each turn carrying the replies it received), trace
// replays (an open loop on the trace's schedule) and session stages
// (agent-like sessions whose requests carry tool calls and results) as
// well as plain stages.
//
// A run can be one shard of several (Options.Shard, Options.StartAt): it
// sends its share of the load, starting at an agreed wall-clock time, and
// Merge writes the outputs of the shards' results merged.
// A sim:// target can also run in virtual time (Options.Virtual, and
// Simulate, which writes nothing): the simulator's engine steps on a
// virtual clock with no HTTP and no client, the stages keep the
// scheduler's semantics, and the records are the same, so every report is
// computed by the same code (virtual.go says what virtual time leaves
// out). Searches and `bench predict` run their many probes this way.
package run
