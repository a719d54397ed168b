package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/servebench/servebench/internal/stats"
	"github.com/servebench/servebench/report/correlate"
	"github.com/servebench/servebench/results"
)

// Histogram range: 1 µs to 1 hour at 3 significant digits (≤ 0.1 % error).
const (
	histMinUS   = 1
	histMaxUS   = int64(time.Hour / time.Microsecond)
	histSigFigs = 3
)

// scheduleLagWarnMS is the p99 schedule lag above which a stage is flagged:
// the harness, not the server, delayed requests.
const scheduleLagWarnMS = 10

// Aggregate turns records into a Summary. It is the composition of three
// accumulators, each fed every record, and the headers' metadata:
//
//   - stages: per stage, the outcome and error counts, token sums, the
//     span from first send to last end, and one HdrHistogram per latency
//     metric of the metric table (results.Metrics); the overall row is
//     their merge;
//   - log: per stage, the few per-request figures budgets and comparisons
//     need (goodput, rank tests, token-count checks), and the server
//     points of the scrapes (requests.go);
//   - corr: the timeline joining client and server (package correlate).
//
// Its memory grows with the number of requests by 20 bytes each and with
// the run's duration, never with the number of tokens. Adding does not
// depend on the order of records, so files from several machines merge.
// An Aggregate is not safe for concurrent use.
type Aggregate struct {
	metrics results.Table    // the metric table (NewFor)
	latency []results.Metric // the latency metrics, in table order: stageAgg.hist is indexed alike
	stages  map[int]*stageAgg
	// cacheSamples are the scrapes' prefix-cache and KV figures (cache.go).
	cacheSamples []cacheSample
	log          requestLog
	corr         *correlate.Correlator
	names        map[int]string
	meta         Summary
	spec         *results.Spec
	files        int
	ending       int           // headers that promise an End record
	ends         []results.End // End records read
	warnings     []string
	skipped      map[string]int    // records not aggregated, by reason
	writeErr     string            // why the run's results file stopped being written (WriteFailed)
	obs          [][]time.Duration // scratch: one record's observations, per latency metric

	hosts, versions map[string]bool // distinct hosts and server versions of the headers

	shardFiles []shardFile // one per shard header added (shards.go)
	curShard   int         // the shardFiles entry of the latest header; −1 when it is not a shard's
}

// New returns an empty Aggregate of the metric table's figures
// (results.Metrics).
func New() *Aggregate { return NewFor(results.Metrics()) }

// NewFor returns an empty Aggregate of the figures of metric table t:
// every latency metric of t is observed, summarised (Stage.Dist) and may
// be budgeted.
func NewFor(t results.Table) *Aggregate {
	var lat []results.Metric
	for _, m := range t {
		if m.Class == results.Latency {
			lat = append(lat, m)
		}
	}
	return &Aggregate{metrics: t, latency: lat, stages: map[int]*stageAgg{}, log: newRequestLog(t), corr: correlate.New(),
		names: map[int]string{}, curShard: -1}
}

// AddHeader records a results file's header: run metadata and stage names.
// With several files, the first header's metadata is kept and the earliest
// start time wins.
func (a *Aggregate) AddHeader(h *results.Header) {
	if h.Spec == nil && len(h.Scenario) > 0 {
		// A header built by hand rather than read by results.Reader.
		hc := *h
		hc.Spec, _ = results.DecodeSpec(h.Scenario)
		h = &hc
	}
	a.corr.AddHeader(h)
	a.log.header(h)
	a.addShardHeader(h)
	a.files++
	if a.hosts == nil {
		a.hosts, a.versions = map[string]bool{}, map[string]bool{}
	}
	if h.Host != "" {
		a.hosts[h.Host] = true
	}
	if h.ServerVersion != "" {
		a.versions[h.ServerVersion] = true
	}
	if h.Ends {
		a.ending++
	}
	if a.meta.WarmUp == nil && h.WarmUp != nil {
		w := *h.WarmUp
		a.meta.WarmUp = &w
	}
	if a.files == 1 {
		a.meta.Tool, a.meta.Version, a.meta.Target, a.meta.Model = h.Tool, h.Version, h.Target, h.Model
		a.meta.Started = h.Started
		a.meta.Virtual = h.Virtual
	} else if h.Started.Before(a.meta.Started) {
		a.meta.Started = h.Started
	}
	if h.Spec == nil {
		return
	}
	if a.spec == nil {
		a.spec = h.Spec
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

// Scenario returns the resolved scenario of the first header added, as
// JSON, or nil.
func (a *Aggregate) Scenario() []byte { return a.corr.Scenario() }

// Warn attaches a non-fatal problem to the summary.
func (a *Aggregate) Warn(msg string) { a.warnings = append(a.warnings, msg) }

// Limits on what a record may say, so that a damaged or crafted file
// cannot make the aggregate grow without bound (every stage costs its
// histograms, about 1.6 MB).
const (
	maxStages = 1000
	maxOffset = 366 * 24 * time.Hour
)

// check returns why a record cannot be aggregated, or "".
func (a *Aggregate) check(r *results.Result) string {
	switch r.Outcome {
	case results.OK, results.Failed, results.Canceled, results.Dropped:
	default:
		return fmt.Sprintf("an unknown outcome %q", r.Outcome)
	}
	if r.Stage < 0 || r.Stage >= maxStages || (a.spec != nil && r.Stage >= len(a.spec.Load.Stages) && len(a.spec.Load.Stages) > 0) {
		return "a stage the scenario does not have"
	}
	for _, t := range []time.Duration{r.Scheduled, r.Sent, r.Headers, r.FirstToken, r.FirstContent, r.LastToken, r.End} {
		if t < 0 || t > maxOffset {
			return "a time outside the run"
		}
	}
	if n := len(r.ChunkTimes); n > 0 && (r.ChunkTimes[0] < 0 || r.ChunkTimes[n-1] > maxOffset) {
		return "a chunk time outside the run"
	}
	if r.PromptTokens < 0 || r.OutputTokens < 0 || r.ReasoningTokens < 0 || r.CachedTokens < 0 || r.InputTokens < 0 || r.MaxTokens < 0 {
		return "a negative token count"
	}
	return ""
}

// WriteFailed tells a run's aggregate that its results file could not be
// written (a full disk): the run stops, the aggregate gets no more records
// (it sums what the file holds) and its summary says why it is
// incomplete, rather than guessing at a kill from the missing end record.
func (a *Aggregate) WriteFailed(err error) {
	if err != nil && a.writeErr == "" {
		a.writeErr = err.Error()
	}
}

// Add accumulates one request record; r is not retained. Warmup records
// are counted as such, and count on the timeline, but in no statistic. A
// record that cannot be (an unknown outcome, a stage the scenario lacks, a
// time outside the run, a negative token count) is skipped and counted in
// a warning.
func (a *Aggregate) Add(r *results.Result) {
	if why := a.check(r); why != "" {
		if a.skipped == nil {
			a.skipped = map[string]int{}
		}
		a.skipped[why]++
		return
	}
	st, ok := a.stages[r.Stage]
	if !ok {
		st = newStageAgg(len(a.latency))
		a.stages[r.Stage] = st
	}
	// Each latency metric's observations of r, once: the stage's
	// histograms and the per-request log both read them.
	if len(a.obs) != len(a.latency) {
		a.obs = make([][]time.Duration, len(a.latency))
	}
	for i, m := range a.latency {
		a.obs[i] = m.Observe(r, a.obs[i][:0])
	}
	st.add(r, a.obs, a.log.ignoreEOS)
	if !r.Warmup && a.sessionStage(r.Stage) {
		st.addSession(r)
	}
	a.log.add(r, a.latency, a.obs)
	a.corr.AddResult(r)
}

// AddSample accumulates one scrape sample.
func (a *Aggregate) AddSample(s results.Sample) {
	a.corr.AddSample(s)
	a.log.sample(&s)
	a.addCacheSample(&s)
}

// stageAgg accumulates the counts and latency histograms of one stage.
type stageAgg struct {
	req       Requests
	errors    map[string]int64
	messages  map[string][]string       // the first distinct messages of each error class
	hist      []*hdrhistogram.Histogram // one per latency metric
	tokens    Tokens
	first     time.Duration // earliest Sent (or Scheduled) of a counted request
	last      time.Duration // latest End
	haveRange bool

	// What the measured requests received, whatever their outcome: output
	// tokens (a chunk of k tokens counts k), and the prompt tokens of those
	// whose prefill completed. With the warmup requests' share inside the
	// window (from the correlator's bins) and warmEnds, they give the
	// window's rates.
	recvOutput, recvPrompt float64
	warmEnds               []time.Duration        // ends of the warmup requests that completed ok
	warmInputs             []int32                // and the texts each embedded (embeddings), alike
	ended                  map[int64]int64        // prompt tokens of the ok requests by cacheBin of their end, warmup included (cache.go)
	sessions               map[uint64]*sessionAgg // a session stage's measured sessions (sessions.go)

	turns map[int]*turnAgg // conversation turns' TTFT by turn row (turns.go); nil without

	drafts draftTally // per-request speculative decoding (specrequests.go)

	// Tokens per request: usage of the ok requests, and what was asked of
	// every request sent.
	prompt, output, inputAsked, outputAsked counter
}

func newStageAgg(metrics int) *stageAgg {
	s := &stageAgg{errors: map[string]int64{}, messages: map[string][]string{}, hist: make([]*hdrhistogram.Histogram, metrics)}
	for i := range s.hist {
		s.hist[i] = hdrhistogram.New(histMinUS, histMaxUS, histSigFigs)
	}
	return s
}

func record(h *hdrhistogram.Histogram, d time.Duration) {
	us := min(max(int64(d/time.Microsecond), histMinUS), histMaxUS)
	_ = h.RecordValue(us) // cannot fail: us is clamped into range
}

// maxMessages is how many distinct error messages a stage keeps per error
// class, and maxMessageBytes how much of each.
const (
	maxMessages     = 3
	maxMessageBytes = 300
)

// keepMessage records msg among the first distinct messages of class.
func (s *stageAgg) keepMessage(class, msg string) {
	if msg == "" {
		return
	}
	if len(msg) > maxMessageBytes {
		msg = msg[:maxMessageBytes] + "…"
	}
	if ms := s.messages[class]; len(ms) < maxMessages && !slices.Contains(ms, msg) {
		s.messages[class] = append(ms, msg)
	}
}

// add counts r into the stage; obs holds r's observations of each latency
// metric, in the aggregate's order.
func (s *stageAgg) add(r *results.Result, obs [][]time.Duration, ignoreEOS bool) {
	s.addEnded(r)
	if r.Warmup {
		s.req.Warmup++
		if r.Outcome == results.OK {
			s.warmEnds = append(s.warmEnds, r.End)
			s.warmInputs = append(s.warmInputs, int32(r.Inputs))
		}
		return
	}
	s.req.Scheduled++
	s.req.Retried += int64(r.Retries)
	s.req.ResentWritten += int64(r.ResentWritten)
	switch r.Outcome {
	case results.OK:
		s.req.OK++
		s.req.Inputs += int64(r.Inputs)
	case results.Failed:
		s.req.Failed++
		if r.Shed() {
			s.req.Shed++
		}
		s.errors[string(r.ErrorClass)]++
		s.keepMessage(string(r.ErrorClass), r.Error)
	case results.Canceled:
		s.req.Canceled++
	case results.Dropped:
		s.req.Dropped++
		return
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
	s.recvOutput, s.recvPrompt = s.recvOutput+received(r), s.recvPrompt+prefilled(r)
	if r.InputTokens > 0 {
		s.inputAsked.add(int64(r.InputTokens))
	}
	if r.MaxTokens > 0 {
		s.outputAsked.add(int64(r.MaxTokens))
	}
	if r.Outcome == results.OK {
		s.prompt.add(int64(r.PromptTokens))
		s.output.add(int64(r.OutputTokens))
		// A response shorter than asked for, when the server was told to
		// ignore EOS or said it stopped at a length: it hit its context
		// limit and ended with HTTP 200 all the same.
		if !r.Estimated && r.MaxTokens > 0 && r.OutputTokens < r.MaxTokens && (ignoreEOS || r.FinishReason == "length") {
			s.req.Truncated++
		}
		s.tokens.Prompt += int64(r.PromptTokens)
		s.tokens.Output += int64(r.OutputTokens)
		s.tokens.Cached += int64(r.CachedTokens)
		s.drafts.add(r)
		if r.Estimated {
			s.tokens.EstimatedRequests++
		}
		if want, got, ok := r.PromptCounts(); ok {
			s.tokens.PromptCompared++
			s.tokens.PromptDiff += int64(got - want)
			if math.Abs(float64(got-want)) > PromptTolerance*float64(want) {
				s.tokens.PromptMismatched++
			}
		}
	}
	s.addTurn(r)
	// Every latency metric defines itself for ok requests only, except the
	// schedule lag, which every sent request has.
	for i, o := range obs {
		recordAll(s.hist[i], o)
	}
}

// recordAll records ds into h, a run of equal values (in h's unit, µs) at
// once: a fast stream's chunks come in bursts whose gaps are all 0 µs.
func recordAll(h *hdrhistogram.Histogram, ds []time.Duration) {
	for j := 0; j < len(ds); {
		us := min(max(int64(ds[j]/time.Microsecond), histMinUS), histMaxUS)
		k := j + 1
		for k < len(ds) && min(max(int64(ds[k]/time.Microsecond), histMinUS), histMaxUS) == us {
			k++
		}
		_ = h.RecordValues(us, int64(k-j)) // cannot fail: us is clamped into range
		j = k
	}
}

// merge adds o into s.
func (s *stageAgg) merge(o *stageAgg) {
	for bin, n := range o.ended {
		if s.ended == nil {
			s.ended = map[int64]int64{}
		}
		s.ended[bin] += n
	}
	s.req.Scheduled += o.req.Scheduled
	s.req.OK += o.req.OK
	s.req.Failed += o.req.Failed
	s.req.Shed += o.req.Shed
	s.req.Canceled += o.req.Canceled
	s.req.Dropped += o.req.Dropped
	s.req.Warmup += o.req.Warmup
	s.req.Retried += o.req.Retried
	s.req.ResentWritten += o.req.ResentWritten
	s.req.Inputs += o.req.Inputs
	for k, v := range o.errors {
		s.errors[k] += v
	}
	for _, k := range slices.Sorted(maps.Keys(o.messages)) {
		for _, m := range o.messages[k] {
			s.keepMessage(k, m)
		}
	}
	s.req.Truncated += o.req.Truncated
	s.mergeTurns(o)
	s.mergeSessions(o)
	for i, h := range o.hist {
		s.hist[i].Merge(h)
	}
	s.recvOutput += o.recvOutput
	s.recvPrompt += o.recvPrompt
	s.warmEnds = append(s.warmEnds, o.warmEnds...)
	s.warmInputs = append(s.warmInputs, o.warmInputs...)
	s.tokens.Cached += o.tokens.Cached
	s.drafts.merge(&o.drafts)
	s.tokens.Prompt += o.tokens.Prompt
	s.tokens.Output += o.tokens.Output
	s.tokens.EstimatedRequests += o.tokens.EstimatedRequests
	s.tokens.PromptCompared += o.tokens.PromptCompared
	s.tokens.PromptMismatched += o.tokens.PromptMismatched
	s.tokens.PromptDiff += o.tokens.PromptDiff
	s.prompt.merge(&o.prompt)
	s.output.merge(&o.output)
	s.inputAsked.merge(&o.inputAsked)
	s.outputAsked.merge(&o.outputAsked)
	if o.haveRange {
		if !s.haveRange || o.first < s.first {
			s.first = o.first
		}
		if !s.haveRange || o.last > s.last {
			s.last = o.last
		}
		s.haveRange = true
	}
}

// overall merges every stage.
func (a *Aggregate) overall() *stageAgg {
	out := newStageAgg(len(a.latency))
	for _, i := range slices.Sorted(maps.Keys(a.stages)) {
		out.merge(a.stages[i])
	}
	return out
}

// Summary computes the summary of everything added so far.
func (a *Aggregate) Summary() *Summary {
	out := a.meta
	out.Schema = SummarySchema
	if out.Tool == "" {
		out.Tool = "servebench"
	}
	out.Files = a.files
	overall := a.overall()
	out.Overall = a.stageSummary(overall, -1, "overall")
	idx := slices.Sorted(maps.Keys(a.stages))
	out.Stages = make([]Stage, 0, len(idx))
	for _, i := range idx {
		out.Stages = append(out.Stages, a.stageSummary(a.stages[i], i, a.stageName(i)))
		// The whole run's peak counts its seconds from each stage's start
		// too: seconds counted from the run's start alone can straddle a
		// stage's busiest second and report less than the stage does.
		if s := a.stages[i]; s.haveRange {
			peak, _ := a.corr.Peaks(-1, s.first, s.last)
			out.Overall.PeakOutputTokensPerSec = max(out.Overall.PeakOutputTokensPerSec, peak)
		}
	}
	a.rateIntervals(&out)
	out.Host = joinSet(a.hosts)
	out.ServerVersion = joinSet(a.versions)
	if from, to, ok := a.corr.Span(); ok && to > from {
		out.DurationS = round((to - from).Seconds(), 3)
	}
	out.Workload = workload(a.spec)
	out.Correlation = a.corr.Correlation(a.names)
	out.PrefixCache = a.prefixCache()
	out.Warnings = append([]string(nil), a.warnings...)
	for _, why := range slices.Sorted(maps.Keys(a.skipped)) {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d request records were skipped: they have %s (a damaged or foreign results file?)", a.skipped[why], why))
	}
	if w := out.WarmUp; w != nil && w.Opened < w.Wanted {
		out.Warnings = append(out.Warnings, w.String())
	}
	out.Harness = a.harness()
	if h := out.Harness; h != nil && h.Limited {
		out.Warnings = append(out.Warnings, "LIMITED BY THE CLIENT: "+h.Reason+"; "+LimitedAdvice)
	}
	explain(out.Correlation, out.Harness, out.Stages, out.Workload)
	out.Comparability = comparability(&out)
	out.Incomplete = a.incomplete()
	for _, e := range a.ends {
		out.Until = append(out.Until, e.Until...)
	}
	if out.Incomplete != "" {
		out.Warnings = append(out.Warnings, "the run did not complete ("+out.Incomplete+"): the figures cover part of the load")
	}
	var shardWarnings []string
	out.Shards, shardWarnings = a.shardSummary()
	out.Warnings = append(out.Warnings, shardWarnings...)
	a.summaryWarnings(&out, overall)
	return &out
}

// summaryWarnings adds the warnings drawn from the finished summary: the
// schedule's lag, truncated and resent requests, estimated token counts,
// mismatched prompts and speculative-decoding chunks.
func (a *Aggregate) summaryWarnings(out *Summary, overall *stageAgg) {
	for _, st := range out.Stages {
		if lag := st.ScheduleLag; lag.Count > 0 && lag.P99 > scheduleLagWarnMS {
			out.Warnings = append(out.Warnings, fmt.Sprintf(
				"stage %s: requests left up to %.1f ms (p99) after their scheduled time: the load generator fell behind its schedule",
				st.Name, lag.P99))
		} else if lag := st.WireLag; lag.Count > 0 && lag.P99 > scheduleLagWarnMS {
			from := "TTFT" // E2E for embeddings, which have no first token
			if st.Requests.Inputs > 0 {
				from = "E2E"
			}
			out.Warnings = append(out.Warnings, fmt.Sprintf(
				"stage %s: requests reached the wire up to %.1f ms (p99) after their scheduled time (waiting for a connection or the CPU): %s from the schedule includes it",
				st.Name, lag.P99, from))
		}
	}
	if n := overall.req.Truncated; n > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf(
			"%d of %s returned fewer output tokens than max_tokens with HTTP 200 (finish_reason \"length\" or ignore_eos set): "+
				"the server stopped them at its context limit; their latencies and throughput describe shorter responses than asked for",
			n, FormatCount(overall.req.OK, "completed request", "completed requests")))
	}
	if n, w := overall.req.Retried, overall.req.ResentWritten; n > 0 && w == 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf(
			"%s sent again on a fresh connection: the server closed kept-alive connections after a response "+
				"(as llama.cpp's server does) before the first send was written whole, so none was processed twice; "+
				"their TTFT includes the new connection", FormatCount(n, "request was", "requests were")))
	} else if n > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf(
			"%s sent again on a fresh connection after the server closed a kept-alive one before any response byte; "+
				"%d of the earlier sends had been written whole, so the server may have processed them too: up to %s "+
				"work that no record counts (duplicate load; a server that closes connections while it works on a request)",
			FormatCount(n, "request was", "requests were"), w, FormatCount(w, "request's", "requests'")))
	}
	if n := overall.tokens.EstimatedRequests; n > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf(
			"%s no usage from the server: their token counts are local estimates", FormatCount(n, "request had", "requests had")))
	}
	if w := a.promptWarning(&overall.tokens); w != "" {
		out.Warnings = append(out.Warnings, w)
	}
	if w := a.specChunkWarning(&out.Overall); w != "" {
		out.Warnings = append(out.Warnings, w)
	}
}

// promptWarning says, when more than PromptMismatchShare of the compared
// requests had a prompt the server counted more than PromptTolerance away
// from the intended length, by how much and what to do; "" otherwise.
func (a *Aggregate) promptWarning(t *Tokens) string {
	if t.PromptCompared == 0 || float64(t.PromptMismatched) <= PromptMismatchShare*float64(t.PromptCompared) {
		return ""
	}
	tok := ""
	if a.spec != nil {
		tok = a.spec.Prompts.Tokenizer
	}
	msg := fmt.Sprintf("prompt lengths: the server's usage.prompt_tokens differs from the intended count by more than %g %% for %d of %s "+
		"(%+.1f tokens per request on average): ", 100*PromptTolerance, t.PromptMismatched, FormatCount(t.PromptCompared, "request", "requests"), float64(t.PromptDiff)/float64(t.PromptCompared))
	switch {
	case tok == "server":
		return msg + "the server counts generation requests otherwise than its /tokenize endpoint (a chat template applied differently?)"
	case strings.HasSuffix(strings.ToLower(tok), ".json"):
		return msg + "the server counts otherwise than " + tok + " (another model's tokenizer, or a chat template the run cannot see); prompts.tokenizer: server measures it"
	case tok != "":
		return msg + "the prompts were counted with " + tok + ", not the model's tokenizer: name the model's tokenizer.json in prompts.tokenizer, or write server"
	}
	return msg + "the prompts were not counted with the model's tokenizer"
}

// LimitedAdvice is what a run limited by its client should do next.
const LimitedAdvice = "client-side delays inflate TTFT and ITL: send fewer streams per machine (bench selftest shows this machine's ceiling) or split the load (bench run --shard)"

// harness merges the harness figures of the files' end records: limited
// when any was, the worst of each figure.
func (a *Aggregate) harness() *results.Harness {
	var out *results.Harness
	for _, e := range a.ends {
		h := e.Harness
		if h == nil {
			continue
		}
		if out == nil {
			c := *h
			out = &c
			continue
		}
		if h.Limited {
			out.Reason = strings.TrimPrefix(out.Reason+"; "+h.Reason, "; ")
		}
		out.Limited = out.Limited || h.Limited
		out.Cores = max(out.Cores, h.Cores)
		out.CPUShare = max(out.CPUShare, h.CPUShare)
		out.SimulatorInProcess = out.SimulatorInProcess || h.SimulatorInProcess
		out.LatenessP50MS, out.LatenessP99MS = max(out.LatenessP50MS, h.LatenessP50MS), max(out.LatenessP99MS, h.LatenessP99MS)
		out.LatenessMaxMS, out.GCPauseMS = max(out.LatenessMaxMS, h.LatenessMaxMS), max(out.GCPauseMS, h.GCPauseMS)
		out.GCCycles, out.BlockedMS = max(out.GCCycles, h.GCCycles), max(out.BlockedMS, h.BlockedMS)
		out.OtherCores = max(out.OtherCores, h.OtherCores)
		out.ReaderBusyShare, out.FullReadShare = max(out.ReaderBusyShare, h.ReaderBusyShare), max(out.FullReadShare, h.FullReadShare)
	}
	return out
}

// incomplete says why the run (or one of the files) did not complete, or
// "" when every file that promises an end record ended completed.
func (a *Aggregate) incomplete() string {
	var why []string
	for _, e := range a.ends {
		if !e.Completed && !slices.Contains(why, e.Reason) {
			why = append(why, e.Reason)
		}
	}
	switch {
	case a.writeErr != "":
		why = append(why, "the results file could not be written ("+a.writeErr+"): the records after it are in neither the file nor the figures")
	case len(a.ends) < a.ending:
		why = append(why, "a results file has no end record: the run was killed, or its disk filled, before it finished")
	}
	return strings.Join(why, "; ")
}

// stageName returns stage i's name, or "stage-i" when no header names it.
func (a *Aggregate) stageName(i int) string {
	if name := a.names[i]; name != "" {
		return name
	}
	return fmt.Sprintf("stage-%d", i)
}

// stageSummary summarises stage index (−1: the whole run, s the merge of
// the stages).
//
// The rates are over the measured window, from the first send of a
// measured (not warmup) request to the last end of one (Duration), and
// count everything the window holds, as the server's counters do: output
// tokens received by every request of the stage (the warmup requests still
// streaming in the window included, and failed ones), prompt tokens of the
// requests whose prefill completed in it, and the requests that completed
// ok in it. Counting only the measured requests' tokens over that window
// reads low whenever warmup requests overlap it.
func (a *Aggregate) stageSummary(s *stageAgg, index int, name string) Stage {
	st := Stage{Index: index, Name: name, Requests: s.req, Errors: s.errors, Tokens: s.tokens}
	st.Tokens.PromptPerRequest, st.Tokens.OutputPerRequest = s.prompt.counts(), s.output.counts()
	st.Tokens.InputRequested, st.Tokens.OutputRequested = s.inputAsked.counts(), s.outputAsked.counts()
	if len(s.messages) > 0 {
		st.ErrorMessages = s.messages
	}
	if s.haveRange && s.last > s.first {
		st.Duration = round(s.last.Seconds()-s.first.Seconds(), 6)
	}
	for i, m := range a.latency {
		st.setDist(m.Name, dist(s.hist[i]))
	}
	st.TTFTByTurn = s.turnRows()
	if s.sessions != nil {
		var slo *results.SLO
		if a.spec != nil {
			slo = a.spec.SLO
		}
		st.Sessions = s.sessionSummary(st.Duration, slo)
	}
	var w window
	if st.Duration > 0 {
		warmOut, warmPrompt := a.corr.WarmupReceived(index, s.first, s.last)
		completed, inputs := s.req.OK, s.req.Inputs
		for i, end := range s.warmEnds {
			if end > s.first && end <= s.last {
				completed++
				inputs += int64(s.warmInputs[i])
			}
		}
		st.InputsPerSec = round(float64(inputs)/st.Duration, 3)
		out := s.recvOutput + warmOut
		st.OutputTokensPerSec = round(out/st.Duration, 3)
		st.TotalTokensPerSec = round((out+s.recvPrompt+warmPrompt)/st.Duration, 3)
		st.RequestsPerSec = round(float64(completed)/st.Duration, 3)
		w = window{output: out, prompt: s.recvPrompt + warmPrompt, requests: float64(completed)}
	}
	if s.haveRange {
		st.PeakOutputTokensPerSec, st.PeakInFlight = a.corr.Peaks(index, s.first, s.last)
		w.from, w.to, w.drafts = s.first, s.last, &s.drafts
		st.Efficiency = a.efficiency(&st, w)
	}
	return st
}

// rateIntervals sets each stage's OutputTokensPerSecCI, and the whole
// run's, from one computation of the timeline; outward rounding to three
// decimals keeps the figure inside its interval.
func (a *Aggregate) rateIntervals(s *Summary) {
	windows := a.Windows()
	set := func(st *Stage) {
		if lo, hi, ok := rateInterval(windows, st, ciLevel); ok && lo <= st.OutputTokensPerSec && st.OutputTokensPerSec <= hi {
			st.OutputTokensPerSecCI = &[2]float64{math.Floor(lo*1000) / 1000, math.Ceil(hi*1000) / 1000}
		}
	}
	set(&s.Overall)
	for i := range s.Stages {
		set(&s.Stages[i])
	}
}

// received is the number of output tokens r received: the tokens of its
// chunks, or, for a whole response, its output tokens when it completed.
func received(r *results.Result) float64 {
	if len(r.ChunkTimes) == 0 {
		if r.Outcome == results.OK {
			return float64(r.OutputTokens)
		}
		return 0
	}
	if len(r.ChunkTokens) != len(r.ChunkTimes) {
		// ChunkTokensAt spreads OutputTokens over the chunks (one each
		// when the server said none): they sum to it.
		if r.OutputTokens > 0 {
			return float64(r.OutputTokens)
		}
		return float64(len(r.ChunkTimes))
	}
	n := 0
	for _, k := range r.ChunkTokens {
		n += int(k)
	}
	return float64(n)
}

// prefilled is r's prompt length (from usage, else as intended) when its
// prefill completed: a first token arrived, or a whole response completed.
func prefilled(r *results.Result) float64 {
	if len(r.ChunkTimes) == 0 && r.Outcome != results.OK {
		return 0
	}
	if r.PromptTokens > 0 {
		return float64(r.PromptTokens)
	}
	return float64(r.InputTokens)
}

// Histogram returns the HdrHistogram, in microseconds, of a latency metric
// over stage i, or over the whole run for i = −1; nil when there is no
// such stage or metric. The caller must not modify it.
func (a *Aggregate) Histogram(i int, metric string) *hdrhistogram.Histogram {
	s := a.stages[i]
	if i == -1 {
		s = a.overall()
	}
	if s == nil {
		return nil
	}
	for k, m := range a.latency {
		if m.Name == metric {
			return s.hist[k]
		}
	}
	return nil
}

// StageIndexes returns the indexes of the stages that have records, in
// order.
func (a *Aggregate) StageIndexes() []int { return slices.Sorted(maps.Keys(a.stages)) }

// Windows returns the correlation timeline (see correlate.Correlator).
func (a *Aggregate) Windows() []correlate.Window { return a.corr.Windows() }

// GPUSeries returns each GPU's power and utilisation over the run (see
// correlate.Correlator.GPUSeries); nil without GPU telemetry.
func (a *Aggregate) GPUSeries() []correlate.GPUSeries { return a.corr.GPUSeries() }

func dist(h *hdrhistogram.Histogram) Dist {
	n := h.TotalCount()
	if n == 0 {
		return Dist{}
	}
	ms := func(us float64) float64 { return round(us/1000, 4) }
	d := Dist{
		Count: n,
		Mean:  round(h.Mean()/1000, 3),
		Std:   round(h.StdDev()/1000, 3),
		P50:   ms(quantile(h, 50)),
		P90:   ms(quantile(h, 90)),
		P95:   ms(quantile(h, 95)),
		P99:   ms(quantile(h, 99)),
		P999:  ms(quantile(h, 99.9)),
		Max:   ms(quantile(h, 100)),
	}
	for _, p := range []struct {
		stat string
		q    float64
	}{{"p50", 0.5}, {"p90", 0.9}, {"p95", 0.95}, {"p99", 0.99}, {"p99_9", 0.999}} {
		lo, hi, ok := stats.QuantileRanks(int(n), p.q, ciLevel)
		if !ok {
			continue
		}
		if d.CI == nil {
			d.CI = map[string][2]float64{}
		}
		d.CI[p.stat] = [2]float64{ms(quantile(h, 100*float64(lo)/float64(n))), ms(quantile(h, 100*float64(hi)/float64(n)))}
	}
	if n >= 2 {
		half := stats.TQuantile(1-(1-ciLevel)/2, float64(n-1)) * h.StdDev() / 1000 * math.Sqrt(float64(n)/float64(n-1)) / math.Sqrt(float64(n))
		if d.CI == nil {
			d.CI = map[string][2]float64{}
		}
		d.CI["mean"] = [2]float64{round(d.Mean-half, 3), round(d.Mean+half, 3)}
	}
	return d
}

// ciLevel is the confidence of every interval a summary gives.
const ciLevel = 0.95

// quantile is the q-th percentile of h (in its unit, µs) at the midpoint
// of the bucket that holds it. HdrHistogram reports the bucket's highest
// equivalent value, which overstates every percentile by up to a bucket's
// width (0.1 % at 3 significant figures: +0.5 ms at 1 s); the midpoint is
// off by at most half of that either way.
func quantile(h *hdrhistogram.Histogram, q float64) float64 {
	hi := h.ValueAtQuantile(q)
	// Buckets are aligned powers of two wide: double the width while the
	// value width*2 below the top is still in the same bucket.
	width := int64(1)
	for hi-2*width+1 >= 0 && h.ValuesAreEquivalent(hi-2*width+1, hi) {
		width *= 2
	}
	return float64(hi) - float64(width-1)/2
}

// joinSet lists a set's members in order, comma-separated: at most five,
// then how many more.
func joinSet(set map[string]bool) string {
	keys := slices.Sorted(maps.Keys(set))
	if len(keys) > 5 {
		return fmt.Sprintf("%s and %d more", strings.Join(keys[:5], ", "), len(keys)-5)
	}
	return strings.Join(keys, ", ")
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

// quantileBounds are the one-sided distribution-free bounds of the
// q-quantile of h at (1+conf)/2 each (together a conf interval), in
// milliseconds; either may be missing with too few samples.
func quantileBounds(h *hdrhistogram.Histogram, q, conf float64) (lo, hi float64, loOK, hiOK bool) {
	n := h.TotalCount()
	if n == 0 {
		return 0, 0, false, false
	}
	tail := (1 + conf) / 2
	at := func(rank int) float64 { return round(quantile(h, 100*float64(rank)/float64(n))/1000, 4) }
	if r, ok := stats.QuantileBound(int(n), q, tail, false); ok {
		lo, loOK = at(r), true
	}
	if r, ok := stats.QuantileBound(int(n), q, tail, true); ok {
		hi, hiOK = at(r), true
	}
	return lo, hi, loOK, hiOK
}

// StatInterval is the conf interval of a latency statistic ("p50" …
// "p99_9", "mean") of stage i (−1: the whole run), in milliseconds: the
// distribution-free interval of a percentile from the histogram, the
// Student-t interval of the mean. ok is false with too few samples, or for
// the max.
func (a *Aggregate) StatInterval(i int, metric, stat string, conf float64) (lo, hi float64, ok bool) {
	h := a.Histogram(i, metric)
	if h == nil || h.TotalCount() < 2 {
		return 0, 0, false
	}
	if q, isQ := results.Quantile(stat); isQ {
		lo, hi, loOK, hiOK := quantileBounds(h, q, conf)
		return lo, hi, loOK && hiOK
	}
	if stat != "mean" {
		return 0, 0, false
	}
	n := float64(h.TotalCount())
	mean, sd := h.Mean()/1000, h.StdDev()/1000*math.Sqrt(n/(n-1))
	half := stats.TQuantile(1-(1-conf)/2, n-1) * sd / math.Sqrt(n)
	return mean - half, mean + half, true
}

// RateInterval is the conf interval of a stage's output tokens per second
// by batch means: the stage's full scrape windows as batches, a Student-t
// interval over their rates, scaled to the stage's own figure (the windows
// cover the load, not the stage's whole span). None with fewer than five
// windows.
func (a *Aggregate) RateInterval(st *Stage, conf float64) (lo, hi float64, ok bool) {
	return rateInterval(a.Windows(), st, conf)
}

// rateInterval is RateInterval over windows, the aggregate's timeline.
func rateInterval(windows []correlate.Window, st *Stage, conf float64) (lo, hi float64, ok bool) {
	var rates []float64
	for _, w := range windows {
		if w.Full && (st.Index < 0 || w.Stage == st.Index) && w.To > w.From {
			rates = append(rates, w.OutputTokensPerSec)
		}
	}
	if len(rates) < 5 {
		return 0, 0, false
	}
	iv := stats.Mean(rates, conf)
	if !iv.OK || iv.Estimate <= 0 {
		return 0, 0, false
	}
	scale := st.OutputTokensPerSec / iv.Estimate
	return iv.Lo * scale, iv.Hi * scale, true
}
