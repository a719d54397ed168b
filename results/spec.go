package results

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Spec is the part of a run's resolved scenario (Header.Scenario) that
// reports read: its name, its stages' load settings, the options that change
// how records are judged, and its budgets. The Reader decodes it once per
// header; the scenario package writes the full scenario, of which Spec's
// JSON keys are a subset.
type Spec struct {
	Name    string      `json:"name"`
	Target  SpecTarget  `json:"target"`
	Request SpecRequest `json:"request"`
	Prompts SpecPrompts `json:"prompts"`
	Scrape  SpecScrape  `json:"scrape"`
	Load    SpecLoad    `json:"load"`
	SLO     *SLO        `json:"slo,omitempty"`
	Budgets *Budgets    `json:"budgets,omitempty"`
	Cost    *Cost       `json:"cost,omitempty"`
}

// SpecTarget holds the target as the scenario named it.
type SpecTarget struct {
	URL string `json:"url,omitempty"` // as written: sim://tiny, or the server's URL
	API string `json:"api,omitempty"` // chat or completions
}

// SpecPrompts holds what the scenario asked of the prompts: the token
// length distributions, or a dataset.
type SpecPrompts struct {
	// Tokenizer is what the run counted prompt lengths with (an encoding,
	// a tokenizer.json path, or "server"); empty when unknown.
	Tokenizer          string      `json:"tokenizer,omitempty"`
	InputTokens        *SpecDist   `json:"input_tokens,omitempty"`  // prompt length (synthetic prompts)
	OutputTokens       *SpecDist   `json:"output_tokens,omitempty"` // max_tokens
	SharedPrefixTokens int         `json:"shared_prefix_tokens,omitempty"`
	Dataset            SpecDataset `json:"dataset,omitzero"`
	// PrefixCache is the target hit rate of shared prefixes; nil when
	// the scenario set none.
	PrefixCache *SpecPrefixCache `json:"prefix_cache,omitempty"`
}

// SpecPrefixCache is prompts.prefix_cache: a target share of prompt
// tokens served from the server's prefix cache, and the number of shared
// prefixes that carry it.
type SpecPrefixCache struct {
	HitRate  float64 `json:"hit_rate"`
	Prefixes int     `json:"prefixes"`
}

// SpecDataset names the prompt dataset; Path is empty without one.
type SpecDataset struct {
	Path   string `json:"path,omitempty"`
	Format string `json:"format,omitempty"`
}

// SpecDist is a token-length distribution: fixed (Value), uniform (Min to
// Max) or normal (Mean, Stddev, clamped to Min and Max when set).
type SpecDist struct {
	Dist   string  `json:"dist"`
	Value  int     `json:"value,omitempty"`
	Min    int     `json:"min,omitempty"`
	Max    int     `json:"max,omitempty"`
	Mean   float64 `json:"mean,omitempty"`
	Stddev float64 `json:"stddev,omitempty"`
}

// String describes the distribution in words: "100", "uniform 64–192",
// "normal mean 512, sd 64, 256–1024".
func (d *SpecDist) String() string {
	if d == nil {
		return ""
	}
	switch d.Dist {
	case "fixed":
		return strconv.Itoa(d.Value)
	case "uniform":
		return fmt.Sprintf("uniform %d–%d", d.Min, d.Max)
	case "normal":
		s := fmt.Sprintf("normal mean %s, sd %s", strconv.FormatFloat(d.Mean, 'f', -1, 64), strconv.FormatFloat(d.Stddev, 'f', -1, 64))
		switch {
		case d.Min > 0 && d.Max > 0:
			s += fmt.Sprintf(", %d–%d", d.Min, d.Max)
		case d.Min > 0:
			s += fmt.Sprintf(", at least %d", d.Min)
		case d.Max > 0:
			s += fmt.Sprintf(", at most %d", d.Max)
		}
		return s
	}
	return d.Dist
}

// SpecRequest holds the request options that matter to reports.
type SpecRequest struct {
	// IgnoreEOS is vLLM's ignore_eos: every ok response should be exactly
	// max_tokens long (nil when the scenario does not say).
	IgnoreEOS *bool `json:"ignore_eos"`
	// ContinuousUsage is stream_options.continuous_usage_stats: each
	// chunk's token count is known.
	ContinuousUsage bool `json:"continuous_usage,omitempty"`
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
	Name           string     `json:"name"`
	Concurrency    int        `json:"concurrency,omitempty"`     // closed loop: workers
	Rate           float64    `json:"rate,omitempty"`            // open loop: arrivals per second
	Arrival        string     `json:"arrival,omitempty"`         // open loop: constant, poisson or gamma
	Burstiness     float64    `json:"burstiness,omitempty"`      // gamma shape
	MaxConcurrency int        `json:"max_concurrency,omitempty"` // open loop: cap on requests in flight
	Overflow       string     `json:"overflow,omitempty"`        // open loop: drop or queue (empty: drop, before it existed)
	Requests       int        `json:"requests,omitempty"`        // bound by count (arrivals); 0: none
	Duration       string     `json:"duration,omitempty"`        // bound by time ("30s"); empty: none
	Warmup         SpecWarmup `json:"warmup,omitzero"`
	// Trace is a trace-replay stage's file and speed-up; nil for others.
	Trace *SpecTrace `json:"trace,omitempty"`
	// Prime marks a stage that primed the prefix cache (its requests are
	// warmup).
	Prime bool `json:"prime,omitempty"`
	// Session is a session stage's program, as far as reports read it;
	// nil for others.
	Session *SpecSession `json:"session,omitempty"`
}

// SpecSession is what reports read of a session stage: how many sessions
// it starts.
type SpecSession struct {
	Sessions int `json:"sessions,omitempty"`
}

// SpecWarmup is a stage's warmup: its first Requests requests, or those
// scheduled within Duration of its start.
type SpecWarmup struct {
	Requests int    `json:"requests,omitempty"`
	Duration string `json:"duration,omitempty"`
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
