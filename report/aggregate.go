package report

import (
	"github.com/servebench/servebench/report/correlate"

	"github.com/servebench/servebench/results"

	"fmt"
	"math"
	"sort"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range: 1 µs to 1 hour at 3 significant digits (≤ 0.1 % error).
const (
	histMinUS   = 1
	histMaxUS   = int64(time.Hour / time.Microsecond)
	histSigFigs = 3
)

// metric names, in the order writers show them.
const (
	mTTFT = iota
	mTTFTSched
	mTTFC
	mITL
	mITLChunk
	mTPOT
	mE2E
	mE2ESched
	mLag
	numMetrics
)

// scheduleLagWarnMS is the p99 schedule lag above which a stage is flagged:
// the harness, not the server, delayed requests.
const scheduleLagWarnMS = 10

// stageAgg accumulates one stage (or the whole run).
type stageAgg struct {
	req       Requests
	errors    map[string]int64
	hist      [numMetrics]*hdrhistogram.Histogram
	tokens    Tokens
	first     time.Duration // earliest Sent (or Scheduled) of a counted request
	last      time.Duration // latest End
	haveRange bool
}

func newStageAgg() *stageAgg {
	s := &stageAgg{errors: map[string]int64{}}
	for i := range s.hist {
		s.hist[i] = hdrhistogram.New(histMinUS, histMaxUS, histSigFigs)
	}
	return s
}

// Aggregate accumulates request records into per-stage and overall
// statistics. Add does not depend on the order of records, so files from
// several machines can be merged. An Aggregate is not safe for concurrent
// use.
type Aggregate struct {
	overall  *stageAgg
	stages   map[int]*stageAgg
	names    map[int]string
	meta     Summary
	files    int
	warnings []string
	itlBuf   []time.Duration
	corr     *correlate.Correlator
	spec     *results.Spec
	log      requestLog // per-request figures and server points for verdicts and comparisons (verdict_log.go)
}

// New returns an empty Aggregate.
func New() *Aggregate {
	return &Aggregate{overall: newStageAgg(), stages: map[int]*stageAgg{}, names: map[int]string{}, corr: correlate.New()}
}

// AddHeader records a results file's header: run metadata and stage names.
// With several files, the first header's metadata is kept and the earliest
// start time wins.
func (a *Aggregate) AddHeader(h *results.Header) {
	if h.Spec == nil && len(h.Scenario) > 0 {
		// A header built by hand rather than read by Reader.
		hc := *h
		hc.Spec, _ = results.DecodeSpec(h.Scenario)
		h = &hc
	}
	a.corr.AddHeader(h)
	a.log.header(h)
	a.files++
	if a.files == 1 {
		a.meta.Tool, a.meta.Version, a.meta.Target, a.meta.Model = h.Tool, h.Version, h.Target, h.Model
		a.meta.Started = h.Started
	} else if h.Started.Before(a.meta.Started) {
		a.meta.Started = h.Started
	}
	if a.spec == nil {
		a.spec = h.Spec
	}
	if h.Spec == nil {
		return
	}
	if a.meta.Scenario == "" {
		a.meta.Scenario = h.Spec.Name
	}
	for i, st := range h.Spec.Load.Stages {
		if _, ok := a.names[i]; !ok {
			a.names[i] = st.Name
		}
	}
}

// Spec returns the resolved scenario of the first header added that has
// one, or nil.
func (a *Aggregate) Spec() *results.Spec { return a.spec }

// Warn attaches a non-fatal problem to the summary.
func (a *Aggregate) Warn(msg string) { a.warnings = append(a.warnings, msg) }

// Add accumulates one request record. Warmup records are only counted.
func (a *Aggregate) Add(r *results.Result) {
	st, ok := a.stages[r.Stage]
	if !ok {
		st = newStageAgg()
		a.stages[r.Stage] = st
	}
	a.itlBuf = st.add(r, a.itlBuf)
	a.itlBuf = a.overall.add(r, a.itlBuf)
	a.corr.AddResult(r)
	a.itlBuf = a.log.add(r, a.itlBuf)
}

// AddSample accumulates one scrape sample for the correlation section.
func (a *Aggregate) AddSample(s results.Sample) { a.corr.AddSample(s); a.log.sample(&s) }

func record(h *hdrhistogram.Histogram, d time.Duration) {
	us := int64(d / time.Microsecond)
	if us < histMinUS {
		us = histMinUS
	}
	if us > histMaxUS {
		us = histMaxUS
	}
	_ = h.RecordValue(us) // cannot fail: us is clamped into range
}

func (s *stageAgg) add(r *results.Result, buf []time.Duration) []time.Duration {
	if r.Warmup {
		s.req.Warmup++
		return buf
	}
	s.req.Scheduled++
	switch r.Outcome {
	case results.OK:
		s.req.OK++
	case results.Failed:
		s.req.Failed++
		s.errors[string(r.ErrorClass)]++
	case results.Canceled:
		s.req.Canceled++
	case results.Dropped:
		s.req.Dropped++
		return buf
	}
	start := r.Sent
	if start == 0 {
		start = r.Scheduled
	}
	if !s.haveRange || start < s.first {
		s.first = start
	}
	if !s.haveRange || r.End > s.last {
		s.last = r.End
	}
	s.haveRange = true
	if d, ok := r.ScheduleLag(); ok {
		record(s.hist[mLag], d)
	}
	if r.Outcome != results.OK {
		return buf
	}
	s.tokens.Prompt += int64(r.PromptTokens)
	s.tokens.Output += int64(r.OutputTokens)
	if r.Estimated {
		s.tokens.EstimatedRequests++
	}
	if d, ok := r.TTFT(); ok {
		record(s.hist[mTTFT], d)
	}
	if d, ok := r.TTFTFromSchedule(); ok {
		record(s.hist[mTTFTSched], d)
	}
	if d, ok := r.TTFC(); ok {
		record(s.hist[mTTFC], d)
	}
	if d, ok := r.TPOT(); ok {
		record(s.hist[mTPOT], d)
	}
	if d, ok := r.E2E(); ok {
		record(s.hist[mE2E], d)
	}
	if d, ok := r.E2EFromSchedule(); ok {
		record(s.hist[mE2ESched], d)
	}
	buf = r.AppendITLs(buf[:0])
	for _, d := range buf {
		record(s.hist[mITL], d)
	}
	buf = r.AppendChunkITLs(buf[:0])
	for _, d := range buf {
		record(s.hist[mITLChunk], d)
	}
	return buf
}

// Summary computes the summary of everything added so far.
func (a *Aggregate) Summary() *Summary {
	out := a.meta
	out.Schema = SummarySchema
	if out.Tool == "" {
		out.Tool = "servebench"
	}
	out.Files = a.files
	out.Overall = a.overall.summary(-1, "overall")
	idx := make([]int, 0, len(a.stages))
	for i := range a.stages {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	out.Stages = make([]Stage, 0, len(idx))
	for _, i := range idx {
		name := a.names[i]
		if name == "" {
			name = fmt.Sprintf("stage-%d", i)
		}
		out.Stages = append(out.Stages, a.stages[i].summary(i, name))
	}
	out.Correlation = a.corr.Correlation(a.names)
	explain(out.Correlation)
	out.Warnings = append([]string(nil), a.warnings...)
	for _, st := range out.Stages {
		if lag := st.ScheduleLag; lag.Count > 0 && lag.P99 > scheduleLagWarnMS {
			out.Warnings = append(out.Warnings, fmt.Sprintf(
				"stage %s: requests left up to %.1f ms (p99) after their scheduled time: the load generator fell behind its schedule",
				st.Name, lag.P99))
		}
	}
	if n := a.overall.tokens.EstimatedRequests; n > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf(
			"%d requests had no usage from the server: their token counts are local estimates", n))
	}
	return &out
}

func (s *stageAgg) summary(index int, name string) Stage {
	st := Stage{Index: index, Name: name, Requests: s.req, Errors: s.errors, Tokens: s.tokens}
	if s.haveRange && s.last > s.first {
		st.Duration = round(s.last.Seconds()-s.first.Seconds(), 6)
	}
	st.TTFT = dist(s.hist[mTTFT])
	st.TTFTFromSchedule = dist(s.hist[mTTFTSched])
	st.TTFC = dist(s.hist[mTTFC])
	st.ITL = dist(s.hist[mITL])
	st.ITLChunk = dist(s.hist[mITLChunk])
	st.TPOT = dist(s.hist[mTPOT])
	st.E2E = dist(s.hist[mE2E])
	st.E2EFromSchedule = dist(s.hist[mE2ESched])
	st.ScheduleLag = dist(s.hist[mLag])
	if st.Duration > 0 {
		st.OutputTokensPerSec = round(float64(s.tokens.Output)/st.Duration, 3)
		st.TotalTokensPerSec = round(float64(s.tokens.Output+s.tokens.Prompt)/st.Duration, 3)
		st.RequestsPerSec = round(float64(s.req.OK)/st.Duration, 3)
	}
	return st
}

func dist(h *hdrhistogram.Histogram) Dist {
	n := h.TotalCount()
	if n == 0 {
		return Dist{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Dist{
		Count: n,
		Mean:  round(h.Mean()/1000, 3),
		P50:   ms(h.ValueAtQuantile(50)),
		P90:   ms(h.ValueAtQuantile(90)),
		P95:   ms(h.ValueAtQuantile(95)),
		P99:   ms(h.ValueAtQuantile(99)),
		P999:  ms(h.ValueAtQuantile(99.9)),
		Max:   ms(h.Max()),
	}
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}
