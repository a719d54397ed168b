// Package load is servebench's load model: what each kind of stage sends,
// and when, whatever clock drives it.
//
// It consumes a validated scenario.Scenario and its scenario.Prompts and
// produces requests to send (Request: when, as which sequence number and
// stage, with what content) and the records of arrivals it drops. It
// decides only what happens at a given time and when a request ends; it
// never sleeps, reads a clock or sends anything itself. A Driver supplies
// the clock and the sending: package run has two, a wall-clock driver that
// sends over HTTP through the client and a virtual-clock driver that
// submits to the simulator's engine, so every stage kind means the same
// thing in real and in virtual time.
//
// One type per stage kind (see Kind): ClosedLoop (workers that send their
// next request when the previous ends), OpenLoop (arrivals at a rate, with
// a cap on requests in flight), TraceReplay (arrivals at a trace's
// timestamps), Conversation (closed-loop users whose turns carry their
// history), Sessions (agent-like sessions held at a count or started at a
// rate: tool loops, sub-agent fan-outs and compaction, every request
// carrying the session's messages, tool calls and results included),
// SessionReplay (a sessions trace's sessions at their timestamps, each
// turn after the reply before it) and Prime (each shared prefix of
// prompts.prefix_cache once, to fill the server's cache before the
// measured stages). Each says which drivers it runs under (Supports) and how its
// requests are built; the Load sequences the stages, keeps the timers in a
// deterministic order, bounds the run by load.max_duration with the grace
// period, and holds the one circuit breaker.
//
// A Load is driven from one goroutine (the driver's loop): Start, Fire,
// Done and Stop must not be called concurrently. Counters and Request's
// Content are safe to call from any goroutine.
package load
