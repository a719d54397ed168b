package results

import (
	"encoding/json"
	"fmt"
	"time"
)

// Spec is the part of a run's resolved scenario (Header.Scenario) that
// reports read: its name, its stages' load settings, the options that change
// how records are judged, and its budgets. The Reader decodes it once per
// header; the scenario package writes the full scenario, of which Spec's
// JSON keys are a subset.
type Spec struct {
	Name    string      `json:"name"`
	Request SpecRequest `json:"request"`
	Prompts SpecPrompts `json:"prompts"`
	Scrape  SpecScrape  `json:"scrape"`
	Load    SpecLoad    `json:"load"`
	SLO     *SLO        `json:"slo,omitempty"`
	Budgets *Budgets    `json:"budgets,omitempty"`
}

// SpecRequest holds the request options that matter to reports.
type SpecRequest struct {
	// IgnoreEOS is vLLM's ignore_eos: every ok response should be exactly
	// max_tokens long (nil when the scenario does not say).
	IgnoreEOS *bool `json:"ignore_eos"`
}

// SpecPrompts holds the prompt options that matter to reports.
type SpecPrompts struct {
	// Tokenizer is what the run counted prompt lengths with (an encoding,
	// a tokenizer.json path, or "server"); empty when unknown.
	Tokenizer string `json:"tokenizer,omitempty"`
}

// SpecScrape holds the scrape options that matter to reports.
type SpecScrape struct {
	// Interval is the scrape interval ("1s"); empty when unknown.
	Interval string `json:"interval,omitempty"`
}

// SpecLoad holds the stages of the load model.
type SpecLoad struct {
	Stages []SpecStage `json:"stages"`
}

// SpecStage is one stage's load setting.
type SpecStage struct {
	Name           string  `json:"name"`
	Concurrency    int     `json:"concurrency,omitempty"`     // closed loop: workers
	Rate           float64 `json:"rate,omitempty"`            // open loop: arrivals per second
	Arrival        string  `json:"arrival,omitempty"`         // open loop: constant, poisson or gamma
	Burstiness     float64 `json:"burstiness,omitempty"`      // gamma shape
	MaxConcurrency int     `json:"max_concurrency,omitempty"` // open loop: cap on requests in flight
	// Trace is a trace-replay stage's file and speed-up; nil for others.
	Trace *SpecTrace `json:"trace,omitempty"`
}

// SpecTrace is a trace-replay stage's setting.
type SpecTrace struct {
	Path    string  `json:"path"`
	Speedup float64 `json:"speedup"`
}

// Open reports whether the stage is open loop (a trace replay is).
func (s SpecStage) Open() bool { return s.Rate > 0 || s.Trace != nil }

// ScrapeInterval returns the scrape interval, or 0 when it is unknown or
// not a positive duration.
func (s *Spec) ScrapeInterval() time.Duration {
	d, err := time.ParseDuration(s.Scrape.Interval)
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

// StageName returns the name of stage i, or "stage-i" when the spec does
// not name it.
func (s *Spec) StageName(i int) string {
	if s != nil && i >= 0 && i < len(s.Load.Stages) && s.Load.Stages[i].Name != "" {
		return s.Load.Stages[i].Name
	}
	return fmt.Sprintf("stage-%d", i)
}

// DecodeSpec decodes the Spec of a resolved scenario. An empty raw gives
// nil and no error.
func DecodeSpec(raw json.RawMessage) (*Spec, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	s := new(Spec)
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, fmt.Errorf("scenario in the header: %w", err)
	}
	return s, nil
}
