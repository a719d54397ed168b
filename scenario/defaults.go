package scenario

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/tokenizer"
	"github.com/servebench/servebench/results"
)

// Defaults, applied by Scenario.Defaults when a field is unset.
const (
	DefaultURL               = "sim://tiny"
	DefaultConnectTimeout    = 5 * time.Second
	DefaultFirstByteTimeout  = 2 * time.Minute
	DefaultIdleTimeout       = time.Minute
	DefaultTotalTimeout      = 10 * time.Minute
	DefaultInputTokens       = 256 // fixed, synthetic prompts only
	DefaultOutputTokens      = 128 // fixed, synthetic prompts only
	DefaultScrapeInterval    = time.Second
	DefaultScrapeProfile     = "auto"
	DefaultMaxDuration       = 30 * time.Minute
	DefaultBreakerWindow     = 20   // load.circuit_breaker.window, requests
	DefaultBreakerFailures   = 0.9  // load.circuit_breaker.failures, a share
	DefaultMaxConcurrency    = 1024 // open-loop requests in flight
	DefaultBurstiness        = 1.0
	DefaultNormalSpreadSigma = 4 // an unset normal max is mean + 4 stddev
)

// Defaults fills every unset field with its default. It is the only place
// defaults are applied, it is idempotent, and it never overrides a value
// that was set. Load and Parse call it; call it yourself on a Scenario
// built in code.
func (sc *Scenario) Defaults() {
	t := &sc.Target
	if t.URL == "" {
		t.URL = DefaultURL
	}
	if t.API == "" {
		t.API = results.APIChat
	}
	t.Stream = orTrue(t.Stream)
	setDuration(&t.Timeouts.Connect, DefaultConnectTimeout)
	setDuration(&t.Timeouts.FirstByte, DefaultFirstByteTimeout)
	setDuration(&t.Timeouts.Idle, DefaultIdleTimeout)
	setDuration(&t.Timeouts.Total, DefaultTotalTimeout)

	r := &sc.Request
	r.IgnoreEOS = orTrue(r.IgnoreEOS)
	r.IncludeUsage = orTrue(r.IncludeUsage)

	p := &sc.Prompts
	if p.Tokenizer == "" {
		p.Tokenizer = tokenizer.Default
	}
	if p.Dataset.Path == "" {
		if p.InputTokens == nil {
			p.InputTokens = &Dist{Dist: DistFixed, Value: DefaultInputTokens}
		}
		if p.OutputTokens == nil {
			p.OutputTokens = &Dist{Dist: DistFixed, Value: DefaultOutputTokens}
		}
	} else if p.Dataset.Format == "" {
		p.Dataset.Format = FormatShareGPT
		if strings.HasSuffix(strings.ToLower(p.Dataset.Path), ".jsonl") {
			p.Dataset.Format = FormatJSONL
		}
	}
	p.InputTokens.defaults()
	p.OutputTokens.defaults()

	s := &sc.Scrape
	s.Enabled = orTrue(s.Enabled)
	setDuration(&s.Interval, DefaultScrapeInterval)
	if s.Profile == "" {
		s.Profile = DefaultScrapeProfile
	}

	l := &sc.Load
	setDuration(&l.MaxDuration, DefaultMaxDuration)
	l.CircuitBreaker.Enabled = orTrue(l.CircuitBreaker.Enabled)
	if l.CircuitBreaker.Window == 0 {
		l.CircuitBreaker.Window = DefaultBreakerWindow
	}
	if l.CircuitBreaker.Failures == 0 {
		l.CircuitBreaker.Failures = DefaultBreakerFailures
	}
	for i := range l.Stages {
		st := &l.Stages[i]
		if st.Name == "" {
			st.Name = fmt.Sprintf("stage-%d", i)
		}
		if !st.Open() {
			continue
		}
		if st.Arrival == "" {
			st.Arrival = ArrivalPoisson
		}
		if st.Burstiness == 0 && st.Arrival == ArrivalGamma {
			st.Burstiness = DefaultBurstiness
		}
		if st.MaxConcurrency == 0 {
			st.MaxConcurrency = DefaultMaxConcurrency
		}
	}
	sc.Sweep.defaults()
}

func (d *Dist) defaults() {
	if d == nil {
		return
	}
	if d.Dist == "" {
		d.Dist = DistFixed
	}
	if d.Dist != DistNormal {
		return
	}
	if d.Min == 0 {
		d.Min = 1
	}
	if d.Max == 0 && d.Mean > 0 && d.Stddev >= 0 {
		d.Max = int(math.Ceil(min(d.Mean+DefaultNormalSpreadSigma*d.Stddev, maxTokens)))
	}
}

func orTrue(b *bool) *bool {
	if b != nil {
		return b
	}
	t := true
	return &t
}

func setDuration(d *Duration, def time.Duration) {
	if *d == 0 {
		*d = Duration(def)
	}
}
