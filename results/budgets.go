package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
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

// BudgetSet is the limits on one scope (the run, or one stage), keyed by
// metric name: every key of the set but min_samples is the Name of a
// metric of the table (Metrics) marked Budget, and a new metric of the
// table can be budgeted without a change here. A nil Limits checks
// nothing.
//
// Latency budgets (milliseconds) take percentiles, mean or max:
// {p50, p90, p95, p99, p99_9, mean, max}. Ratios, counts and costs take
// max; rates take min (Metric.Stats). The figures are those of
// summary.json, of the server's /metrics for preemptions and kv_usage, and
// of the GPU telemetry and the scenario's cost for joules_per_token and
// usd_per_mtok.
//
// In YAML and JSON a set is one flat mapping, as it was when each metric
// had a field of its own: {ttft_ms: {p99: 2000}, error_rate: {max: 0.01},
// min_samples: 50}. JSON writes the metrics in the table's order, then any
// the table does not name (a newer version's, read back) by name, then
// min_samples, so a results header keeps its bytes.
type BudgetSet struct {
	// Limits are the limits of each budgeted metric, by metric name; a
	// name the table does not have is refused by the scenario's validation
	// with its line and the nearest metric name.
	Limits map[string]*Limits `yaml:",inline" json:"-"`

	// MinSamples is the sample count below which a percentile budget is
	// not trusted: it passes with a warning (or fails when Budgets.Strict).
	// Zero derives it per percentile q as ⌈1.96² · q/(1−q)⌉ (p50: 4, p90:
	// 35, p95: 73, p99: 381, p99.9: 3838), the smallest count with a
	// distribution-free 95 % confidence interval of the percentile inside
	// the samples.
	MinSamples int `yaml:"min_samples" json:"min_samples,omitempty"`
}

// InlineKeys returns the keys Limits may have in a scenario file: the
// names of the metrics of Metrics marked Budget. The scenario's reader
// reports another key at its line, with the nearest of these.
func (BudgetSet) InlineKeys() []string { return Metrics().Budgeted() }

// minSamplesKey is the one key of a budget set that is not a metric.
const minSamplesKey = "min_samples"

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

// Get returns the limits of metric, or nil (also for a nil s).
func (s *BudgetSet) Get(metric string) *Limits {
	if s == nil {
		return nil
	}
	return s.Limits[metric]
}

// List returns the figures of s that have limits, in the order of the
// metric table (Metrics), then those it does not name, by name.
func (s *BudgetSet) List() []Budget { return s.ListIn(Metrics()) }

// ListIn is List in the order of table t.
func (s *BudgetSet) ListIn(t Table) []Budget {
	if s == nil {
		return nil
	}
	var out []Budget
	for _, name := range t.order(s.Limits) {
		if l := s.Limits[name]; l != nil {
			out = append(out, Budget{Metric: name, Limits: l})
		}
	}
	return out
}

// order returns the keys of m in the order of t, then the keys t does not
// name, sorted.
func (t Table) order(m map[string]*Limits) []string {
	keys := make([]string, 0, len(m))
	for _, mt := range t {
		if _, ok := m[mt.Name]; ok {
			keys = append(keys, mt.Name)
		}
	}
	var rest []string
	for k := range m {
		if _, ok := t.ByName(k); !ok {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	return append(keys, rest...)
}

// MarshalJSON writes s as one flat object: the limits in table order
// (nil ones left out, as the fields of old were), then min_samples when
// set.
func (s BudgetSet) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for _, name := range Metrics().order(s.Limits) {
		l := s.Limits[name]
		if l == nil {
			continue
		}
		v, err := json.Marshal(l)
		if err != nil {
			return nil, err
		}
		k, _ := json.Marshal(name) // a string always marshals
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	if s.MinSamples != 0 {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%s":%d`, minSamplesKey, s.MinSamples)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads a set written by MarshalJSON, or by the versions
// whose sets had a field per metric (the same object). Every key but
// min_samples is a metric's limits, kept even when this version's table
// does not name it, so that reading and writing a file loses nothing.
func (s *BudgetSet) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	out := BudgetSet{}
	for k, v := range raw {
		if k == minSamplesKey {
			if err := json.Unmarshal(v, &out.MinSamples); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			continue
		}
		var l *Limits
		if err := json.Unmarshal(v, &l); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		if l == nil {
			continue // null: unset, as a nil field was
		}
		if out.Limits == nil {
			out.Limits = map[string]*Limits{}
		}
		out.Limits[k] = l
	}
	*s = out
	return nil
}

// String formats a limit for messages: "p99 ≤ 2000".
func (l Limit) String() string {
	op := "≥"
	if l.Upper {
		op = "≤"
	}
	return fmt.Sprintf("%s %s %g", l.Stat, op, l.Value)
}
