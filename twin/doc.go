// Package twin builds a digital twin of a measured server: it fits the
// built-in simulator's cost model and capacity to saved runs, so that the
// simulator, run in virtual time, predicts settings and loads that were
// never run.
//
// It consumes results files (results.OpenFiles: per-request chunk arrival
// times and token counts, and the scraped /metrics samples) and produces a
// simulator preset file (sim.Config with a Calibration block), which
// `target.url: sim://./twin.yaml` runs like any preset, and predictions:
// a scenario's sweep or search run on the twin in virtual time
// (run.Simulate), with a band from the fit's uncertainty and the
// run-to-run variation.
//
// # The fit
//
// vLLM emits one token per running request per engine step, so the
// tokens of all streams arrive in bursts, one burst per step. Calibrate
// clusters every chunk arrival of a run into steps (steps.go): a step
// ends at its first arrival, and no request appears twice in one step.
// For each step it knows which requests decoded and the context each read
// (prompt + tokens so far), and which requests got their first token
// (whose prompts were prefilled in it). A request whose prompt took more
// than one step (chunked, or queued) makes the steps of its wait one
// segment, whose prefill tokens are known in total but not per step.
// Each segment's duration, from the end of the step before it (or from
// the arrival that woke an idle engine), is then a linear function of the
// simulator's four cost coefficients:
//
//	duration = step_overhead_us·steps + per_seq_us·Σ sequences
//	         + per_kv_token_ns/1000·Σ context tokens + per_prefill_token_us·Σ prompt tokens
//
// fitted by weighted least squares (a segment of k steps weighs 1/k),
// with outliers beyond four robust standard deviations trimmed and
// heteroscedasticity-robust (HC1) standard errors (fit.go). Decode cost
// comes from the decode-only steps at the batch sizes and contexts the
// runs had; the per-sequence and fixed costs separate only when the runs
// had several batch sizes (two concurrencies); prefill cost comes from
// the steps that prefilled prompts, best at low load where a prompt is
// prefilled in one step.
//
// Capacity comes from the scrapes (capacity.go): KV-cache blocks from
// the usage gauge against the blocks the requests in flight held (context
// over the block size), max_num_seqs from the server's own word where it
// gives one (llama.cpp's slots, which the run records in its header,
// results.Header.Slots) or from the running gauge while requests waited.
// What the runs cannot show (a batch limit never reached, the token
// budget when no prompt was chunked) is taken from the options or from
// vLLM's defaults, said so in the notes and listed in the calibration's
// Assumed.
//
// # Power
//
// When the runs carry GPU telemetry, the simulator's power model
// (idle_power_w, max_power_w, gpus) is fitted too (power.go): each
// interval between two GPU samples gives the GPUs' mean power against
// the batch's occupancy over it (the requests in the batch, from the
// start of the step that prefilled each to its last token, over
// max_num_seqs: the footing the simulator applies the law on), and a
// least-squares line gives the power of an idle and a full batch. Its
// covariance, the windows' spread about the line and the line's miss of
// each calibration stage's measured energy are kept (sim.PowerFit). A
// prediction's band of joules per token is the perturbed twins' (each
// reads its own GPU pages, so the band moves with the speed) plus the
// line's covariance and the larger of its two misses; the scenario's
// price gives $ per 1M tokens. A twin fitted from runs without telemetry
// predicts no energy.
//
// # Run-to-run variation
//
// A real server's speed varies from one start to the next more than the
// fit's standard errors say. When a load ran more than once (observe.go:
// stages of several files, or of one, with the same shape and lengths),
// each stage's mean step time against the fit gives its level, and the
// relative standard deviation of the levels among the repeats of a load,
// pooled over loads, is added to the covariance (sim.BetweenRuns): every
// fitted cost scales together, by the variation a new run shows plus the
// mean's own uncertainty.
//
// # Trust
//
// A twin is as good as its runs: it interpolates between the batch sizes,
// contexts and prompt lengths it saw and extrapolates with the
// simulator's linear cost law; Holdout measures that by fitting on some
// stages and predicting the others. The calibration records what its
// runs covered (sim.CalibratedRange), and Predict marks a value beyond it
// or resting on an assumed setting as extrapolated, with no band. Its
// bands are 95 % intervals (Student's t for the run-to-run variation's
// degrees of freedom), or the fit's uncertainty alone when no load was
// repeated, and they say which.
package twin
