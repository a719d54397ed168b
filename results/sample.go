package results

import (
	"fmt"
	"strings"
	"time"
)

// Sample is the record of one scrape of the server's /metrics: a
// KindScrape line in the results file, beside the request records. Times
// are offsets from the run's epoch (Header.Started) on the monotonic clock,
// encoded in nanoseconds, like the request records' offsets.
//
// A failed scrape is a Sample too, with OK false and Error set; it carries
// no values.
type Sample struct {
	Index  uint64 `json:"index"`  // 0 for the first scrape of a scraper, then 1, 2, …
	Target string `json:"target"` // URL scraped

	Start    time.Duration `json:"start_ns"`    // just before the request was sent
	At       time.Duration `json:"at_ns"`       // the response headers arrived (or the failure was seen): the time the values describe
	Duration time.Duration `json:"duration_ns"` // from Start until the page was read and parsed

	OK     bool   `json:"ok"`
	Status int    `json:"status,omitempty"` // HTTP status, when a response arrived
	Error  string `json:"error,omitempty"`  // why the scrape failed

	// Reading holds the page's values: the profile name, the aggregate
	// values and histograms, per-engine values and the metric each meaning
	// was read from. Counters and histograms are raw cumulative values;
	// Rates turns successive samples into per-interval rates.
	Reading
}

// Meaning is an engine-independent quantity read from a metrics page. The
// scraper's profiles map each engine's metric names onto meanings.
type Meaning string

// Stable meanings. The units are those of the engines' own series: kv_usage
// is a fraction, counters count requests or tokens, histograms are seconds.
const (
	KVUsage          Meaning = "kv_usage"          // gauge: fraction of KV-cache capacity in use, 0..1
	Running          Meaning = "running"           // gauge: requests in the running batch
	Waiting          Meaning = "waiting"           // gauge: requests queued for admission
	Preemptions      Meaning = "preemptions"       // counter: requests preempted (or retracted)
	PromptTokens     Meaning = "prompt_tokens"     // counter: prompt tokens processed
	GenerationTokens Meaning = "generation_tokens" // counter: output tokens generated
	PrefixHits       Meaning = "prefix_hits"       // counter: prompt tokens found in the prefix cache
	PrefixQueries    Meaning = "prefix_queries"    // counter: prompt tokens looked up in the prefix cache
	TTFT             Meaning = "ttft"              // histogram: server time to first token, seconds
	ITL              Meaning = "itl"               // histogram: server inter-token latency, seconds
	E2E              Meaning = "e2e"               // histogram: server end-to-end request latency, seconds
	QueueTime        Meaning = "queue_time"        // histogram: time queued before first scheduled, seconds

	// Speculative decoding, as the engine counts it (vLLM's spec_decode
	// counters; SGLang's gauges). A draft is one proposal of up to k
	// tokens for one request in one step; its accepted tokens are the
	// proposal's tokens the target model kept, the bonus token aside.
	SpecDrafts         Meaning = "spec_drafts"          // counter: draft proposals
	SpecDraftTokens    Meaning = "spec_draft_tokens"    // counter: tokens proposed by the drafts
	SpecAcceptedTokens Meaning = "spec_accepted_tokens" // counter: proposed tokens accepted
	SpecAcceptLength   Meaning = "spec_accept_length"   // gauge: tokens per step, bonus included, as the server averages it
	SpecAcceptRate     Meaning = "spec_accept_rate"     // gauge: accepted ÷ proposed, as the server averages it

	// GPU telemetry (a DCGM exporter's page, an nvidia-smi or amd-smi sampler;
	// Reading.GPU). Per GPU in Reading.Engines, keyed by the GPU's index;
	// summed over GPUs, except the fractions and clocks, averaged.
	GPUPowerW       Meaning = "gpu_power_w"        // gauge: power draw, watts
	GPUEnergyJ      Meaning = "gpu_energy_j"       // counter: energy since the GPU booted, joules
	GPUUtil         Meaning = "gpu_util"           // gauge: share of time a kernel ran, 0..1
	GPUSMActive     Meaning = "gpu_sm_active"      // gauge: share of SM cycles with a warp resident, 0..1
	GPUDRAMActive   Meaning = "gpu_dram_active"    // gauge: share of cycles the memory interface was busy, 0..1
	GPUMemUsedBytes Meaning = "gpu_mem_used_bytes" // gauge: framebuffer memory in use, bytes
	GPUSMClockMHz   Meaning = "gpu_sm_clock_mhz"   // gauge: SM clock, MHz
	GPUPowerLimitW  Meaning = "gpu_power_limit_w"  // gauge: enforced power limit, watts
	GPUPowerCapped  Meaning = "gpu_power_capped"   // gauge: 1 while the clocks are held down by the power cap, else 0
)

// Meanings returns every stable meaning in canonical order: the engine's
// gauges, counters and histograms, then speculative decoding's, then the
// GPU's.
func Meanings() []Meaning {
	return []Meaning{
		KVUsage, Running, Waiting,
		Preemptions, PromptTokens, GenerationTokens, PrefixHits, PrefixQueries,
		TTFT, ITL, E2E, QueueTime,
		SpecDrafts, SpecDraftTokens, SpecAcceptedTokens, SpecAcceptLength, SpecAcceptRate,
		GPUPowerW, GPUEnergyJ, GPUUtil, GPUSMActive, GPUDRAMActive, GPUMemUsedBytes, GPUSMClockMHz,
		GPUPowerLimitW, GPUPowerCapped,
	}
}

// GPU reports whether m is GPU telemetry rather than an engine's figure.
func (m Meaning) GPU() bool { return strings.HasPrefix(string(m), "gpu_") }

// Spec reports whether m is a speculative-decoding figure.
func (m Meaning) Spec() bool { return strings.HasPrefix(string(m), "spec_") }

// Behaviour is how a meaning's value behaves over time.
type Behaviour int

// Behaviours of a meaning.
const (
	Gauge        Behaviour = iota + 1 // an instantaneous value
	Counter                           // a cumulative count that only grows, except when the server restarts
	Histogrammed                      // cumulative bucket counts, count and sum
)

// String returns "gauge", "counter" or "histogram".
func (b Behaviour) String() string {
	switch b {
	case Gauge:
		return "gauge"
	case Counter:
		return "counter"
	case Histogrammed:
		return "histogram"
	}
	return fmt.Sprintf("Behaviour(%d)", int(b))
}

// Behaviour returns how m behaves over time, or 0 for an unknown meaning.
func (m Meaning) Behaviour() Behaviour {
	switch m {
	case KVUsage, Running, Waiting, SpecAcceptLength, SpecAcceptRate,
		GPUPowerW, GPUUtil, GPUSMActive, GPUDRAMActive, GPUMemUsedBytes, GPUSMClockMHz, GPUPowerLimitW, GPUPowerCapped:
		return Gauge
	case Preemptions, PromptTokens, GenerationTokens, PrefixHits, PrefixQueries,
		SpecDrafts, SpecDraftTokens, SpecAcceptedTokens, GPUEnergyJ:
		return Counter
	case TTFT, ITL, E2E, QueueTime:
		return Histogrammed
	}
	return 0
}

// Averaged reports whether m is combined across engines (or GPUs) by its
// mean rather than its sum: a usage fraction of two half-full engines is
// one half, and so is a clock or a share of time; power and memory add up.
func (m Meaning) Averaged() bool {
	switch m {
	case KVUsage, SpecAcceptLength, SpecAcceptRate, GPUUtil, GPUSMActive, GPUDRAMActive, GPUSMClockMHz, GPUPowerCapped:
		return true
	}
	return false
}
