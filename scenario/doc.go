// Package scenario is servebench's load model: it reads and validates
// scenario files, generates the prompts, paces the arrivals and runs the
// stages of a benchmark against a Doer (the streaming client).
//
// It consumes a YAML scenario file (see Scenario for the format; unknown keys
// are rejected and every problem is reported as file:line: field: message),
// optional command-line overrides (Scenario.Set, Scenario.Override) and a
// Doer that turns one client.Request into one client.Result. It produces the
// resolved scenario as JSON for the results header (Scenario.Resolved), a
// deterministic prompt for every sequence number (Prompts), and, from
// Runner.Run, exactly one client.Result per scheduled request, handed to an
// emit function as each request finishes.
//
// # Load model
//
// A run is a list of stages executed in order. A stage is either
//
//   - closed loop (concurrency: N): N workers, each sending its next request
//     as soon as its previous one finished. Scheduled is the moment the
//     worker asked, so closed-loop schedule lag is only the harness's own
//     overhead; or
//
//   - open loop (rate: R, in requests per second): arrivals at offsets drawn
//     from an arrival process (constant, poisson or gamma with a burstiness
//     shape, as vLLM's bench serve). The scheduler never waits for
//     responses: an arrival that finds max_concurrency requests in flight is
//     recorded as a Dropped result and never sent, and every request's
//     Scheduled time is the arrival's intended time, so latency measured
//     from Scheduled includes any lag the harness or the server imposed; or
//
//   - a trace replay (trace: {path, speedup}): an open loop whose arrivals
//     and lengths are a trace file's lines (Mooncake's JSONL format), at
//     the file's timestamps divided by the speed-up (TraceSchedule), with
//     prompts whose hash_ids blocks are the same text wherever they recur
//     (Prompts.TraceAt).
//
//   - a session stage (session: {...}): agent-like sessions, held open at
//     a count (concurrency) or started at a rate, each a program drawn
//     from the spec (SessionSpec: turns, message and reply lengths, think
//     time, tool rounds, sub-agent fan-outs, compaction) by
//     Prompts.SessionTurn, its messages' texts from Prompts.Text; or the
//     sessions of a sessions trace (session.trace, TraceSession), each
//     turn at its timestamp or after the reply before it.
//
// With prompts.prefix_cache (PrefixCache) synthetic prompts start with
// shared prefixes long enough to make a target share of their tokens a
// prefix-cache hit, and a stage with prime: true sends each prefix once
// before the measured stages.
//
// With prompts.conversation the requests of closed-loop stages are the
// turns of multi-turn chat sessions: a worker runs a session's turns in
// order (Prompts.Session, Prompts.Turn), each carrying the history.
//
// Each stage is bounded by a request count and/or a duration; the whole run
// by load.max_duration. A stage ends when its bound is reached and its
// in-flight requests have finished, so the stages' records never overlap.
// The first warmup.requests requests (or those scheduled within
// warmup.duration) of a stage are flagged Warmup and count towards the
// stage's requests.
//
// Sequence numbers are unique, start at 0 and increase in scheduling order
// across the whole run. The prompt of a request is a pure function of the
// scenario's seed and the request's sequence number.
//
// # Shards
//
// A run can be split over several load generators (Shard, `bench run
// --shard i/n`): each runs its share of every stage, numbers its requests
// i, i+n, i+2n, … so that sequence numbers and prompts stay unique across
// shards, and the shards' results merge into the run's (package report).
package scenario
