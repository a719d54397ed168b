package scenario

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/servebench/servebench/internal/loopback"
	"github.com/servebench/servebench/results"
)

// Scenario is one benchmark: what to target, what to send and how to pace
// it. YAML keys are snake_case; durations are strings with a unit ("30s");
// token lengths are in tokens; rates are in requests per second.
//
// A Scenario is built by Load or Parse (decode, Defaults, Validate) and is
// then read-only except through Set and Override. It is not safe for
// concurrent mutation; concurrent reads are safe.
type Scenario struct {
	Name        string           `yaml:"name" json:"name"`                         // identifies the run in results and reports
	Description string           `yaml:"description" json:"description,omitempty"` // free text
	Target      Target           `yaml:"target" json:"target"`                     // the server under test
	Request     RequestSpec      `yaml:"request" json:"request"`                   // per-request body options
	Prompts     PromptSpec       `yaml:"prompts" json:"prompts"`                   // what the prompts are made of
	Scrape      Scrape           `yaml:"scrape" json:"scrape"`                     // the server's /metrics (used by package scrape)
	Load        LoadSpec         `yaml:"load" json:"load"`                         // stages and the run's safety bound
	SLO         *results.SLO     `yaml:"slo" json:"slo,omitempty"`                 // per-request objectives, for the goodput budget
	Budgets     *results.Budgets `yaml:"budgets" json:"budgets,omitempty"`         // the release gate, checked after the run
	Cost        *results.Cost    `yaml:"cost" json:"cost,omitempty"`               // prices the run: per GPU-hour or per 1M tokens
	Sweep       *Sweep           `yaml:"sweep" json:"sweep,omitempty"`             // run once per server-setting value (package sweep)

	src source    // where the values came from, for error positions
	raw *Scenario // the scenario as written, before Defaults; nil when built by hand
}

// source records where a scenario was read from: its file, the directory
// relative dataset paths are resolved against, and the line of every field
// path ("load.stages[0].rate" → 12). Overridden fields map to "--set".
type source struct {
	file string
	dir  string
	pos  map[string]position
}

type position struct {
	file string
	line int
	null bool // the key is there with no value ("key:"), or --set reset it
}

// written reports whether field path was given a value, in the file or by
// --set, as opposed to left out, left empty ("key:") or reset.
func (s *source) written(path string) bool {
	p, ok := s.pos[path]
	return ok && !p.null
}

// Target is the server under test.
type Target struct {
	// URL is http(s)://HOST:PORT[/PATH] (the OpenAI base URL, with or without
	// /v1) or sim://PRESET for the built-in simulator. HOST must be loopback
	// unless AllowRemote.
	URL string `yaml:"url" json:"url"`
	// AllowRemote opts in to sending load to a host that is not this
	// machine (a GPU node, a Kubernetes Service). Off by default: load
	// generation pointed at the wrong URL is a denial of service.
	AllowRemote bool `yaml:"allow_remote" json:"allow_remote,omitempty"`
	// Model is the model name sent in requests; empty means auto-detect from
	// GET /v1/models (done by the caller before the run).
	Model string `yaml:"model" json:"model"`
	// API is APIChat ("chat"), APICompletions ("completions") or
	// APIEmbeddings ("embeddings": /v1/embeddings, whole responses, no
	// output tokens).
	API string `yaml:"api" json:"api"`
	// APIKeyEnv names the environment variable that holds the API key. The
	// key itself is never stored in a Scenario.
	APIKeyEnv string `yaml:"api_key_env" json:"api_key_env,omitempty"`
	// APIKeyFile names a file holding the API key (its first line), as a
	// mounted Kubernetes secret provides it; relative to the scenario file.
	// At most one of APIKeyEnv and APIKeyFile.
	APIKeyFile string `yaml:"api_key_file" json:"api_key_file,omitempty"`
	// Headers are sent with every request (a gateway's routing or tenant
	// header). Their values may be secrets: the resolved scenario in the
	// results header carries the names only.
	Headers Headers `yaml:"headers" json:"headers,omitempty"`
	// TLS configures https targets.
	TLS TLS `yaml:"tls" json:"tls,omitzero"`
	// Stream asks for SSE streaming (default true; false for embeddings,
	// which are never streamed).
	Stream *bool `yaml:"stream" json:"stream"`
	// Timeouts bound each request.
	Timeouts Timeouts `yaml:"timeouts" json:"timeouts"`
}

// Headers are extra request headers, name to value. Encoded as JSON (the
// resolved scenario of the results header), the values are replaced by
// "redacted": a header may carry a credential.
type Headers map[string]string

// MarshalJSON writes the header names with redacted values.
func (h Headers) MarshalJSON() ([]byte, error) {
	red := make(map[string]string, len(h))
	for k := range h {
		red[k] = "redacted"
	}
	return json.Marshal(red)
}

// TLS configures the connection to an https target.
type TLS struct {
	// CAFile is a PEM bundle of the certificate authorities to trust (a
	// private CA), relative to the scenario file; empty uses the system's.
	CAFile string `yaml:"ca_file" json:"ca_file,omitempty"`
	// InsecureSkipVerify turns certificate verification off. Only for a
	// test deployment: the run records a warning in its summary and report.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify" json:"insecure_skip_verify,omitempty"`
}

// Timeouts bound each request (see the client package for their exact
// meaning). All are positive after Defaults.
type Timeouts struct {
	Connect   Duration `yaml:"connect" json:"connect"`       // dial (and TLS) to an open connection
	FirstByte Duration `yaml:"first_byte" json:"first_byte"` // request written → response headers
	Idle      Duration `yaml:"idle" json:"idle"`             // longest gap between two stream chunks
	Total     Duration `yaml:"total" json:"total"`           // the whole request
}

// RequestSpec holds the request-body options shared by every request.
type RequestSpec struct {
	// IgnoreEOS sends vLLM's ignore_eos so every response is exactly its
	// max_tokens long (default true).
	IgnoreEOS *bool `yaml:"ignore_eos" json:"ignore_eos"`
	// MinTokens is vLLM's min_tokens; 0 omits it.
	MinTokens int `yaml:"min_tokens" json:"min_tokens,omitempty"`
	// Temperature is omitted when absent; 0 is really sent.
	Temperature *float64 `yaml:"temperature" json:"temperature,omitempty"`
	// IncludeUsage sends stream_options.include_usage (default true).
	IncludeUsage *bool `yaml:"include_usage" json:"include_usage"`
	// ContinuousUsage sends vLLM's stream_options.continuous_usage_stats
	// (per-chunk token counts).
	ContinuousUsage bool `yaml:"continuous_usage" json:"continuous_usage,omitempty"`
	// System is an optional system message (chat API only).
	System string `yaml:"system" json:"system,omitempty"`
	// Extra holds arbitrary top-level body fields (for example top_k or
	// chat_template_kwargs); they override fields the client sets itself.
	Extra map[string]any `yaml:"extra" json:"extra,omitempty"`
	// Tools are tool definitions sent as every chat request's "tools", as
	// written (OpenAI's {type: function, function: {name, description,
	// parameters}}). Whether the model must call one is the request's
	// tool_choice, set in Extra ("required", or a named function).
	Tools []any `yaml:"tools" json:"tools,omitempty"`
	// Batch is the number of texts an embeddings request embeds at once
	// (its "input" is then a list); default 1. Embeddings only.
	Batch int `yaml:"batch" json:"batch,omitempty"`
}

// PromptSpec describes the prompts: synthetic ones of drawn token lengths,
// or a dataset file.
type PromptSpec struct {
	// Tokenizer is what prompt lengths are counted with: an embedded
	// encoding (o200k_base, the default, or cl100k_base), the path of the
	// model's Hugging Face tokenizer.json (relative to the scenario file),
	// or "server": synthetic prompts are calibrated through the target's
	// /tokenize endpoint (vLLM, SGLang, the simulator), so their lengths are
	// exact under the server's own tokenizer (synthetic prompts only).
	Tokenizer string `yaml:"tokenizer" json:"tokenizer"`
	// Seed makes prompts and lengths reproducible: the prompt of a request
	// is a pure function of (Seed, sequence number).
	Seed uint64 `yaml:"seed" json:"seed"`
	// InputTokens is the prompt-length distribution, in tokens (synthetic
	// prompts only).
	InputTokens *Dist `yaml:"input_tokens" json:"input_tokens,omitempty"`
	// OutputTokens is the max_tokens distribution, in tokens. With a dataset
	// it overrides the dataset's output lengths.
	OutputTokens *Dist `yaml:"output_tokens" json:"output_tokens,omitempty"`
	// SharedPrefixTokens is the number of identical leading tokens in every
	// synthetic prompt (to exercise prefix caching); it is part of the
	// input length, not added to it.
	SharedPrefixTokens int `yaml:"shared_prefix_tokens" json:"shared_prefix_tokens,omitempty"`
	// Salt changes the text of synthetic prompts, not their lengths: two
	// runs with different salts send different words, so the second does
	// not hit the server's prefix cache with the first one's prompts (which
	// would make its TTFT look better than it is). "random" draws a new
	// salt for every run and records it in the results header. Empty (the
	// default) keeps prompts a pure function of seed and request number.
	Salt string `yaml:"salt" json:"salt,omitempty"`
	// Dataset, when its path is set, replaces synthetic prompts.
	Dataset Dataset `yaml:"dataset" json:"dataset,omitzero"`
	// Conversation, when set, makes the requests the turns of multi-turn
	// sessions (chat, closed-loop stages).
	Conversation *Conversation `yaml:"conversation" json:"conversation,omitempty"`
	// PrefixCache, when set, makes synthetic prompts hit a server's prefix
	// cache at a target rate (see PrefixCache).
	PrefixCache *PrefixCache `yaml:"prefix_cache" json:"prefix_cache,omitempty"`
}

// Dataset names a prompt dataset file.
type Dataset struct {
	// Path is relative to the scenario file's directory; empty means no
	// dataset.
	Path string `yaml:"path" json:"path"`
	// Format is FormatShareGPT (a JSON array of conversations: the first
	// human turn is the prompt, the following gpt turn's token count the
	// output length; every turn in a conversation scenario), FormatJSONL
	// (one {"prompt": ..., "output_tokens": N} per line) or FormatMessages
	// (one {"messages": [...], "output_tokens": N} per line). The default
	// follows the extension: .jsonl → jsonl, else sharegpt.
	Format string `yaml:"format" json:"format"`
	// MaxFileMiB refuses a larger dataset file, in MiB (0:
	// DefaultMaxFileMiB). Only a regular file is read, never a device or
	// a pipe.
	MaxFileMiB int `yaml:"max_file_mib" json:"max_file_mib,omitempty"`
	// MaxLineMiB refuses a longer line (jsonl, messages) or ShareGPT
	// conversation, in MiB (0: DefaultMaxLineMiB). Each prompt is capped
	// besides (MaxPromptBytes, MaxPromptTokens) whatever this is.
	MaxLineMiB int `yaml:"max_line_mib" json:"max_line_mib,omitempty"`
}

// The caps on the input files a scenario names (Dataset.MaxFileMiB and
// MaxLineMiB, TraceSpec.MaxFileMiB) when it sets none, and the caps on a
// dataset prompt, which no setting raises: a prompt is at most
// MaxPromptTokens tokens, as a synthetic one, and, before it is counted
// (counting costs about 130 bytes of memory per byte of text), at most
// MaxPromptBytes, that many tokens at 4 bytes each.
const (
	DefaultMaxFileMiB      = 4096
	DefaultMaxLineMiB      = 32
	DefaultMaxTraceFileMiB = 1024
	MaxPromptTokens        = maxTokens
	MaxPromptBytes         = 4 * maxTokens
	// maxFileMiB bounds the caps themselves (1 TiB): a larger value is a typo.
	maxFileMiB = 1 << 20
)

// SaltRandom asks for a new prompt salt for every run (PromptSpec.Salt).
const SaltRandom = "random"

// Dataset formats.
const (
	FormatShareGPT = "sharegpt"
	FormatJSONL    = "jsonl"
)

// Dist is a distribution of token lengths. Dist selects which fields apply:
//
//	fixed:   value
//	uniform: min, max (inclusive)
//	normal:  mean, stddev, min, max (draws are rounded and clamped to [min, max])
//
// A bare number in YAML ("input_tokens: 256") is a fixed distribution.
// Every drawn length is at least 1.
type Dist struct {
	Dist   string  `yaml:"dist" json:"dist"`
	Value  int     `yaml:"value" json:"value,omitempty"`
	Min    int     `yaml:"min" json:"min,omitempty"`
	Max    int     `yaml:"max" json:"max,omitempty"`
	Mean   float64 `yaml:"mean" json:"mean,omitempty"`
	Stddev float64 `yaml:"stddev" json:"stddev,omitempty"`
}

// Distribution names.
const (
	DistFixed   = "fixed"
	DistUniform = "uniform"
	DistNormal  = "normal"
)

// UnmarshalYAML accepts a mapping or a bare integer (a fixed distribution).
func (d *Dist) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		v, err := strconv.Atoi(n.Value)
		if err != nil {
			return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a token count or a mapping, got %s", n.Line, describe(n))}}
		}
		*d = Dist{Dist: DistFixed, Value: v}
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a token count or a mapping, got %s", n.Line, describe(n))}}
	}
	type plain Dist // no UnmarshalYAML: decode the mapping field by field
	return n.Decode((*plain)(d))
}

// Scrape configures the /metrics scraper (package scrape).
type Scrape struct {
	Enabled *bool `yaml:"enabled" json:"enabled"` // default true
	// URL defaults (when empty) to the target's base URL without /v1, plus
	// /metrics; the scraper derives it, since a sim:// target's URL is only
	// known once the simulator listens.
	URL      string   `yaml:"url" json:"url,omitempty"`
	Interval Duration `yaml:"interval" json:"interval"` // ≥ 100ms; default 1s
	Profile  string   `yaml:"profile" json:"profile"`   // auto | vllm | sglang | tgi | llamacpp
	// GPU adds GPU telemetry on the same timeline: a DCGM exporter's
	// page, an nvidia-smi or amd-smi sampler, or the output one wrote
	// (energy, power, utilisation). Nil: none, and energy is not measured.
	GPU *GPUScrape `yaml:"gpu" json:"gpu,omitempty"`
}

// GPU telemetry samplers (scrape.gpu.sampler).
const (
	SamplerNvidiaSMI = "nvidia-smi"
	SamplerAMDSMI    = "amd-smi"
)

// GPUScrape is where a run reads GPU telemetry: one of URL (or URLs),
// Sampler and File.
type GPUScrape struct {
	// URL is a DCGM exporter's metrics page
	// ("http://127.0.0.1:9400/metrics"); URLs several (one per node).
	// Loopback unless target.allow_remote.
	URL  string   `yaml:"url" json:"url,omitempty"`
	URLs []string `yaml:"urls" json:"urls,omitempty"`
	// Sampler runs a sampler on this machine for the run's length, for
	// a server on this machine without an exporter: "nvidia-smi"
	// (--query-gpu … --format=csv -lms) or "amd-smi" (metric --power
	// --usage --mem-usage --json, run once per interval).
	Sampler string `yaml:"sampler" json:"sampler,omitempty"`
	// File is what a sampler wrote on the server's machine during the
	// run, read when the run ends (relative to the scenario file): the
	// CSV of `nvidia-smi --query-gpu=timestamp,index,… --format=csv -lms
	// N -f FILE`, its timestamps read in this machine's time zone, or the
	// JSON of `amd-smi metric -w N --json`, whose entries carry Unix
	// timestamps. The content says which.
	File string `yaml:"file" json:"file,omitempty"`
	// Interval is the time between GPU samples; default scrape.interval.
	Interval Duration `yaml:"interval" json:"interval,omitempty"`
	// GPUs keeps only these GPU indexes (the server's GPUs on a shared
	// node); empty keeps every GPU the source reports.
	GPUs []int `yaml:"gpus" json:"gpus,omitempty"`
	// Pod keeps only the GPUs the DCGM exporter maps to this Kubernetes
	// pod.
	Pod string `yaml:"pod" json:"pod,omitempty"`
}

// Targets returns the DCGM pages to scrape: URL and URLs.
func (g *GPUScrape) Targets() []string {
	if g == nil {
		return nil
	}
	if g.URL != "" {
		return append([]string{g.URL}, g.URLs...)
	}
	return g.URLs
}

// LoadSpec is the load model: stages run in order, bounded by MaxDuration.
type LoadSpec struct {
	// MaxDuration is the safety bound on the whole run (default 30m).
	MaxDuration Duration `yaml:"max_duration" json:"max_duration"`
	Stages      []Stage  `yaml:"stages" json:"stages"`
	// CircuitBreaker stops the run when the target plainly stopped
	// answering, instead of sending the rest of the load to a dead port.
	CircuitBreaker CircuitBreaker `yaml:"circuit_breaker" json:"circuit_breaker"`
}

// CircuitBreaker stops a run when, of the last Window requests that
// finished, the share Failures or more found no server: a refused or reset
// connection, a timeout, an answer that is not the API, an HTTP error
// other than load shedding (429, 503), which never counts (package load).
// It is on by default.
type CircuitBreaker struct {
	Enabled  *bool   `yaml:"enabled" json:"enabled"`   // default true
	Window   int     `yaml:"window" json:"window"`     // finished requests looked at (default 20)
	Failures float64 `yaml:"failures" json:"failures"` // share of them failed that trips it (default 0.9)
}

// Stage is one closed-loop (Concurrency > 0), open-loop (RatePerSec > 0)
// or trace-replay (Trace) phase of a run, bounded by Requests and/or
// Duration (a trace by its end too; a session stage by its sessions).
type Stage struct {
	Name string `yaml:"name" json:"name"` // default "stage-<index>"

	// Concurrency is the number of closed-loop workers.
	Concurrency int `yaml:"concurrency" json:"concurrency,omitempty"`

	// RatePerSec is the open-loop arrival rate in requests per second.
	RatePerSec float64 `yaml:"rate" json:"rate,omitempty"`
	// Arrival is the open-loop arrival process: constant, poisson (default)
	// or gamma.
	Arrival string `yaml:"arrival" json:"arrival,omitempty"`
	// Burstiness is the gamma shape (vLLM's --burstiness): 1 is Poisson,
	// lower is burstier, higher is more regular. Default 1.
	Burstiness float64 `yaml:"burstiness" json:"burstiness,omitempty"`
	// MaxConcurrency caps open-loop requests in flight; what becomes of
	// an arrival that finds the cap reached is Overflow's. Default
	// DefaultMaxConcurrency.
	MaxConcurrency int `yaml:"max_concurrency" json:"max_concurrency,omitempty"`
	// Overflow says what an open loop does with an arrival that finds
	// max_concurrency requests in flight: OverflowDrop (the default)
	// records it as dropped and never sends it, so the schedule stays the
	// schedule (no coordinated omission); OverflowQueue holds it in a
	// client-side queue until a slot frees, oldest first, as vLLM's bench
	// serve --max-concurrency does: every arrival is sent, late, and its
	// wait is its schedule lag (latency from the schedule includes it).
	Overflow string `yaml:"overflow" json:"overflow,omitempty"`

	// Requests bounds the stage by count (arrivals, dropped ones included);
	// 0 means unbounded by count.
	Requests int `yaml:"requests" json:"requests,omitempty"`
	// Duration bounds the stage by time from its start (no request is
	// scheduled after it); 0 means unbounded by time.
	Duration Duration `yaml:"duration" json:"duration,omitzero"`
	// Warmup flags the stage's first requests as excluded from statistics.
	Warmup Warmup `yaml:"warmup" json:"warmup,omitzero"`

	// Until, when set, ends the stage once a figure is known to a chosen
	// precision; the stage's requests and duration stay its cap.
	Until *Until `yaml:"until" json:"until,omitempty"`

	// Trace, when set, replays a trace file: the stage's arrivals and
	// lengths are the file's. It is open loop (MaxConcurrency applies) and
	// sets neither Concurrency nor RatePerSec; Requests and Duration, when
	// set, cut the trace short.
	Trace *TraceSpec `yaml:"trace" json:"trace,omitempty"`

	// Session, when set, makes the stage's load agent-like sessions (see
	// SessionSpec): Concurrency is then the number of sessions held open
	// at once, RatePerSec the sessions started per second and
	// MaxConcurrency the sessions in flight at most.
	Session *SessionSpec `yaml:"session" json:"session,omitempty"`

	// Prime makes the stage send each shared prefix of
	// prompts.prefix_cache once (Concurrency at a time, all as warmup,
	// one output token each), so that the stages after it find them
	// cached. It is bounded by the prefixes alone.
	Prime bool `yaml:"prime" json:"prime,omitempty"`
}

// Overflow policies of an open loop (Stage.Overflow).
const (
	OverflowDrop  = "drop"
	OverflowQueue = "queue"
)

// Until ends a stage once a latency figure of its measured, successful
// requests is known to a relative margin at a confidence: its
// distribution-free interval (percentiles) or Student-t interval (mean)
// reaches within Margin of the estimate on both sides.
type Until struct {
	// Metric is a latency metric and its statistic: "ttft_ms.p99",
	// "e2e_ms.mean" (stats p50, p90, p95, p99, p99_9 or mean).
	Metric string `yaml:"metric" json:"metric"`
	// Margin is the relative half-width to reach: 0.05 (or "5%") is ±5 %.
	Margin Fraction `yaml:"margin" json:"margin"`
	// Confidence is the interval's level (default 0.95, or "95%").
	Confidence Fraction `yaml:"confidence" json:"confidence"`
}

// Fraction is a number from 0 to 1, written as a decimal (0.05) or a
// percentage ("5%") in YAML.
type Fraction float64

// UnmarshalYAML reads a decimal or a percentage.
func (f *Fraction) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a fraction like 0.05 or a percentage like 5%%, got %s", n.Line, describe(n))}}
	}
	// Checked by hand: a YAML float or int, or a string ending in %.
	v, pct := strings.CutSuffix(strings.TrimSpace(n.Value), "%")
	x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a fraction like 0.05 or a percentage like 5%%, got %q", n.Line, n.Value)}}
	}
	if pct {
		x /= 100
	}
	*f = Fraction(x)
	return nil
}

// Open reports whether the stage is open loop: at a rate, or replaying a
// trace.
func (s *Stage) Open() bool { return s.RatePerSec > 0 || s.Replay() }

// Replay reports whether the stage replays a trace: of requests (Trace)
// or of sessions (Session.Trace). Its arrivals are the trace's.
func (s *Stage) Replay() bool { return s.Trace != nil || (s.Session != nil && s.Session.Trace != nil) }

// Warmup selects a stage's first requests as warmup: the first Requests
// requests, or those scheduled within Duration of the stage's start, or
// both (either condition flags a request).
type Warmup struct {
	Requests int      `yaml:"requests" json:"requests,omitempty"`
	Duration Duration `yaml:"duration" json:"duration,omitzero"`
	// Shapes, before the stage, sends one request of every prompt-length
	// shape the stage will send (Prompts.Shapes), one at a time, left out
	// of the figures and not counted in the stage's requests: the engine
	// meets each size once (compilation, graph capture, allocations)
	// before the measurement. Synthetic prompts only.
	Shapes bool `yaml:"shapes" json:"shapes,omitempty"`
}

// Arrival process names.
const (
	ArrivalConstant = "constant"
	ArrivalPoisson  = "poisson"
	ArrivalGamma    = "gamma"
)

// Duration is a time.Duration written as a string with a unit ("250ms",
// "30s", "10m") in YAML and JSON. A bare number is rejected: "30" would
// otherwise silently mean 30 ns.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d like time.Duration without zero trailing units ("2m",
// not "2m0s"); time.ParseDuration reads it back.
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// UnmarshalYAML parses a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseDuration(n)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	*d = v
	return nil
}

func parseDuration(n *yaml.Node) (Duration, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return 0, fmt.Errorf("want a duration with a unit, like \"30s\", got %s", describe(n))
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return 0, fmt.Errorf("want a duration with a unit, like \"30s\", got %q", n.Value)
	}
	return Duration(v), nil
}

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	*d = Duration(v)
	return nil
}

// Policy is where the scenario may send load: loopback only, unless
// target.allow_remote opts in.
func (sc *Scenario) Policy() loopback.Policy {
	return loopback.Policy{AllowRemote: sc.Target.AllowRemote}
}

// Path resolves a path given in the scenario file (dataset, CA bundle, API
// key file) against the file's directory.
func (sc *Scenario) Path(p string) string {
	if p == "" || filepath.IsAbs(p) || sc.src.dir == "" {
		return p
	}
	return filepath.Join(sc.src.dir, p)
}

// MaxConcurrency is the largest number of requests the scenario can have in
// flight at once: the largest closed-loop concurrency or open-loop
// max_concurrency over its stages (size connection pools with it).
func (sc *Scenario) MaxConcurrency() int {
	n := 0
	for i := range sc.Load.Stages {
		st := &sc.Load.Stages[i]
		n = max(n, st.inFlight(st.Concurrency, st.MaxConcurrency))
	}
	return n
}

// inFlight is the most requests a stage of conc workers (or sessions)
// and an open-loop cap of open can have in flight: a session's fan-out
// sends one request per sub-agent at once.
func (st *Stage) inFlight(conc, open int) int {
	n := max(conc, open)
	if s := st.Session; s != nil && s.Subagents != nil && s.Subagents.Count != nil {
		n *= 1 + s.Subagents.Count.highest()
	}
	return n
}
