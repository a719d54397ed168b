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
// Where the simulator knowingly differs from vLLM:
//
//   - prompt_tokens counts the messages' text with servebench's tokenizer
//     (o200k_base) and adds no chat-template tokens, so it equals the
//     scenario's intended input length; an assistant message's tool calls
//     count as their arguments' text, and tool messages as their content;
//   - token IDs are synthetic (derived from the text's space-led pieces),
//     exact in number and shared by identical prefixes, which is all the
//     prefix cache needs; /tokenize returns them;
//   - output is plain content, one single-token word per token, one chunk
//     per engine step (several tokens with speculative decoding); n is
//     always 1, and a tool is called only when tool_choice forces it;
//   - a prefix-cache lookup is counted once, when a request is first
//     admitted (vLLM 0.15 also re-counts lookups of requests that could not
//     be admitted yet);
//   - steps run strictly one after another (no asynchronous scheduling),
//     and a request with no max_tokens and no ignore_eos ends at a
//     geometric random length with the preset's mean_output_tokens;
//   - speculative decoding (num_speculative_tokens) is a draw per draft
//     position with the configured acceptance chance, not a drafter; the
//     draft's KV needs no blocks of its own;
//   - the power model (idle_power_w, max_power_w; power.go) is linear in
//     a step's occupancy, and its page at /dcgm/metrics carries power, the
//     energy counter, GPU utilisation, the SM clock and the power limit
//     only, not a GPU's DRAM or SM activity.
//
// Metric names are the exported constants in metrics.go, spelled exactly as
// vLLM spells them, so the scraper's vLLM profile can import them.
package sim
