package live

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/servebench/servebench/internal/loopback"
	"github.com/servebench/servebench/results"
)

// The metric names, defined once: deploy/grafana/servebench.json queries
// these.
const (
	MetricRequests     = "servebench_requests_total"                    // counter: {stage, outcome}
	MetricErrors       = "servebench_request_errors_total"              // counter: {stage, error_class}
	MetricOutputTokens = "servebench_output_tokens_total"               // counter: {stage}
	MetricPromptTokens = "servebench_prompt_tokens_total"               // counter: {stage}
	MetricInFlight     = "servebench_requests_in_flight"                // gauge: sent and not yet ended
	MetricTTFT         = "servebench_ttft_seconds"                      // histogram: {stage}
	MetricTPOT         = "servebench_tpot_seconds"                      // histogram: {stage}
	MetricITL          = "servebench_inter_token_seconds"               // histogram: {stage}, one per token gap
	MetricE2E          = "servebench_e2e_seconds"                       // histogram: {stage}
	MetricInfo         = "servebench_run_info"                          // gauge 1: {scenario, target, model, version}
	MetricStarted      = "servebench_run_start_time_seconds"            // gauge: the run's epoch, Unix seconds
	MetricSchedLag     = "servebench_schedule_lag_seconds_max"          // gauge: {stage}, the largest scheduled → sent lag so far
	MetricStage        = "servebench_stage"                             // gauge: the running stage, from 1 (0 before and after)
	MetricChunks       = "servebench_chunks_total"                      // counter: token-bearing chunks received, streams in progress included
	MetricFirstTokens  = "servebench_first_tokens_total"                // counter: first tokens received, streams in progress included
	MetricFirstTokenS  = "servebench_time_to_first_token_seconds_total" // counter: their TTFT sum
)

// Latency buckets, seconds: TTFT and E2E span milliseconds to minutes;
// TPOT and ITL a fraction of a millisecond to a second.
var (
	longBuckets  = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 60, 150, 300, 600}
	shortBuckets = []float64{0.0005, 0.001, 0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 1}
)

// Run describes the run the metrics belong to.
type Run struct {
	Scenario, Target, Model, Version string
	Started                          time.Time
	// StageName names stage i (the scenario's stage names).
	StageName func(i int) string
	// InFlight returns the requests in flight now; nil leaves the gauge out.
	InFlight func() int64
	// Stage returns the index of the running stage (-1 before the first,
	// the number of stages after the last); nil leaves the gauge out.
	Stage func() int
	// StageCount is the number of stages (0: unknown).
	StageCount int
	// Chunks returns the token-bearing chunks received so far, and
	// FirstTokens the requests that received their first token and the sum
	// of their times to first token, streams still running included (the
	// client's live counters): rate(sum) / rate(count) is a TTFT that moves
	// as soon as the server queues, before those requests end. Nil leaves
	// them out.
	Chunks      func() int64
	FirstTokens func() (n int64, sum time.Duration)
	// Cost is the scenario's price; nil leaves the cost counter out.
	Cost *results.Cost
	// Metrics is the metric table; nil is results.Metrics. Its latency
	// metrics that this package does not export by hand (liveByHand) get
	// a histogram each (tableHistograms).
	Metrics results.Table
}

// Exporter turns request records into metrics. Observe must not be called
// concurrently (the run's single results writer calls it); the metrics
// themselves are safe to gather at any time.
type Exporter struct {
	run                        Run
	requests, errs, out, input *prometheus.CounterVec
	ttft, tpot, itl, e2e       *prometheus.HistogramVec
	more                       []tableHistogram // the table's other latency metrics
	lag                        *prometheus.GaugeVec
	lagMax                     map[int]float64
	buf                        []time.Duration
	eff                        *efficiency
}

// New registers the run's metrics in reg and returns the exporter that
// feeds them.
func New(reg prometheus.Registerer, r Run) (*Exporter, error) {
	if r.StageName == nil {
		r.StageName = func(i int) string { return fmt.Sprintf("stage-%d", i) }
	}
	e := &Exporter{run: r, lagMax: map[int]float64{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRequests,
			Help: "Requests ended, by stage and outcome (ok, failed, canceled, dropped); warmup ones included."}, []string{"stage", "outcome"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricErrors,
			Help: "Failed requests by stage and error class."}, []string{"stage", "error_class"}),
		out: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricOutputTokens,
			Help: "Output tokens of the requests ended ok (the server's usage)."}, []string{"stage"}),
		input: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricPromptTokens,
			Help: "Prompt tokens of the requests ended ok (the server's usage)."}, []string{"stage"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricTTFT, Buckets: longBuckets,
			Help: "Time to first token, sent to first content or reasoning token, of the measured ok requests."}, []string{"stage"}),
		tpot: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricTPOT, Buckets: shortBuckets,
			Help: "Time per output token after the first, per measured ok request."}, []string{"stage"}),
		itl: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricITL, Buckets: shortBuckets,
			Help: "Gaps between tokens (a chunk of k tokens gives k gaps), of the measured ok requests."}, []string{"stage"}),
		e2e: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricE2E, Buckets: longBuckets,
			Help: "End-to-end latency, sent to the response's end, of the measured ok requests."}, []string{"stage"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricSchedLag,
			Help: "The largest lag so far between a request's scheduled and actual send: the load generator falling behind."}, []string{"stage"}),
	}
	e.more = tableHistograms(r.Metrics)
	e.zero(r)
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricInfo, Help: "The run: 1, labelled with its scenario, target, model and servebench version.",
		ConstLabels: prometheus.Labels{"scenario": r.Scenario, "target": r.Target, "model": r.Model, "version": r.Version}})
	info.Set(1)
	started := prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricStarted, Help: "The run's start, Unix seconds."})
	started.Set(float64(r.Started.UnixNano()) / 1e9)
	cs := []prometheus.Collector{e.requests, e.errs, e.out, e.input, e.ttft, e.tpot, e.itl, e.e2e, e.lag, info, started}
	for _, h := range e.more {
		cs = append(cs, h.vec)
	}
	if r.InFlight != nil {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: MetricInFlight, Help: "Requests sent and not yet ended."},
			func() float64 { return float64(r.InFlight()) }))
	}
	if r.Stage != nil {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: MetricStage,
			Help: "The running stage, counted from 1 (0 before the first and after the last)."},
			func() float64 {
				if i := r.Stage(); i >= 0 && (r.StageCount == 0 || i < r.StageCount) {
					return float64(i + 1)
				}
				return 0
			}))
	}
	if r.Chunks != nil {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: MetricChunks,
			Help: "Token-bearing chunks received, streams still running included."},
			func() float64 { return float64(r.Chunks()) }))
	}
	if r.FirstTokens != nil {
		cs = append(cs,
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: MetricFirstTokens,
				Help: "Requests that received their first token, streams still running included."},
				func() float64 { n, _ := r.FirstTokens(); return float64(n) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: MetricFirstTokenS,
				Help: "Sum of the times to first token of servebench_first_tokens_total: rate(this) / rate(that) is the live TTFT."},
				func() float64 { _, sum := r.FirstTokens(); return sum.Seconds() }))
	}
	var effs []prometheus.Collector
	e.eff, effs = newEfficiency(r)
	cs = append(cs, effs...)
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("live metrics: %w", err)
		}
	}
	return e, nil
}

// zero makes every series of every stage exist at 0 before the first
// request ends: each outcome, each error class, the token counters, the
// latency histograms and the schedule lag. A series that does not exist
// yet is "No data" on a dashboard, and rate() of a counter whose first
// sample is already 3 misses those 3.
func (e *Exporter) zero(r Run) {
	for i := range r.StageCount {
		stage := r.StageName(i)
		for _, o := range results.Outcomes() {
			e.requests.WithLabelValues(stage, string(o))
		}
		for _, c := range results.ErrorClasses() {
			e.errs.WithLabelValues(stage, string(c))
		}
		for _, v := range []*prometheus.CounterVec{e.out, e.input} {
			v.WithLabelValues(stage)
		}
		for _, h := range []*prometheus.HistogramVec{e.ttft, e.tpot, e.itl, e.e2e} {
			h.WithLabelValues(stage)
		}
		for _, h := range e.more {
			h.vec.WithLabelValues(stage)
		}
		e.lag.WithLabelValues(stage).Set(0)
	}
}

// Observe adds one request record. Latencies count the measured (not
// warmup) ok requests, as the report does; the counters count every
// request.
func (e *Exporter) Observe(r *results.Result) {
	stage := e.run.StageName(r.Stage)
	e.requests.WithLabelValues(stage, string(r.Outcome)).Inc()
	if d, ok := r.ScheduleLag(); ok && d.Seconds() > e.lagMax[r.Stage] {
		e.lagMax[r.Stage] = d.Seconds()
		e.lag.WithLabelValues(stage).Set(d.Seconds())
	}
	switch r.Outcome {
	case results.Failed:
		e.errs.WithLabelValues(stage, string(r.ErrorClass)).Inc()
		return
	case results.OK:
	default:
		return
	}
	e.out.WithLabelValues(stage).Add(float64(r.OutputTokens))
	e.input.WithLabelValues(stage).Add(float64(r.PromptTokens))
	e.eff.tokensOf(r)
	if r.Warmup {
		return
	}
	for _, m := range []struct {
		h   *prometheus.HistogramVec
		fig func() (time.Duration, bool)
	}{{e.ttft, r.TTFT}, {e.tpot, r.TPOT}, {e.e2e, r.E2E}} {
		if d, ok := m.fig(); ok {
			m.h.WithLabelValues(stage).Observe(d.Seconds())
		}
	}
	e.buf = r.AppendITLs(e.buf[:0])
	if len(e.buf) > 0 {
		h := e.itl.WithLabelValues(stage)
		for _, d := range e.buf {
			h.Observe(d.Seconds())
		}
	}
	for _, m := range e.more {
		if e.buf = m.observe(r, e.buf[:0]); len(e.buf) > 0 {
			h := m.vec.WithLabelValues(stage)
			for _, d := range e.buf {
				h.Observe(d.Seconds())
			}
		}
	}
}

// tableHistogram is the histogram of a latency metric of the table.
type tableHistogram struct {
	vec     *prometheus.HistogramVec
	observe func(*results.Result, []time.Duration) []time.Duration
}

// tableHistograms returns a histogram for each latency metric of t (nil:
// results.Metrics) that liveByHand does not name: "servebench_NAME_seconds"
// for NAME_ms, with the metric's About as its help and the long buckets.
// With results.Metrics it returns none: the page is what it was, and a
// latency metric added to the table gets its histogram.
func tableHistograms(t results.Table) []tableHistogram {
	if t == nil {
		t = results.Metrics()
	}
	var out []tableHistogram
	for _, m := range t {
		if m.Observe == nil || liveByHand(m.Name) {
			continue
		}
		name := "servebench_" + strings.TrimSuffix(m.Name, "_ms") + "_seconds"
		out = append(out, tableHistogram{observe: m.Observe,
			vec: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Buckets: longBuckets,
				Help: "The metric " + m.Name + " (" + m.About + "), of the measured ok requests."}, []string{"stage"})})
	}
	return out
}

// liveByHand reports whether a latency metric of the table is exported by
// hand above or left out of the page. TTFT, TPOT, ITL and E2E have
// histograms whose names the Grafana dashboard queries and whose buckets
// suit each; the schedule lag is a gauge of its maximum (a histogram of
// it would hide the one late request that matters). The others were left
// out when the page was first built, the dashboard shows none of them,
// and exporting them now would add series to every scrape: this list is
// closed, and a metric added to the table gets its histogram.
func liveByHand(name string) bool {
	switch name {
	case "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "schedule_lag_ms",
		"ttft_from_schedule_ms", "ttfc_ms", "itl_chunk_ms", "e2e_from_schedule_ms", "wire_lag_ms":
		return true
	}
	return false
}

// ServeListener serves g's metrics at /metrics on ln until stop is called
// (it gives a scrape in progress two seconds).
func ServeListener(ln net.Listener, g prometheus.Gatherer) (stop func()) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		<-done
	}
}

// Serve serves g's metrics at /metrics on addr (host:port; port 0 picks a
// free one; a loopback address: see Listen) until ctx ends or stop is
// called, and returns the address it listens on.
func Serve(ctx context.Context, addr string, g prometheus.Gatherer) (listening string, stop func(), err error) {
	ln, err := Listen(addr, false)
	if err != nil {
		return "", nil, fmt.Errorf("live metrics: %w", err)
	}
	shut := sync.OnceFunc(ServeListener(ln, g))
	stopCtx, cancel := context.WithCancel(ctx)
	go func() {
		<-stopCtx.Done()
		shut()
	}()
	return ln.Addr().String(), func() { cancel(); shut() }, nil
}

// CheckAddr is Listen's check of addr, without listening (for a dry run):
// a loopback address unless allowRemote.
func CheckAddr(addr string, allowRemote bool) error {
	if !allowRemote && !loopback.Addr(addr) {
		return fmt.Errorf("metrics address %s: want a loopback address such as 127.0.0.1:9464 (another host may scrape it only with target.allow_remote)", addr)
	}
	return nil
}

// Listen opens addr for the metrics page: a loopback address unless
// allowRemote (the run's target.allow_remote), so a run's figures are not
// served to the network by accident. Port 0 picks a free one.
func Listen(addr string, allowRemote bool) (net.Listener, error) {
	if err := CheckAddr(addr, allowRemote); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics address: %w", err)
	}
	return l, nil
}
