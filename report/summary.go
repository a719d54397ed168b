package report

import (
	"reflect"
	"strings"
	"time"

	"github.com/servebench/servebench/report/correlate"
	"github.com/servebench/servebench/results"
)

// SummarySchema is the version of the summary.json contract. It changes only
// when a field changes meaning or is removed; new fields may appear.
const SummarySchema = 1

// Summary is the content of summary.json.
type Summary struct {
	Schema   int    `json:"schema"`
	Tool     string `json:"tool"`
	Version  string `json:"version"`  // of the tool that wrote the results
	Scenario string `json:"scenario"` // scenario name
	Target   string `json:"target"`
	Model    string `json:"model"`
	// ServerVersion is the server's answer to GET /version at the start
	// of the run (vLLM's version); empty when it did not answer.
	ServerVersion string `json:"server_version,omitempty"`
	// Host names the machine (or, merged, the machines, comma-separated)
	// that sent the load.
	Host    string    `json:"host,omitempty"`
	Started time.Time `json:"started"` // the (earliest) run epoch
	// DurationS is the time from the first request sent to the last one
	// ended, warmup requests included, in seconds (the stages' duration_s
	// leave the warmup out).
	DurationS float64 `json:"duration_s"`
	Files     int     `json:"files"` // results files merged into this summary
	// Workload is what the run asked of the server, from the scenario;
	// nil when the results hold no scenario.
	Workload *Workload `json:"workload,omitempty"`
	// Shards describes the shards of a sharded run whose results this
	// summary merges (bench run --shard); nil for whole runs.
	Shards *Shards `json:"shards,omitempty"`
	// Virtual is true when the results come from a virtual-time run of the
	// simulator (no HTTP, no client: see run.Simulate).
	Virtual  bool     `json:"virtual,omitempty"`
	Overall  Stage    `json:"overall"`
	Stages   []Stage  `json:"stages"`
	Warnings []string `json:"warnings,omitempty"`
	// Comparability says what would differ if the same load were run with
	// another benchmark client (drop or queue, warmup, token counts,
	// arrival process, ITL per token or per chunk), with this run's
	// numbers.
	Comparability []string `json:"comparability,omitempty"`
	// Incomplete says why the run did not complete (interrupted,
	// load.max_duration reached, killed); empty when it did, or when the
	// results files predate end records.
	Incomplete string `json:"incomplete,omitempty"`
	// Until says how each stage with a precision goal ended: the figure,
	// its interval and the margin it reached (from the end records).
	Until []results.Until `json:"until,omitempty"`
	// Harness is what the run measured of its own client (the worst of the
	// merged files): when Limited, the client, not the server, set part of
	// the figures.
	Harness *results.Harness `json:"harness,omitempty"`
	// WarmUp is the connection warm-up before the load (the first file's);
	// its time is before the first stage's window, never in it.
	WarmUp *results.WarmUp `json:"warm_up,omitempty"`

	// Verdict is the outcome of the scenario's budgets; nil when the
	// scenario has none.
	Verdict *Verdict `json:"verdict,omitempty"`

	// PrefixCache holds the share of prompt tokens the server served from
	// its prefix cache, from its counters and from usage, for each stage
	// measured against a target hit rate (prompts.prefix_cache), with the
	// verdict, and for each session or conversation stage; absent when
	// there is none.
	PrefixCache []PrefixCache `json:"prefix_cache,omitempty"`

	// Correlation joins the requests with the server's scraped metrics on
	// one timeline; nil when no request was sent.
	Correlation *correlate.Correlation `json:"correlation,omitempty"`
}

// Stage summarises the non-warmup requests of one load stage (or of the
// whole run, for Summary.Overall, where Index is -1).
type Stage struct {
	Index    int              `json:"index"`
	Name     string           `json:"name"`
	Requests Requests         `json:"requests"`
	Errors   map[string]int64 `json:"errors"` // failed requests by error class
	// ErrorMessages holds, per error class, the first few distinct messages
	// (the server's own words: "request (4862 tokens) exceeds the available
	// context size", "The model `x` does not exist"), at most 3 of 300
	// bytes each.
	ErrorMessages map[string][]string `json:"error_messages,omitempty"`
	Duration      float64             `json:"duration_s"` // the measured window: first send to last end of the measured requests, seconds
	Tokens        Tokens              `json:"tokens"`

	TTFT             Dist `json:"ttft_ms"`               // sent → first token (content or reasoning)
	TTFTFromSchedule Dist `json:"ttft_from_schedule_ms"` // scheduled → first token
	TTFC             Dist `json:"ttfc_ms"`               // sent → first content (not reasoning)
	ITL              Dist `json:"itl_ms"`                // per token: a chunk of k tokens gives k gaps of Δ/k
	ITLChunk         Dist `json:"itl_chunk_ms"`          // per chunk, as vLLM's bench serve reports it
	TPOT             Dist `json:"tpot_ms"`               // (last token − first token) / (output tokens − 1), per request
	E2E              Dist `json:"e2e_ms"`                // sent → end
	E2EFromSchedule  Dist `json:"e2e_from_schedule_ms"`  // scheduled → end
	ScheduleLag      Dist `json:"schedule_lag_ms"`       // scheduled → sent
	WireLag          Dist `json:"wire_lag_ms"`           // scheduled → written on the connection

	// The rates count what the window holds, as the server's counters do
	// (see Aggregate.stageSummary): output tokens received by every request
	// of the stage in the window, warmup and failed ones included; plus the
	// prompt tokens prefilled in it; requests completed ok in it.
	OutputTokensPerSec float64 `json:"output_tokens_per_s"`
	// OutputTokensPerSecCI is the 95 % interval of OutputTokensPerSec,
	// [lo, hi] in tokens/s, by batch means (Aggregate.RateInterval: a
	// Student-t interval over the rates of the stage's full windows of
	// the timeline, scaled to the stage's figure); absent with fewer than
	// five full windows.
	OutputTokensPerSecCI *[2]float64 `json:"output_tokens_per_s_ci_95,omitempty"`
	TotalTokensPerSec    float64     `json:"total_tokens_per_s"`
	RequestsPerSec       float64     `json:"requests_per_s"`
	// TTFTByTurn is the TTFT of a conversation scenario's turns by turn
	// index, or of a session stage's requests by their index in the
	// session (its sub-agents' left out); absent otherwise.
	TTFTByTurn []TurnTTFT `json:"ttft_by_turn_ms,omitempty"`
	// Sessions is what a session stage's sessions did; absent for other
	// stages.
	Sessions *Sessions `json:"sessions,omitempty"`
	// InputsPerSec is the embeddings throughput: the texts embedded by the
	// requests completed ok in the window, per second (absent for
	// generation).
	InputsPerSec float64 `json:"inputs_per_s,omitempty"`
	// PeakOutputTokensPerSec is the most output tokens received in one
	// second of the window (whole seconds from its start, as vLLM's bench
	// serve counts its max_output_tokens_per_s; over the whole run, the
	// stages' tokens summed, in seconds counted from the run's start and
	// from each stage's, so it is never below a stage's), by every request
	// of the stage; 0 in a window
	// shorter than a second. PeakInFlight is the most requests in flight at
	// once, sent and not yet ended (vLLM's max_concurrent_requests),
	// sampled every 10 ms (coarser for stages over 21 minutes).
	PeakOutputTokensPerSec float64 `json:"peak_output_tokens_per_s"`
	PeakInFlight           int     `json:"peak_in_flight"`
	// Efficiency is the stage's energy (GPU telemetry), cost (the
	// scenario's cost block) and speculative decoding over its window;
	// nil for embeddings and empty windows.
	Efficiency *Efficiency `json:"efficiency,omitempty"`
	// Latencies holds the distributions of the metric table's latency
	// metrics that have no field of their own above, by metric name: a
	// metric added to the table lands here until (if ever) it gets a
	// field. Absent when every latency metric has its field, as today.
	Latencies map[string]*Dist `json:"latencies_ms,omitempty"`
}

// Dist returns the distribution of the latency metric named metric (a
// name of the metric table of class Latency, such as "ttft_ms"): the
// field of Stage whose JSON key is the name, else its entry in Latencies;
// nil when the stage has neither. It is how the metric table reads a
// stage summary, so a metric needs no line here.
func (s *Stage) Dist(metric string) *Dist {
	if i := distField(metric); i >= 0 {
		return reflect.ValueOf(s).Elem().Field(i).Addr().Interface().(*Dist)
	}
	return s.Latencies[metric]
}

// setDist stores the distribution of the latency metric named metric:
// in its field, or in Latencies when Stage has none.
func (s *Stage) setDist(metric string, d Dist) {
	if p := s.Dist(metric); p != nil {
		*p = d
		return
	}
	if s.Latencies == nil {
		s.Latencies = map[string]*Dist{}
	}
	s.Latencies[metric] = &d
}

// distField returns the index of the Dist field of Stage whose JSON key
// is metric, or −1.
func distField(metric string) int {
	t := reflect.TypeFor[Stage]()
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == metric && f.Type == reflect.TypeFor[Dist]() {
			return i
		}
	}
	return -1
}

// Figure returns a figure of the stage that is not a distribution:
// error_rate, drop_rate, output_tokens_per_s, requests_per_s,
// total_tokens_per_s or inputs_per_s, with the
// number of samples behind it; ok is false when it cannot be measured (no
// request finished or was scheduled) or the name is not one of these.
func (s *Stage) Figure(metric string) (value float64, samples int64, ok bool) {
	switch metric {
	case "error_rate":
		n := s.Requests.OK + s.Requests.Failed
		if n == 0 {
			return 0, 0, false
		}
		return float64(s.Requests.Failed) / float64(n), n, true
	case "drop_rate":
		if s.Requests.Scheduled == 0 {
			return 0, 0, false
		}
		return float64(s.Requests.Dropped) / float64(s.Requests.Scheduled), s.Requests.Scheduled, true
	case "output_tokens_per_s":
		return s.OutputTokensPerSec, s.Requests.OK, s.Duration > 0
	case "requests_per_s":
		return s.RequestsPerSec, s.Requests.OK, s.Duration > 0
	case "total_tokens_per_s":
		return s.TotalTokensPerSec, s.Requests.OK, s.Duration > 0
	case "inputs_per_s":
		return s.InputsPerSec, s.Requests.Inputs, s.Duration > 0 && s.Requests.Inputs > 0
	}
	return 0, 0, false
}

// Requests counts how the stage's scheduled requests ended. Warmup requests
// are counted in Warmup only.
type Requests struct {
	Scheduled int64 `json:"scheduled"` // ok + failed + canceled + dropped
	OK        int64 `json:"ok"`
	Failed    int64 `json:"failed"`
	// Shed counts the failed requests the server refused to shed load
	// (429 or 503: it was serving, and said it was full).
	Shed     int64 `json:"shed,omitempty"`
	Canceled int64 `json:"canceled"`
	Dropped  int64 `json:"dropped"`
	Warmup   int64 `json:"warmup"` // excluded from every other figure
	// Retried counts the sends repeated on a fresh connection after the
	// server had closed a kept-alive one before any response byte (see
	// results.Result.Retries).
	Retried int64 `json:"retried,omitempty"`
	// ResentWritten counts, of those, the earlier sends that had been
	// written whole: the server may have processed them too, load no
	// record counts (results.Result.ResentWritten).
	ResentWritten int64 `json:"resent_written,omitempty"`
	// Truncated counts ok requests that returned fewer output tokens than
	// max_tokens although the server was told to ignore EOS, or said it
	// stopped at a length: it hit its context limit (HTTP 200 all the same).
	Truncated int64 `json:"truncated,omitempty"`
	// Inputs counts the texts the ok embeddings requests embedded (absent
	// for generation).
	Inputs int64 `json:"inputs,omitempty"`
}

// Tokens sums the token counts of the measured ok requests (the rates
// count the window instead; see Stage).
type Tokens struct {
	Prompt int64 `json:"prompt"`
	Output int64 `json:"output"`
	// Cached is the part of Prompt the server served from its prefix cache
	// (usage.prompt_tokens_details.cached_tokens, when it reports it): a
	// high share from a second run of the same prompts makes its TTFT
	// incomparable with the first's (see prompts.salt).
	Cached            int64 `json:"cached,omitempty"`
	EstimatedRequests int64 `json:"estimated_requests"` // requests whose counts are local estimates (no server usage)
	// PromptCompared counts the requests whose prompt length both the run
	// (InputTokens plus the known overhead) and the server
	// (usage.prompt_tokens) counted; PromptMismatched those of them where
	// the two differ by more than PromptTolerance of the run's count, and
	// PromptDiff sums the server's count minus the run's over them all. A
	// share mismatched above PromptMismatchShare is warned about: the
	// prompts were not counted with the model's tokenizer.
	PromptCompared   int64 `json:"prompt_compared,omitempty"`
	PromptMismatched int64 `json:"prompt_mismatched,omitempty"`
	PromptDiff       int64 `json:"prompt_diff,omitempty"`

	// Per request: the prompt and output tokens of the ok requests (from
	// the server's usage), and the input length and max_tokens the
	// scenario drew for every request sent (what was asked). Nil when no
	// request had the figure.
	PromptPerRequest *Counts `json:"prompt_per_request,omitempty"`
	OutputPerRequest *Counts `json:"output_per_request,omitempty"`
	InputRequested   *Counts `json:"input_requested,omitempty"`
	OutputRequested  *Counts `json:"output_requested,omitempty"`
}

// The prompt-length check: a request's prompt mismatches when the
// server's count differs from the intended one by more than
// PromptTolerance of it; the summary warns when more than
// PromptMismatchShare of the compared requests mismatch.
const (
	PromptTolerance     = 0.02
	PromptMismatchShare = 0.05
)

// Dist is a latency distribution in milliseconds.
type Dist struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	Std   float64 `json:"std"` // standard deviation (of the population, as vLLM's std_*_ms)
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
	// CI holds each statistic's 95 % confidence interval, [lo, hi] in
	// milliseconds: distribution-free (order statistics) for the
	// percentiles, read from the histogram and so bounded by its
	// precision (3 significant figures); Student-t for the mean. A
	// statistic absent has too few samples for an interval (a p99 needs
	// about 300; see results.MinSamplesFor), and no interval is given for
	// the max.
	CI map[string][2]float64 `json:"ci_95,omitempty"`
}

// Interval returns the 95 % interval of the statistic named stat; ok is
// false when there is none (too few samples, or the max).
func (d Dist) Interval(stat string) (lo, hi float64, ok bool) {
	iv, ok := d.CI[stat]
	return iv[0], iv[1], ok
}

// Stat returns the statistic named stat ("p50", "p90", "p95", "p99",
// "p99_9", "mean" or "max"); ok is false for another name or an empty
// distribution.
func (d Dist) Stat(stat string) (v float64, ok bool) {
	if d.Count == 0 {
		return 0, false
	}
	switch stat {
	case "p50":
		return d.P50, true
	case "p90":
		return d.P90, true
	case "p95":
		return d.P95, true
	case "p99":
		return d.P99, true
	case "p99_9":
		return d.P999, true
	case "mean":
		return d.Mean, true
	case "max":
		return d.Max, true
	}
	return 0, false
}

// Shards describes the shard set a summary merges.
type Shards struct {
	Count        int       `json:"count"`             // the run's shards
	Merged       []int     `json:"merged"`            // the indexes of the shards merged, ascending
	Missing      []int     `json:"missing,omitempty"` // the shards absent (merged with --partial)
	ScenarioHash string    `json:"scenario_hash"`     // the scenario every shard ran (results.Shard.ScenarioHash)
	StartAt      time.Time `json:"start_at,omitzero"` // the agreed start (--start-at), when there was one
	// StartSpread is the time from the first shard's start of load to the
	// last one's, in seconds, by each machine's clock; MaxLate is how long
	// after StartAt the last shard began, in seconds. Both are 0 when the
	// shards' end records are missing.
	StartSpread float64 `json:"start_spread_s"`
	MaxLate     float64 `json:"max_late_s,omitempty"`
}
