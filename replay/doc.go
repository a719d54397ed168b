// Package replay turns a vLLM server log into a load that reproduces it:
// from the periodic stats lines ("Engine 000: Avg prompt throughput …,
// Running: N reqs, Waiting: M reqs, GPU KV cache usage …") it rebuilds the
// requests the server served (when each arrived, its prompt and its output
// length), and from the log's configuration and KV-cache figures a
// simulator preset, so that running the written scenario on the simulator
// prints stats lines like the log's.
//
// It consumes a vllmlog.Report (one server start's stats series, its
// settings, its KV check) and produces a Replay: a scenario (one trace
// replay stage), its trace (Mooncake JSONL), a simulator preset, and what
// was assumed and what the log could not tell, which the scenario's
// description repeats. Check runs the written scenario on the simulator in
// virtual time (run.Simulate) and sets the simulator's stats lines, taken
// at the log's own times from the engine's counters exactly as vLLM's
// stat logger computes them, beside the log's. `bench logs FILE --replay
// DIR` is the command.
//
// # How the load is rebuilt
//
// A stats line's throughputs are tokens since the line before divided by
// the interval (10 s in V1 unless VLLM_LOG_STATS_INTERVAL says otherwise;
// a V0 line covers the time since the previous one); running and waiting
// are the counts at the line. Between two lines the requests admitted are
// told by the prompt tokens (vLLM counts a prompt when its first token is
// out), the arrivals and departures by the change in running and waiting
// (arrivals wait first when requests wait; the oldest running request
// leaves first), and where in the interval each happened by the
// generation throughput: the stream-seconds the tokens took at the decode
// speed the log shows. Each request's output length is the tokens it was
// given in every interval it ran. Requests already running at the first
// line arrive just before it with their context (from KV-cache usage) as
// the prompt; requests still running at the last line run one interval
// more. Time the log skipped (pasted excerpts often leave lines out) is
// assumed steady.
//
// The simulator's step cost is fitted to the intervals of steady decoding
// (same running count at both ends, no prompt, nothing waiting, and KV
// usage growing no faster than the tokens generated explain): time per
// step = running ÷ generation throughput, against the context in flight
// from KV usage; with no such interval, the fastest decode the log shows
// bounds it. Capacity (max_num_seqs, the step budget, max_model_len, the
// KV-cache pool and its layout) comes from the log through twin.FromLog
// and the KV check; a step budget the log does not print is told from the
// intervals that prefilled while requests waited (prompt tokens per decode
// step), a pool it does not print from the first line's KV usage, and
// max_model_len, unprinted, is made to fit the requests.
//
// Check reads the simulator's counters every second (or tenth of one) of
// virtual time, on a grid the log's times fall on, so the simulator's
// lines are computed at exactly the log's times.
package replay
