package results

import (
	"fmt"
	"math"
)

// SLO holds per-request service-level objectives, in milliseconds. A
// request is good when it completed (outcome ok) and meets every objective
// that is set; goodput is the share of sent requests that are good. This is
// vLLM's definition (`vllm bench serve --goodput ttft:MS tpot:MS e2el:MS`).
// A zero objective is unset. A request with a single output token has no
// TPOT and meets any TPOT objective, as in vLLM.
type SLO struct {
	TTFTMs float64 `yaml:"ttft_ms" json:"ttft_ms,omitempty"` // time to first token, sent → first token
	TPOTMs float64 `yaml:"tpot_ms" json:"tpot_ms,omitempty"` // time per output token after the first
	E2EMs  float64 `yaml:"e2e_ms" json:"e2e_ms,omitempty"`   // end-to-end latency, sent → end
}

// Set reports whether at least one objective is set.
func (s *SLO) Set() bool { return s != nil && (s.TTFTMs > 0 || s.TPOTMs > 0 || s.E2EMs > 0) }

// Budgets are the release gate of a scenario: limits on the whole run
// (Overall) and on named stages, checked after the run by `bench run` and
// on saved results by `bench check`. Each limit yields a pass or a fail
// with the measured value, the limit and the margin (package report).
type Budgets struct {
	// Overall applies to every non-warmup request of the run.
	Overall *BudgetSet `yaml:"overall" json:"overall,omitempty"`
	// Stages applies per stage, keyed by stage name (load.stages[].name).
	Stages map[string]*BudgetSet `yaml:"stages" json:"stages,omitempty"`
	// Strict fails a percentile budget measured on fewer samples than its
	// set's minimum, instead of passing it with a warning.
	Strict bool `yaml:"strict" json:"strict,omitempty"`
}

// BudgetSet is the limits on one scope (the run, or one stage). Every
// field is optional; a nil Limits checks nothing.
//
// Latency budgets (milliseconds) take percentiles, mean or max:
// {p50, p90, p95, p99, p99_9, mean, max}. Ratios, counts and costs take
// max; rates take min. The figures are those of summary.json, of the
// server's /metrics for preemptions and kv_usage, and of the GPU
// telemetry and the scenario's cost for joules_per_token and usd_per_mtok.
type BudgetSet struct {
	TTFTMs *Limits `yaml:"ttft_ms" json:"ttft_ms,omitempty"` // time to first token (content or reasoning)
	TTFCMs *Limits `yaml:"ttfc_ms" json:"ttfc_ms,omitempty"` // time to first content (not reasoning)
	ITLMs  *Limits `yaml:"itl_ms" json:"itl_ms,omitempty"`   // inter-token latency, per token
	TPOTMs *Limits `yaml:"tpot_ms" json:"tpot_ms,omitempty"` // time per output token, per request
	E2EMs  *Limits `yaml:"e2e_ms" json:"e2e_ms,omitempty"`   // end-to-end latency

	// ErrorRate is failed / sent requests (sent excludes dropped
	// arrivals), a fraction: {max: 0.01}.
	ErrorRate *Limits `yaml:"error_rate" json:"error_rate,omitempty"`
	// DropRate is dropped / scheduled arrivals (open loop), a fraction.
	DropRate *Limits `yaml:"drop_rate" json:"drop_rate,omitempty"`
	// OutputTokensPerSec is the output-token throughput: {min: 500}.
	OutputTokensPerSec *Limits `yaml:"output_tokens_per_s" json:"output_tokens_per_s,omitempty"`
	// RequestsPerSec is the completed-request throughput: {min: 10}.
	RequestsPerSec *Limits `yaml:"requests_per_s" json:"requests_per_s,omitempty"`
	// TotalTokensPerSec is the prompt plus output token throughput (for
	// embeddings, the input tokens embedded): {min: 20000}.
	TotalTokensPerSec *Limits `yaml:"total_tokens_per_s" json:"total_tokens_per_s,omitempty"`
	// InputsPerSec is the embeddings throughput, in texts embedded per
	// second (a request may carry several): {min: 200}.
	InputsPerSec *Limits `yaml:"inputs_per_s" json:"inputs_per_s,omitempty"`
	// Goodput is the share of sent requests meeting every objective of the
	// scenario's slo, a fraction: {min: 0.95}.
	Goodput *Limits `yaml:"goodput" json:"goodput,omitempty"`
	// Preemptions is the server's preemption count during the scope (from
	// scraped /metrics): {max: 0}.
	Preemptions *Limits `yaml:"preemptions" json:"preemptions,omitempty"`
	// KVUsage is the server's peak KV-cache usage during the scope, a
	// fraction (from scraped /metrics): {max: 0.9}.
	KVUsage *Limits `yaml:"kv_usage" json:"kv_usage,omitempty"`
	// JoulesPerToken is the GPUs' energy per output token over the scope,
	// in joules (GPU telemetry, scrape.gpu): {max: 0.5}.
	JoulesPerToken *Limits `yaml:"joules_per_token" json:"joules_per_token,omitempty"`
	// USDPerMTok is the cost of a million output tokens over the scope,
	// in US dollars (the scenario's cost block): {max: 0.8}.
	USDPerMTok *Limits `yaml:"usd_per_mtok" json:"usd_per_mtok,omitempty"`
	// TokenCountMismatch counts completed requests whose server-reported
	// output tokens differ from max_tokens although ignore_eos asked for
	// exactly that many: {max: 0}.
	TokenCountMismatch *Limits `yaml:"token_count_mismatch" json:"token_count_mismatch,omitempty"`

	// MinSamples is the sample count below which a percentile budget is
	// not trusted: it passes with a warning (or fails when Budgets.Strict).
	// Zero derives it per percentile q as ⌈1.96² · q/(1−q)⌉ (p50: 4, p90:
	// 35, p95: 73, p99: 381, p99.9: 3838), the smallest count with a
	// distribution-free 95 % confidence interval of the percentile inside
	// the samples.
	MinSamples int `yaml:"min_samples" json:"min_samples,omitempty"`
}

// Limits bounds one figure. Which fields apply depends on the figure (see
// BudgetSet); a nil field is unset. Values are in the figure's unit.
type Limits struct {
	P50  *float64 `yaml:"p50" json:"p50,omitempty"`
	P90  *float64 `yaml:"p90" json:"p90,omitempty"`
	P95  *float64 `yaml:"p95" json:"p95,omitempty"`
	P99  *float64 `yaml:"p99" json:"p99,omitempty"`
	P999 *float64 `yaml:"p99_9" json:"p99_9,omitempty"`
	Mean *float64 `yaml:"mean" json:"mean,omitempty"`
	Max  *float64 `yaml:"max" json:"max,omitempty"` // an upper bound on the figure (for latencies: on its maximum)
	Min  *float64 `yaml:"min" json:"min,omitempty"` // a lower bound on the figure
}

// Limit is one bound of a Limits, flattened for evaluation.
type Limit struct {
	Stat  string  // "p50", "p90", "p95", "p99", "p99_9", "mean", "max" or "min"
	Value float64 // the bound, in the figure's unit
	Upper bool    // the figure must be ≤ Value (else ≥ Value)
}

// List returns the bounds that are set, in a fixed order (percentiles
// ascending, mean, max, min). A nil Limits has none.
func (l *Limits) List() []Limit {
	if l == nil {
		return nil
	}
	var out []Limit
	for _, f := range l.Stats() {
		if f.Value != nil {
			out = append(out, Limit{Stat: f.Stat, Value: *f.Value, Upper: f.Stat != "min"})
		}
	}
	return out
}

// LimitField is one bound of a Limits: its stat name and value (nil when
// unset).
type LimitField struct {
	Stat  string
	Value *float64
}

// Stats returns every bound of l, set or not, with its stat name, in the
// order of List.
func (l *Limits) Stats() []LimitField {
	return []LimitField{{"p50", l.P50}, {"p90", l.P90}, {"p95", l.P95}, {"p99", l.P99},
		{"p99_9", l.P999}, {"mean", l.Mean}, {"max", l.Max}, {"min", l.Min}}
}

// Quantile returns the quantile (0.99 for "p99") a percentile stat names,
// or false for "mean", "max" and "min".
func Quantile(stat string) (float64, bool) {
	switch stat {
	case "p50":
		return 0.50, true
	case "p90":
		return 0.90, true
	case "p95":
		return 0.95, true
	case "p99":
		return 0.99, true
	case "p99_9":
		return 0.999, true
	}
	return 0, false
}

// MinSamplesFor is the default minimum sample count of a q-quantile (see
// BudgetSet.MinSamples).
func MinSamplesFor(q float64) int {
	if q <= 0 || q >= 1 {
		return 0
	}
	const z2 = 1.96 * 1.96
	return int(math.Ceil(z2*q/(1-q) - 1e-9))
}

// Budget is one figure of a BudgetSet, with its name (the YAML key) and
// its limits.
type Budget struct {
	Metric string  // YAML key: "ttft_ms", "error_rate", …
	Limits *Limits // never nil
}

// List returns the figures of s that have limits, in a fixed order.
func (s *BudgetSet) List() []Budget {
	if s == nil {
		return nil
	}
	var out []Budget
	for _, f := range s.Fields() {
		if *f.Limits != nil {
			out = append(out, Budget{Metric: f.Metric, Limits: *f.Limits})
		}
	}
	return out
}

// BudgetField is one figure of a BudgetSet: its metric name (the YAML
// key, a name of Metrics) and a pointer to its limits field.
type BudgetField struct {
	Metric string
	Limits **Limits
}

// Fields returns every figure of s in a fixed order, set or not, so that
// callers can validate or fill them by metric name.
func (s *BudgetSet) Fields() []BudgetField {
	return []BudgetField{
		{"ttft_ms", &s.TTFTMs},
		{"ttfc_ms", &s.TTFCMs},
		{"itl_ms", &s.ITLMs},
		{"tpot_ms", &s.TPOTMs},
		{"e2e_ms", &s.E2EMs},
		{"error_rate", &s.ErrorRate},
		{"drop_rate", &s.DropRate},
		{"output_tokens_per_s", &s.OutputTokensPerSec},
		{"requests_per_s", &s.RequestsPerSec},
		{"total_tokens_per_s", &s.TotalTokensPerSec},
		{"inputs_per_s", &s.InputsPerSec},
		{"goodput", &s.Goodput},
		{"preemptions", &s.Preemptions},
		{"kv_usage", &s.KVUsage},
		{"joules_per_token", &s.JoulesPerToken},
		{"usd_per_mtok", &s.USDPerMTok},
		{"token_count_mismatch", &s.TokenCountMismatch},
	}
}

// String formats a limit for messages: "p99 ≤ 2000".
func (l Limit) String() string {
	op := "≥"
	if l.Upper {
		op = "≤"
	}
	return fmt.Sprintf("%s %s %g", l.Stat, op, l.Value)
}
