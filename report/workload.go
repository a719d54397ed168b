package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/servebench/servebench/results"
)

// Workload is what a run asked of the server, from its resolved scenario:
// each stage's load shape and the token lengths of the requests. What the
// requests really carried is in each stage's tokens (Tokens).
type Workload struct {
	// TargetURL is the target as the scenario named it (sim://tiny, or the
	// server's URL); Summary.Target is where the requests went.
	TargetURL string      `json:"target_url,omitempty"`
	API       string      `json:"api,omitempty"` // chat or completions
	Stages    []StageLoad `json:"stages"`
	// InputTokens and OutputTokens are the distributions the prompt
	// lengths and max_tokens were drawn from (nil: not set, as with a
	// dataset that gives its own).
	InputTokens        *results.SpecDist `json:"input_tokens,omitempty"`
	OutputTokens       *results.SpecDist `json:"output_tokens,omitempty"`
	SharedPrefixTokens int               `json:"shared_prefix_tokens,omitempty"`
	Dataset            string            `json:"dataset,omitempty"` // the prompts' dataset file, when one was used
	// Tokenizer is what counted the prompts' lengths: an encoding, a
	// tokenizer.json path, or "server" (its /tokenize).
	Tokenizer string `json:"tokenizer,omitempty"`
}

// StageLoad is one stage's load shape.
type StageLoad struct {
	Index          int     `json:"index"`
	Name           string  `json:"name"`
	Loop           string  `json:"loop"`                      // "closed" (workers) or "open" (arrivals)
	Concurrency    int     `json:"concurrency,omitempty"`     // closed loop: workers
	Rate           float64 `json:"rate,omitempty"`            // open loop: arrivals per second
	Arrival        string  `json:"arrival,omitempty"`         // open loop: constant, poisson or gamma
	Burstiness     float64 `json:"burstiness,omitempty"`      // gamma shape
	MaxConcurrency int     `json:"max_concurrency,omitempty"` // open loop: cap on requests in flight
	Queue          bool    `json:"queue,omitempty"`           // open loop: arrivals beyond the cap wait client-side (overflow: queue)
	Sessions       bool    `json:"sessions,omitempty"`        // a session stage: its workers (or arrivals) are sessions, not requests
	Requests       int     `json:"requests,omitempty"`        // bound by count (arrivals); 0: none
	DurationS      float64 `json:"duration_s,omitempty"`      // bound by time, seconds; 0: none
	WarmupRequests int     `json:"warmup_requests,omitempty"`
	WarmupS        float64 `json:"warmup_s,omitempty"`
}

// workload builds the Workload of a resolved scenario; nil without one.
func workload(spec *results.Spec) *Workload {
	if spec == nil {
		return nil
	}
	w := &Workload{TargetURL: spec.Target.URL, API: spec.Target.API, InputTokens: spec.Prompts.InputTokens,
		OutputTokens: spec.Prompts.OutputTokens, SharedPrefixTokens: spec.Prompts.SharedPrefixTokens,
		Dataset: spec.Prompts.Dataset.Path, Tokenizer: spec.Prompts.Tokenizer, Stages: []StageLoad{}}
	if w.Dataset != "" {
		w.InputTokens = nil // the dataset's prompts have their own lengths
	}
	for i, st := range spec.Load.Stages {
		l := StageLoad{Index: i, Name: spec.StageName(i), Loop: "closed", Concurrency: st.Concurrency,
			Requests: st.Requests, DurationS: seconds(st.Duration), WarmupRequests: st.Warmup.Requests,
			WarmupS: seconds(st.Warmup.Duration)}
		l.Sessions = st.Session != nil
		if st.Open() {
			l.Loop, l.Concurrency, l.Rate, l.Arrival, l.MaxConcurrency = "open", 0, st.Rate, st.Arrival, st.MaxConcurrency
			l.Queue = st.Overflow == "queue"
			if st.Arrival == "gamma" {
				l.Burstiness = st.Burstiness
			}
		}
		w.Stages = append(w.Stages, l)
	}
	return w
}

func seconds(s string) float64 {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0
	}
	return d.Seconds()
}

// String describes the load in words: "closed loop, 8 workers; 96
// requests or 20 s; first 8 warmup", "open loop, Poisson arrivals at 30
// req/s, at most 32 in flight; 300 requests or 15 s".
func (l StageLoad) String() string {
	var b strings.Builder
	if l.Loop == "open" {
		arrivals := map[string]string{"constant": "evenly spaced", "poisson": "Poisson", "gamma": "gamma"}[l.Arrival]
		if arrivals == "" {
			arrivals = l.Arrival
		}
		unit := "req/s"
		if l.Sessions {
			unit = "sessions/s"
		}
		fmt.Fprintf(&b, "open loop, %s arrivals at %s %s", arrivals, trimFloat(l.Rate, 2), unit)
		if l.Burstiness > 0 {
			fmt.Fprintf(&b, " (burstiness %s)", trimFloat(l.Burstiness, 2))
		}
		if l.MaxConcurrency > 0 {
			fmt.Fprintf(&b, ", at most %d in flight", l.MaxConcurrency)
			if l.Queue {
				b.WriteString(" (more wait client-side)")
			}
		}
	} else {
		workers := "workers"
		switch {
		case l.Sessions && l.Concurrency == 1:
			workers = "session held open (the next starts when it ends)"
		case l.Sessions:
			workers = "sessions held open (each ended one replaced)"
		case l.Concurrency == 1:
			workers = "worker"
		}
		fmt.Fprintf(&b, "closed loop, %d %s", l.Concurrency, workers)
	}
	var bounds []string
	if l.Requests > 0 {
		bounds = append(bounds, fmt.Sprintf("%d requests", l.Requests))
	}
	if l.DurationS > 0 {
		bounds = append(bounds, FormatSeconds(l.DurationS))
	}
	if len(bounds) > 0 {
		b.WriteString("; " + strings.Join(bounds, " or "))
	}
	switch {
	case l.WarmupRequests > 0 && l.WarmupS > 0:
		fmt.Fprintf(&b, "; warmup: first %d requests or %s", l.WarmupRequests, FormatSeconds(l.WarmupS))
	case l.WarmupRequests > 0:
		fmt.Fprintf(&b, "; warmup: first %d requests", l.WarmupRequests)
	case l.WarmupS > 0:
		fmt.Fprintf(&b, "; warmup: first %s", FormatSeconds(l.WarmupS))
	}
	return b.String()
}
