// Package vllmmetric names vLLM's Prometheus series, spelled exactly as
// vLLM spells them. The simulator exports these names and the scraper's
// vLLM profile reads them, so the two cannot drift.
//
// It holds constants only: the current V1 names (counters with their _total
// suffix as scraped from /metrics) and the label names vLLM puts on engine
// series. Names that older vLLM versions used before the renames of 2025
// live in the scraper's profile, since the simulator does not export them.
package vllmmetric

// vLLM V1 metric names as scraped from /metrics.
const (
	NumRequestsRunning      = "vllm:num_requests_running"       // gauge
	NumRequestsWaiting      = "vllm:num_requests_waiting"       // gauge
	KVCacheUsagePerc        = "vllm:kv_cache_usage_perc"        // gauge, 0–1
	NumPreemptionsTotal     = "vllm:num_preemptions_total"      // counter
	PromptTokensTotal       = "vllm:prompt_tokens_total"        // counter
	GenerationTokensTotal   = "vllm:generation_tokens_total"    // counter
	PrefixCacheQueries      = "vllm:prefix_cache_queries_total" // counter, tokens
	PrefixCacheHits         = "vllm:prefix_cache_hits_total"    // counter, tokens
	RequestSuccessTotal     = "vllm:request_success_total"      // counter, label finished_reason
	TimeToFirstToken        = "vllm:time_to_first_token_seconds"
	InterTokenLatency       = "vllm:inter_token_latency_seconds"
	E2ERequestLatency       = "vllm:e2e_request_latency_seconds"
	RequestQueueTime        = "vllm:request_queue_time_seconds"
	IterationTokensTotal    = "vllm:iteration_tokens_total" // histogram despite the name
	RequestPromptTokens     = "vllm:request_prompt_tokens"
	RequestGenerationTokens = "vllm:request_generation_tokens"
	CacheConfigInfo         = "vllm:cache_config_info" // gauge = 1, labels describe the cache

	// Speculative decoding counters, exported only when a draft is
	// configured (vllm/v1/spec_decode/metrics.py).
	SpecDecodeNumDrafts               = "vllm:spec_decode_num_drafts_total"
	SpecDecodeNumDraftTokens          = "vllm:spec_decode_num_draft_tokens_total"
	SpecDecodeNumAcceptedTokens       = "vllm:spec_decode_num_accepted_tokens_total"
	SpecDecodeNumAcceptedTokensPerPos = "vllm:spec_decode_num_accepted_tokens_per_pos_total" // label position
)

// Label names vLLM puts on engine metrics.
const (
	LabelModelName      = "model_name"
	LabelEngine         = "engine"
	LabelFinishedReason = "finished_reason"
	LabelPosition       = "position" // draft position of the per-position acceptance counter
)
