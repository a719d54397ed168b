// Package profile is the table of the engines whose /metrics pages
// servebench reads: for each engine family (vLLM, SGLang, TGI, llama.cpp,
// LMDeploy), the metric names that carry each meaning (results.Meaning),
// how data-parallel engines and replicated ranks are labelled, and whether
// counters move per token or at a request's end. It is a leaf: package
// scrape reads pages with it, and package scenario checks scrape.profile
// against its names, so the two cannot disagree on which profiles exist.
package profile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/servebench/servebench/internal/vllmmetric"
	"github.com/servebench/servebench/results"
)

// Field selects which number of a series a Source reads.
type Field int

// Fields.
const (
	FieldValue Field = iota // the value of a gauge, counter or untyped series
	FieldSum                // the _sum of a histogram or summary (a cumulative counter)
)

// Source is one place a meaning can be read from.
type Source struct {
	Metric string            // metric family name exactly as exposed, e.g. "vllm:num_preemptions_total"
	Labels map[string]string // read only the series carrying these label values; nil reads them all
	Field  Field             // which number of each series to read

	// Per, when set, names a second family of the same engine by which the
	// value is divided: a ratio of two gauges standing in for a meaning the
	// engine does not export directly (TGI's reserved token budget over its
	// cap as kv_usage). Sample.Matched records it as "Metric/Per".
	Per string

	// Scale converts the series' unit to the meaning's (0.001 for a
	// counter in millijoules read as joules, 0.01 for a percentage read as
	// a fraction); zero means 1.
	Scale float64
}

// Factor returns the source's Scale, 1 when unset.
func (s Source) Factor() float64 {
	if s.Scale == 0 {
		return 1
	}
	return s.Scale
}

// String returns the source as Sample.Matched records it: the metric name,
// its label selector if any, and "/Per" for a ratio, e.g.
// `sglang:cached_tokens_total{cache_source="total"}`.
func (s Source) String() string {
	var b strings.Builder
	b.WriteString(s.Metric)
	if len(s.Labels) > 0 {
		keys := make([]string, 0, len(s.Labels))
		for k := range s.Labels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s=%q", k, s.Labels[k])
		}
		b.WriteByte('}')
	}
	if s.Per != "" {
		b.WriteString("/" + s.Per)
	}
	return b.String()
}

// Profile maps one engine family's metric names onto stable meanings.
// Profiles returned by this package are fresh copies; changing one affects
// nobody else.
type Profile struct {
	Name   string // "vllm", "sglang", "tgi", "llamacpp", "lmdeploy"
	Prefix string // metric-name prefix that identifies the engine's page

	// EngineLabel is the label that splits the work between data-parallel
	// engines ("engine" for vLLM, "dp_rank" for SGLang); empty when the
	// engine exports one series per metric.
	EngineLabel string

	// ReplicaLabels are labels whose values repeat the same batch (tensor or
	// pipeline ranks). Only the series with the lowest value of each such
	// label are read, so a batch is not counted once per rank.
	ReplicaLabels []string

	// CountersAtEnd is true when the engine adds a request's tokens to its
	// counters only when the request ends (results.Reading.CountersAtEnd):
	// a hint, which the correlation uses only when the series themselves
	// cannot tell.
	CountersAtEnd bool

	// Sources lists, for each meaning the engine can export, candidate
	// sources newest first. The first candidate present on a page is used.
	// A meaning absent from the map is one the engine never exports.
	Sources map[results.Meaning][]Source

	// PerPosition is the counter of accepted draft tokens by draft
	// position (speculative decoding), whose PositionLabel says the
	// position; empty when the engine exports none.
	PerPosition   string
	PositionLabel string

	// GPU is true for a GPU telemetry profile (DCGM): its Engines are
	// GPUs, keyed by EngineLabel, and DeviceLabels name the labels that
	// describe each.
	GPU          bool
	DeviceLabels DeviceLabels
}

// DeviceLabels are the label names a GPU page describes its devices
// with (results.Device); an empty name is a label the page lacks.
type DeviceLabels struct {
	UUID, Model, Host, Pod, Namespace, Container string
}

// Provides reports whether the profile knows any source for m.
func (p Profile) Provides(m results.Meaning) bool { return len(p.Sources[m]) > 0 }

// Profile names.
const (
	VLLM     = "vllm"
	SGLang   = "sglang"
	TGI      = "tgi"
	LlamaCPP = "llamacpp"
	LMDeploy = "lmdeploy"

	// Auto detects the profile from the page. The empty string
	// means the same.
	Auto = "auto"

	// DCGM reads NVIDIA's DCGM exporter page (GPU telemetry, scrape.gpu).
	DCGM = "dcgm"
)

// All returns the built-in profiles, in detection-preference order.
func All() []Profile {
	return []Profile{vllmProfile(), sglangProfile(), tgiProfile(), llamacppProfile(), lmdeployProfile()}
}

// Names returns the names scrape.profile takes: Auto, then every
// built-in profile's.
func Names() []string {
	names := []string{Auto}
	for _, p := range All() {
		names = append(names, p.Name)
	}
	return names
}

// GPUProfiles returns the built-in GPU telemetry profiles (DCGM). They
// are not among All: an engine's page is never read as a GPU's.
func GPUProfiles() []Profile { return []Profile{dcgmProfile()} }

// ByName returns the built-in profile called name, engine or GPU.
func ByName(name string) (Profile, error) {
	var names []string
	for _, p := range append(All(), GPUProfiles()...) {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Profile{}, fmt.Errorf("scrape: unknown profile %q (known: %s, or %q to detect)", name, strings.Join(names, ", "), Auto)
}

// Detect returns the profile whose prefix the most metric families carry,
// or false when no family carries any known prefix. Ties go to the earlier
// profile in All's order.
func Detect(profiles []Profile, names []string) (Profile, bool) {
	best, bestN := -1, 0
	for i, p := range profiles {
		n := 0
		for _, name := range names {
			if strings.HasPrefix(name, p.Prefix) {
				n++
			}
		}
		if n > bestN {
			best, bestN = i, n
		}
	}
	if best < 0 {
		return Profile{}, false
	}
	return profiles[best], true
}

func src(metric string) Source { return Source{Metric: metric} }

// vLLM metric names. The current ones come from the simulator's constants
// (sim/metrics.go), so the built-in target and the scraper cannot drift; the
// names older servers used before the renames of 2025 (VLLM-NOTES §4.4) are
// defined here, since the simulator does not export them.
const (
	vllmKVCacheUsagePerc        = vllmmetric.KVCacheUsagePerc
	vllmNumRequestsRunning      = vllmmetric.NumRequestsRunning
	vllmNumRequestsWaiting      = vllmmetric.NumRequestsWaiting
	vllmNumPreemptionsTotal     = vllmmetric.NumPreemptionsTotal
	vllmPromptTokensTotal       = vllmmetric.PromptTokensTotal
	vllmGenerationTokensTotal   = vllmmetric.GenerationTokensTotal
	vllmPrefixCacheHitsTotal    = vllmmetric.PrefixCacheHits
	vllmPrefixCacheQueriesTotal = vllmmetric.PrefixCacheQueries
	vllmTTFTSeconds             = vllmmetric.TimeToFirstToken
	vllmITLSeconds              = vllmmetric.InterTokenLatency
	vllmE2ESeconds              = vllmmetric.E2ERequestLatency
	vllmQueueTimeSeconds        = vllmmetric.RequestQueueTime
	vllmEngineLabel             = vllmmetric.LabelEngine
	vllmSpecDrafts              = vllmmetric.SpecDecodeNumDrafts
	vllmSpecDraftTokens         = vllmmetric.SpecDecodeNumDraftTokens
	vllmSpecAcceptedTokens      = vllmmetric.SpecDecodeNumAcceptedTokens
	vllmSpecAcceptedPerPos      = vllmmetric.SpecDecodeNumAcceptedTokensPerPos

	vllmGPUCacheUsagePerc     = "vllm:gpu_cache_usage_perc"           // renamed vllm:kv_cache_usage_perc
	vllmGPUPrefixCacheHits    = "vllm:gpu_prefix_cache_hits_total"    // renamed vllm:prefix_cache_hits_total
	vllmGPUPrefixCacheQueries = "vllm:gpu_prefix_cache_queries_total" // renamed vllm:prefix_cache_queries_total
	vllmTPOTSeconds           = "vllm:time_per_output_token_seconds"  // replaced by vllm:inter_token_latency_seconds
)

// vllmProfile reads vLLM V1 pages, including the names that older servers
// used before the renames of 2025 (gpu_cache_usage_perc, gpu_prefix_cache_*,
// time_per_output_token_seconds). When a server exports both spellings, the
// current one wins. Before v0.9 the prefix-cache counters counted blocks, not
// tokens; a page does not say which.
func vllmProfile() Profile {
	return Profile{
		Name:        VLLM,
		Prefix:      "vllm:",
		EngineLabel: vllmEngineLabel,
		Sources: map[results.Meaning][]Source{
			results.KVUsage:            {src(vllmKVCacheUsagePerc), src(vllmGPUCacheUsagePerc)},
			results.Running:            {src(vllmNumRequestsRunning)},
			results.Waiting:            {src(vllmNumRequestsWaiting)},
			results.Preemptions:        {src(vllmNumPreemptionsTotal)},
			results.PromptTokens:       {src(vllmPromptTokensTotal)},
			results.GenerationTokens:   {src(vllmGenerationTokensTotal)},
			results.PrefixHits:         {src(vllmPrefixCacheHitsTotal), src(vllmGPUPrefixCacheHits)},
			results.PrefixQueries:      {src(vllmPrefixCacheQueriesTotal), src(vllmGPUPrefixCacheQueries)},
			results.TTFT:               {src(vllmTTFTSeconds)},
			results.ITL:                {src(vllmITLSeconds), src(vllmTPOTSeconds)},
			results.E2E:                {src(vllmE2ESeconds)},
			results.QueueTime:          {src(vllmQueueTimeSeconds)},
			results.SpecDrafts:         {src(vllmSpecDrafts)},
			results.SpecDraftTokens:    {src(vllmSpecDraftTokens)},
			results.SpecAcceptedTokens: {src(vllmSpecAcceptedTokens)},
		},
		PerPosition:   vllmSpecAcceptedPerPos,
		PositionLabel: vllmmetric.LabelPosition,
	}
}

// sglangProfile reads SGLang pages (ENGINES.md §1). Scheduler gauges are
// written only when the scheduler logs, so they are samples of the batch, not
// live values. prefix_queries is the prompt-token counter: SGLang has no
// separate lookup counter, and every prompt token is looked up. Retractions
// are read from the counter only; the older gauge of retractions since the
// previous log line cannot be turned into a count.
func sglangProfile() Profile {
	return Profile{
		Name:          SGLang,
		Prefix:        "sglang:",
		EngineLabel:   "dp_rank",
		ReplicaLabels: []string{"tp_rank", "pp_rank", "moe_ep_rank"},
		Sources: map[results.Meaning][]Source{
			results.KVUsage:          {src("sglang:token_usage")},
			results.Running:          {src("sglang:num_running_reqs"), src("sglang:num_requests_running")},
			results.Waiting:          {src("sglang:num_queue_reqs"), src("sglang:num_requests_waiting"), src("sglang:queue_req")},
			results.Preemptions:      {src("sglang:num_retracted_requests_total")},
			results.PromptTokens:     {src("sglang:prompt_tokens_total")},
			results.GenerationTokens: {src("sglang:generation_tokens_total")},
			results.PrefixHits: {
				{Metric: "sglang:cached_tokens_total", Labels: map[string]string{"cache_source": "total"}},
				src("sglang:cached_tokens_total"),
			},
			results.PrefixQueries: {src("sglang:prompt_tokens_total")},
			results.TTFT:          {src("sglang:time_to_first_token_seconds")},
			results.ITL:           {src("sglang:inter_token_latency_seconds"), src("sglang:time_per_output_token_seconds")},
			results.E2E:           {src("sglang:e2e_request_latency_seconds")},
			results.QueueTime:     {src("sglang:queue_time_seconds")},
			// SGLang exports speculative decoding as gauges averaged over
			// its recent steps, not counters.
			results.SpecAcceptLength: {src("sglang:spec_accept_length")},
			results.SpecAcceptRate:   {src("sglang:spec_accept_rate")},
		},
	}
}

// tgiProfile reads Hugging Face TGI pages (ENGINES.md §2). TGI has no KV
// gauge: kv_usage is the token budget the running batch has reserved over
// the budget cap, the closest proxy it exports, and is absent on backends
// without the cap gauge. Token counters are the _sum of the per-request
// length histograms; prompt tokens are counted at validation, so they include
// requests that fail later. TGI exports no preemption, prefix-cache or TTFT
// series, and its itl is one mean per request.
func tgiProfile() Profile {
	return Profile{
		Name:   TGI,
		Prefix: "tgi_",
		Sources: map[results.Meaning][]Source{
			results.KVUsage:          {{Metric: "tgi_batch_current_max_tokens", Per: "tgi_batch_max_total_tokens"}},
			results.Running:          {src("tgi_batch_current_size")},
			results.Waiting:          {src("tgi_queue_size")},
			results.PromptTokens:     {{Metric: "tgi_request_input_length", Field: FieldSum}},
			results.GenerationTokens: {{Metric: "tgi_request_generated_tokens", Field: FieldSum}},
			results.ITL:              {src("tgi_request_mean_time_per_token_duration")},
			results.E2E:              {src("tgi_request_duration")},
			results.QueueTime:        {src("tgi_request_queue_duration")},
		},
	}
}

// llamacppProfile reads llama.cpp llama-server pages (ENGINES.md §3). Current
// builds export no KV-cache gauge, so kv_usage is absent; builds before May
// 2025 exported llamacpp:kv_cache_usage_ratio, which is read when present.
// prompt_tokens counts tokens actually evaluated, excluding the prefix reused
// from the slot cache. No preemption, prefix-cache or latency series exist.
func llamacppProfile() Profile {
	// llama.cpp adds a request's tokens to its counters when the request
	// ends (as does llm-d's inference simulator, which reads as vLLM).
	return Profile{
		Name:          LlamaCPP,
		Prefix:        "llamacpp:",
		CountersAtEnd: true,
		Sources: map[results.Meaning][]Source{
			results.KVUsage:          {src("llamacpp:kv_cache_usage_ratio")},
			results.Running:          {src("llamacpp:requests_processing")},
			results.Waiting:          {src("llamacpp:requests_deferred")},
			results.PromptTokens:     {src("llamacpp:prompt_tokens_total")},
			results.GenerationTokens: {src("llamacpp:tokens_predicted_total")},
			results.PrefixHits:       {src("llamacpp:prompt_tokens_cached_total")},
		},
	}
}

// lmdeployProfile reads LMDeploy pages (ENGINES.md §6), whose names follow
// vLLM's under an lmdeploy: prefix. It exports no preemption counter and no
// prefix-lookup counter.
func lmdeployProfile() Profile {
	return Profile{
		Name:        LMDeploy,
		Prefix:      "lmdeploy:",
		EngineLabel: "engine",
		Sources: map[results.Meaning][]Source{
			results.KVUsage:          {src("lmdeploy:gpu_cache_usage_perc")},
			results.Running:          {src("lmdeploy:num_requests_running")},
			results.Waiting:          {src("lmdeploy:num_requests_waiting")},
			results.PromptTokens:     {src("lmdeploy:prompt_tokens_total")},
			results.GenerationTokens: {src("lmdeploy:generation_tokens_total")},
			results.PrefixHits:       {src("lmdeploy:cached_tokens_total")},
			results.TTFT:             {src("lmdeploy:time_to_first_token_seconds")},
			results.ITL:              {src("lmdeploy:iter_token_latency"), src("lmdeploy:time_per_output_token_seconds")},
			results.E2E:              {src("lmdeploy:e2e_request_latency_seconds")},
			results.QueueTime:        {src("lmdeploy:request_queue_time_seconds")},
		},
	}
}

// dcgmProfile reads the page of NVIDIA's DCGM exporter
// (github.com/NVIDIA/dcgm-exporter), one series per GPU labelled gpu="N",
// with the fields of its default counter files (default-counters.csv,
// dcp-metrics-included.csv). Energy is a counter in millijoules, framebuffer
// memory in MiB and utilisations in percent; DRAM and SM activity are
// ratios and come only with the profiling (DCP) fields. DRAM activity
// falls back on the memory copy utilisation, the share of time memory was
// read or written, which the default file exports. SM activity
// (DCGM_FI_PROF_SM_ACTIVE) is commented out in both default files: a page
// without it cannot show a memory-bound GPU.
func dcgmProfile() Profile {
	return Profile{
		Name:        DCGM,
		Prefix:      "DCGM_FI_",
		EngineLabel: "gpu",
		GPU:         true,
		DeviceLabels: DeviceLabels{UUID: "UUID", Model: "modelName", Host: "Hostname",
			Pod: "pod", Namespace: "namespace", Container: "container"},
		Sources: map[results.Meaning][]Source{
			results.GPUPowerW:       {src("DCGM_FI_DEV_POWER_USAGE")},
			results.GPUEnergyJ:      {{Metric: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", Scale: 1e-3}},
			results.GPUUtil:         {{Metric: "DCGM_FI_DEV_GPU_UTIL", Scale: 0.01}},
			results.GPUSMActive:     {src("DCGM_FI_PROF_SM_ACTIVE")},
			results.GPUDRAMActive:   {src("DCGM_FI_PROF_DRAM_ACTIVE"), {Metric: "DCGM_FI_DEV_MEM_COPY_UTIL", Scale: 0.01}},
			results.GPUMemUsedBytes: {{Metric: "DCGM_FI_DEV_FB_USED", Scale: 1 << 20}},
			results.GPUSMClockMHz:   {src("DCGM_FI_DEV_SM_CLOCK")},
			results.GPUPowerLimitW:  {src("DCGM_FI_DEV_ENFORCED_POWER_LIMIT"), src("DCGM_FI_DEV_POWER_MGMT_LIMIT")},
		},
	}
}

// NvidiaSMI names the nvidia-smi sampler's readings (scrape.gpu.sampler).
const NvidiaSMI = "nvidia-smi"

// SMIField is one nvidia-smi --query-gpu field servebench reads: the
// meaning it carries and the unit nvidia-smi gives it (the header says
// "power.draw [W]"; with --format=csv,nounits it says "power.draw" and
// the unit is this one).
type SMIField struct {
	Field   string
	Meaning results.Meaning
	Unit    string // "W", "%", "MiB", "MHz"; "" for a state ("Active", "Not Active")
}

// SMIFields returns the fields read from nvidia-smi's CSV, for each
// meaning the preferred field first (a later one is read only when the
// earlier is absent or "[N/A]"). clocks_event_reasons.* is the name since
// driver 535; clocks_throttle_reasons.* the earlier one.
func SMIFields() []SMIField {
	return []SMIField{
		{"power.draw", results.GPUPowerW, "W"},
		{"power.draw.average", results.GPUPowerW, "W"},
		{"power.draw.instant", results.GPUPowerW, "W"},
		{"enforced.power.limit", results.GPUPowerLimitW, "W"},
		{"power.limit", results.GPUPowerLimitW, "W"},
		{"utilization.gpu", results.GPUUtil, "%"},
		{"utilization.memory", results.GPUDRAMActive, "%"},
		{"memory.used", results.GPUMemUsedBytes, "MiB"},
		{"clocks.sm", results.GPUSMClockMHz, "MHz"},
		{"clocks.current.sm", results.GPUSMClockMHz, "MHz"},
		{"clocks_event_reasons.sw_power_cap", results.GPUPowerCapped, ""},
		{"clocks_throttle_reasons.sw_power_cap", results.GPUPowerCapped, ""},
	}
}

// SMIQuery is the --query-gpu list the sampler asks for, and
// SMIQueryOld the one it falls back on when the driver predates the
// clocks_event_reasons names.
const (
	SMIQuery    = "timestamp,index,uuid,name,power.draw,power.limit,utilization.gpu,utilization.memory,memory.used,clocks.sm,clocks_event_reasons.sw_power_cap"
	SMIQueryOld = "timestamp,index,uuid,name,power.draw,power.limit,utilization.gpu,utilization.memory,memory.used,clocks.sm,clocks_throttle_reasons.sw_power_cap"
)

// AMDSMI names the amd-smi sampler's readings (scrape.gpu.sampler).
const AMDSMI = "amd-smi"

// AMDSMIField is one value servebench reads from `amd-smi metric --json`:
// the section and key it sits under in a GPU's entry, the meaning it
// carries and the unit it has when written bare (the releases before
// ROCm 6.1 wrote numbers without units; later ones write
// {"value": 10, "unit": "W"}).
type AMDSMIField struct {
	Section, Key string
	Meaning      results.Meaning
	Unit         string // "W", "%", "MB" (amd-smi's MB are MiB: it divides bytes by 1024²)
}

// AMDSMIFields returns the fields read from amd-smi's JSON, for each
// meaning the preferred one first. socket_power is the name since ROCm
// 6.1 (current or average socket power, whichever the GPU reports: MI300
// the current, MI200 the average); current_power, average_power,
// power_limit, gfx_usage and usage.mem_usage are ROCm 6.0's. The energy
// counter is not read: see AMDSMIArgs.
func AMDSMIFields() []AMDSMIField {
	return []AMDSMIField{
		{"power", "socket_power", results.GPUPowerW, "W"},
		{"power", "current_socket_power", results.GPUPowerW, "W"},
		{"power", "average_socket_power", results.GPUPowerW, "W"},
		{"power", "current_power", results.GPUPowerW, "W"},
		{"power", "average_power", results.GPUPowerW, "W"},
		{"power", "power_limit", results.GPUPowerLimitW, "W"},
		{"usage", "gfx_activity", results.GPUUtil, "%"},
		{"usage", "gfx_usage", results.GPUUtil, "%"},
		{"usage", "umc_activity", results.GPUDRAMActive, "%"},
		{"usage", "mem_usage", results.GPUDRAMActive, "%"},
		{"mem_usage", "used_vram", results.GPUMemUsedBytes, "MB"},
	}
}

// AMDSMIArgs returns the arguments the amd-smi sampler runs it with, once
// per sample: power, engine activity and memory, as JSON. It polls
// rather than watch (-w), whose JSON printed nothing in ROCm 7.1 and
// whose CSV writes Python lists into cells; it asks no energy (-E): the
// counter has been seen to stand still, go backwards and be off in
// scale, so energy is the power integrated (scrape/testdata/SOURCES.md).
func AMDSMIArgs() []string {
	return []string{"metric", "--power", "--usage", "--mem-usage", "--json"}
}
