package scenario

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/tokenizer"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scrape/profile"
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
	DefaultUntilConfidence   = 0.95 // load.stages[].until.confidence
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
	embed := t.API == results.APIEmbeddings
	if embed && t.Stream == nil {
		f := false
		t.Stream = &f
	}
	t.Stream = orTrue(t.Stream)
	setDuration(&t.Timeouts.Connect, DefaultConnectTimeout)
	setDuration(&t.Timeouts.FirstByte, DefaultFirstByteTimeout)
	setDuration(&t.Timeouts.Idle, DefaultIdleTimeout)
	setDuration(&t.Timeouts.Total, DefaultTotalTimeout)

	r := &sc.Request
	r.IgnoreEOS = orTrue(r.IgnoreEOS)
	r.IncludeUsage = orTrue(r.IncludeUsage)
	if embed && r.Batch == 0 {
		r.Batch = 1
	}

	p := &sc.Prompts
	if p.Tokenizer == "" {
		p.Tokenizer = tokenizer.Default
	}
	if p.Dataset.Path == "" {
		if p.InputTokens == nil {
			p.InputTokens = &Dist{Dist: DistFixed, Value: DefaultInputTokens}
		}
		if p.OutputTokens == nil && !embed {
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
	if c := p.Conversation; c != nil {
		c.Turns.defaults()
	}
	p.PrefixCache.defaults()

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
		l.Stages[i].defaults(i)
	}
	sc.Sweep.defaults()
}

// defaults fills stage i's unset fields.
func (st *Stage) defaults(i int) {
	if st.Name == "" {
		st.Name = fmt.Sprintf("stage-%d", i)
	}
	if st.Until != nil && st.Until.Confidence == 0 {
		st.Until.Confidence = DefaultUntilConfidence
	}
	st.Session.defaults()
	if !st.Open() {
		return
	}
	if st.Overflow == "" {
		st.Overflow = OverflowDrop
	}
	if tr := st.Trace; tr != nil && tr.Speedup == 0 {
		tr.Speedup = 1
	}
	if st.MaxConcurrency == 0 {
		st.MaxConcurrency = DefaultMaxConcurrency
	}
	if st.Replay() {
		return
	}
	if st.Arrival == "" {
		st.Arrival = ArrivalPoisson
	}
	if st.Burstiness == 0 && st.Arrival == ArrivalGamma {
		st.Burstiness = DefaultBurstiness
	}
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

// zeros reports the fields written with a zero or empty value that
// Defaults would replace: written, such a value would silently become the
// default (max_duration: 0s running for 30 minutes, max_concurrency: 0
// capping at 1024). Each message says what to write instead. A zero that
// has a meaning of its own is not one of these and is kept: min_tokens 0
// omits it, a stage's requests or duration 0 leaves it unbounded by that,
// a warmup of 0 has none, sweep.server.port 0 picks a free port, target.model
// "" detects the model. Only a scenario read from a file or changed by
// --set knows what was written; one built in Go has its zeros defaulted.
func (v *validator) zeros(sc *Scenario) {
	raw := sc.raw
	if raw == nil {
		return
	}
	z := func(path string, zero bool, msg string) {
		if zero && v.src.written(path) {
			v.add(path, "%s", msg)
		}
	}
	orDefault := func(def any) string { return fmt.Sprintf(", or remove the key for the default (%v)", def) }

	t := &raw.Target
	z("target.url", t.URL == "", "is empty: write the server's base URL (like http://127.0.0.1:8000/v1)"+orDefault(DefaultURL+", the built-in simulator"))
	z("target.api", t.API == "", fmt.Sprintf("is empty: write %s, %s or %s", results.APIChat, results.APICompletions, results.APIEmbeddings)+orDefault(results.APIChat))
	z("request.batch", raw.Request.Batch == 0 && sc.Target.API == results.APIEmbeddings,
		fmt.Sprintf("0 would embed nothing: write the texts per request, 1 to %d", maxBatch)+orDefault(1))
	for _, d := range []struct {
		field string
		d     Duration
		def   time.Duration
	}{
		{"target.timeouts.connect", t.Timeouts.Connect, DefaultConnectTimeout},
		{"target.timeouts.first_byte", t.Timeouts.FirstByte, DefaultFirstByteTimeout},
		{"target.timeouts.idle", t.Timeouts.Idle, DefaultIdleTimeout},
		{"target.timeouts.total", t.Timeouts.Total, DefaultTotalTimeout},
	} {
		z(d.field, d.d == 0, "0s is not a timeout: write a positive duration"+orDefault(Duration(d.def)))
	}

	p := &raw.Prompts
	z("prompts.tokenizer", p.Tokenizer == "", "is empty: write "+tokenizerChoices+orDefault(tokenizer.Default))
	z("prompts.dataset.format", p.Dataset.Path != "" && p.Dataset.Format == "",
		"is empty: write "+FormatShareGPT+", "+FormatJSONL+" or "+FormatMessages+", or remove the key to follow the file's extension (.jsonl: jsonl, else sharegpt)")
	for _, d := range []struct {
		field    string
		raw, res *Dist
	}{{"prompts.input_tokens", p.InputTokens, sc.Prompts.InputTokens}, {"prompts.output_tokens", p.OutputTokens, sc.Prompts.OutputTokens}} {
		if d.raw == nil || d.res == nil {
			continue
		}
		z(d.field+".dist", d.raw.Dist == "", "is empty: write "+DistFixed+", "+DistUniform+" or "+DistNormal+orDefault(DistFixed))
		if d.res.Dist == DistNormal {
			z(d.field+".min", d.raw.Min == 0, "0 is below the shortest length, 1 token: write 1 or more"+orDefault(1))
			z(d.field+".max", d.raw.Max == 0, fmt.Sprintf("0 would cap every length at 0 tokens: write the longest length wanted, or remove the key for mean + %d stddev", DefaultNormalSpreadSigma))
		}
	}

	s := &raw.Scrape
	z("scrape.interval", s.Interval == 0, "0s is not an interval: write "+Duration(minScrape).String()+" or more"+orDefault(Duration(DefaultScrapeInterval))+"; scrape.enabled: false turns scraping off")
	z("scrape.profile", s.Profile == "", "is empty: write one of "+strings.Join(profile.Names(), ", ")+orDefault(DefaultScrapeProfile))

	l := &raw.Load
	z("load.max_duration", l.MaxDuration == 0, "0s is not a bound: write the longest the whole run may take, like 1h"+orDefault(Duration(DefaultMaxDuration)))
	for i := range min(len(l.Stages), len(sc.Load.Stages)) {
		st, res := &l.Stages[i], &sc.Load.Stages[i]
		f := fmt.Sprintf("load.stages[%d]", i)
		z(f+".name", st.Name == "", "is empty: write a name"+orDefault(res.Name))
		if !res.Open() {
			continue
		}
		z(f+".max_concurrency", st.MaxConcurrency == 0,
			fmt.Sprintf("0 would leave no room for a request: write a cap on requests in flight from 1 to %d", maxConcurrency)+orDefault(DefaultMaxConcurrency))
		if res.Replay() {
			z(f+".trace.speedup", st.Trace != nil && st.Trace.Speedup == 0, "0 would never replay the trace: write a factor like 1 (as recorded) or 2 (twice as fast)"+orDefault(1))
			z(f+".session.trace.speedup", st.Session != nil && st.Session.Trace != nil && st.Session.Trace.Speedup == 0,
				"0 would never replay the trace: write a factor like 1 (as recorded) or 2 (twice as fast)"+orDefault(1))
			continue
		}
		z(f+".arrival", st.Arrival == "", "is empty: write "+ArrivalConstant+", "+ArrivalPoisson+" or "+ArrivalGamma+orDefault(ArrivalPoisson))
		z(f+".burstiness", st.Burstiness == 0 && res.Arrival == ArrivalGamma,
			"0 is not a gamma shape: write a shape above 0 (1 is Poisson, lower is burstier)"+orDefault(DefaultBurstiness))
	}

	sw := raw.Sweep
	if sw == nil {
		return
	}
	z("sweep.repeats", sw.Repeats == 0, fmt.Sprintf("0 would run nothing: write 1 to %d", maxSweepRepeats)+orDefault(1))
	if sv := sw.Server; sv != nil {
		z("sweep.server.base_url", sv.BaseURL == "", "is empty: write the launched server's base URL"+orDefault(DefaultSweepBaseURL))
		z("sweep.server.ready_url", sv.ReadyURL == "", "is empty: write the URL that answers 2xx once the server is ready, or remove the key for base_url's /health")
		z("sweep.server.ready_timeout", sv.ReadyTimeout == 0, "0s is not a timeout: write how long the server may take to start"+orDefault(Duration(DefaultSweepReadyTimeout)))
		z("sweep.server.stop_timeout", sv.StopTimeout == 0, "0s leaves no time to exit: write how long the server has after SIGTERM before SIGKILL"+orDefault(Duration(DefaultSweepStopTimeout)))
	}
}
