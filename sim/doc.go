// Package sim is servebench's built-in vLLM-like inference simulator: a
// deterministic model of vLLM's V1 engine (continuous batching, chunked
// prefill, a paged KV cache with prefix caching and recompute preemption,
// and a step-time cost model) behind an OpenAI-compatible HTTP server that
// speaks vLLM's SSE wire format, metric names and log lines.
//
// It consumes a Config (an embedded preset such as "tiny" or
// "gpt-oss-120b-h100", a user's preset YAML file, and --set overrides) and
// produces either a loopback HTTP server (Listen), for servebench to load
// like a real vLLM, or an Engine driven step by step on a virtual Clock, for
// tests that need the engine's behaviour without waiting for it.
//
// The engine never sleeps: Engine.Schedule plans one step and says how long
// it takes, Engine.Complete applies it. The server's driver sleeps in real
// time until each step's absolute deadline, so sleep error does not
// accumulate; tests advance a VirtualClock instead.
//
// Metric names are the exported constants in metrics.go, spelled exactly as
// vLLM spells them, so the scraper's vLLM profile can import them.
package sim
