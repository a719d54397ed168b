// Package scrape is servebench's Prometheus /metrics scraper: it reads an
// inference server's metrics page while a run loads it and maps the
// engine-specific series onto a small set of stable meanings.
//
// It consumes the text exposition format (version 0.0.4) served by vLLM,
// SGLang, TGI, llama.cpp and LMDeploy, parsed with prometheus/common's
// expfmt.TextParser, and produces Sample records: one per scrape, stamped on
// the run's monotonic clock and written as a "kind":"scrape" line into the
// same NDJSON results file as the request records (see client.Result), so a
// report can be rebuilt from the file alone. Rates turns the cumulative
// counters and histograms of successive samples into per-interval rates and
// deltas, handling counter resets.
//
// # Stable meanings
//
// A profile.Profile (package scrape/profile) lists, for each Meaning, the metric names an engine has used for
// it, newest first; the first name present on a page wins and is recorded in
// Sample.Matched. A meaning whose names are all absent is unknown, never zero:
// llama.cpp, for example, exports no KV-cache gauge, so its samples carry no
// kv_usage at all.
//
//	kv_usage           gauge, fraction of KV-cache capacity in use (0..1)
//	running, waiting   gauges, requests in the batch and in the queue
//	preemptions        counter, requests preempted (vLLM) or retracted (SGLang)
//	prompt_tokens      counter, prompt tokens processed
//	generation_tokens  counter, tokens generated
//	prefix_hits        counter, prompt tokens served from the prefix cache
//	prefix_queries     counter, prompt tokens looked up in the prefix cache
//	ttft, itl, e2e, queue_time
//	                   server-side latency histograms, in seconds
//	spec_drafts, spec_draft_tokens, spec_accepted_tokens
//	                   counters of speculative decoding (vLLM), with the
//	                   accepted tokens by draft position beside them
//	                   (Reading.AcceptedPerPos)
//	spec_accept_length, spec_accept_rate
//	                   gauges of speculative decoding (SGLang)
//
// # GPU telemetry
//
// A GPU profile (profile.DCGM, for NVIDIA's DCGM exporter) reads a GPU
// page instead of an engine's: power (gpu_power_w), the energy counter
// (gpu_energy_j), utilisation, SM and DRAM activity, framebuffer memory,
// the SM clock and the power limit, one "engine" per GPU, with each
// GPU's model, UUID, host and Kubernetes pod in Reading.Devices.
// Parser.Only keeps the series of some GPUs or of one pod. Hosts without
// an exporter are sampled with nvidia-smi instead: SMIReader reads the CSV
// that `nvidia-smi --query-gpu=… --format=csv -lms N` writes into the same
// readings, and Sampler runs it for the length of a run. AMD GPUs are
// sampled with amd-smi: ParseAMDSMI reads the JSON of one `amd-smi metric
// --power --usage --mem-usage --json` (socket power, GFX and UMC activity,
// VRAM used, per GPU), which Sampler runs once per interval, and
// AMDSMIReader reads a file of watch-mode (-w) JSON, whose entries carry
// their timestamps. amd-smi's energy counter is not read (see
// profile.AMDSMIArgs): its energy is the power integrated.
//
// # Several engines on one page
//
// Data-parallel servers label each engine's series (vLLM and LMDeploy
// engine="0", engine="1"; SGLang dp_rank). A sample keeps every engine's
// values in Sample.Engines and aggregates them into Sample.Values: kv_usage
// is the mean over engines, every other gauge and every counter is the sum,
// and histograms are summed bucket by bucket.
package scrape
