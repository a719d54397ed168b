package report

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/servebench/servebench/results"
)

// CSVColumns are the columns of the per-request CSV (WriteCSV), in order.
// Columns may be added at the end; none changes meaning or moves.
var CSVColumns = []string{
	"host", "seq", "stage", "stage_name", "warmup", "outcome", "error_class", "status",
	"scheduled_s", "sent_s", "sent_utc",
	"ttft_ms", "ttfc_ms", "tpot_ms", "itl_mean_ms", "itl_max_ms", "e2e_ms", "schedule_lag_ms",
	"input_tokens_asked", "max_tokens", "prompt_tokens", "output_tokens", "reasoning_tokens", "cached_tokens",
	"tokens_estimated", "finish_reason", "chunks", "retries", "error", "resent_written",
}

// CSVColumnsFor returns the columns of the per-request CSV for metric
// table t: CSVColumns, then one per latency metric of t that has no
// column there (csvExtra), named by the metric, in table order. With
// results.Metrics it is CSVColumns: the CSV's columns are as they were,
// and a latency metric added to the table gets its column at the end.
func CSVColumnsFor(t results.Table) []string {
	cols := slices.Clone(CSVColumns)
	for _, m := range csvExtra(t) {
		cols = append(cols, m.Name)
	}
	return cols
}

// csvExtra returns the latency metrics of t that get a column after
// CSVColumns: each holds the mean of the request's observations of the
// metric (its one value for most), in milliseconds, empty when it has
// none. Left out are the metrics CSVColumns covers (itl_ms is itl_mean_ms
// and itl_max_ms) and those the table had when the CSV began to take
// its tail from it and that had no column then (csvLeftOut).
func csvExtra(t results.Table) []results.Metric {
	var out []results.Metric
	for _, m := range t {
		if m.Observe != nil && !slices.Contains(CSVColumns, m.Name) && !csvLeftOut(m.Name) {
			out = append(out, m)
		}
	}
	return out
}

// csvLeftOut reports whether a latency metric of the table stays out of
// the CSV's tail. The per-request figures of TTFT and E2E from the
// scheduled time are sent_s − scheduled_s plus ttft_ms or e2e_ms, and
// the per-chunk gaps are a distribution per request (chunks counts them);
// wire_lag_ms had no column when the tail was derived, and adding one
// would change every CSV written since. This list is closed: a metric
// added to the table gets its column.
func csvLeftOut(name string) bool {
	switch name {
	case "itl_ms", "itl_chunk_ms", "ttft_from_schedule_ms", "e2e_from_schedule_ms", "wire_lag_ms":
		return true
	}
	return false
}

// WriteCSV writes one CSV row per request record of the results files
// (or run directories) at paths, under a header row of CSVColumns: every
// scheduled request, dropped and failed ones and warmup included, in the
// files' order. Times are seconds from the (earliest) file's start, and
// sent_utc the wall-clock time; latencies are in milliseconds, empty
// where undefined (a failed request has no TTFT). It streams: a record
// is written as it is read and not kept. A sharded run's shards may be
// given in any order; each row names its host. The readers' warnings (a
// cut-off last line, records no run writes) are returned, for stderr:
// never in the CSV. Files of different scenarios are refused unless
// rd.Mixed, as by FromFiles.
func (rd Reader) WriteCSV(w io.Writer, paths ...string) (warnings []error, err error) {
	files, err := results.OpenFiles(paths...)
	if err != nil {
		return nil, fmt.Errorf("write CSV: %w", err)
	}
	if err := results.SameScenario(files.Paths(), files.Headers()); err != nil && !rd.Mixed {
		return nil, fmt.Errorf("write CSV: %w", err)
	}
	check := newRecordCheck(files.Paths(), files.Headers())
	warn := func() []error {
		out := append([]error(nil), files.Warnings()...)
		for _, w := range check.warnings() {
			out = append(out, errors.New(w))
		}
		return out
	}
	cw := csv.NewWriter(w)
	cols, extra := CSVColumnsFor(rd.table()), csvExtra(rd.table())
	if err := cw.Write(cols); err != nil {
		return nil, fmt.Errorf("write CSV: %w", err)
	}
	specs := make([]*results.Spec, len(files.Headers()))
	for i, h := range files.Headers() {
		specs[i] = h.Spec
	}
	row := make([]string, len(cols))
	var buf []time.Duration
	for rec, err := range files.All() {
		if err != nil {
			return warn(), fmt.Errorf("write CSV: %w", err)
		}
		check.add(rec)
		r := rec.Result
		if r == nil {
			continue
		}
		h := files.Headers()[rec.File]
		buf = csvRow(row, r, h.Host, specs[rec.File].StageName(r.Stage), files.Epoch(), buf)
		buf = csvTail(row[len(CSVColumns):], r, extra, buf)
		if err := cw.Write(row); err != nil {
			return warn(), fmt.Errorf("write CSV: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return warn(), fmt.Errorf("write CSV: %w", err)
	}
	return warn(), nil
}

// csvRow fills row with r's columns; buf is scratch space, returned for
// reuse.
func csvRow(row []string, r *results.Result, host, stage string, epoch time.Time, buf []time.Duration) []time.Duration {
	ms := func(d time.Duration, ok bool) string {
		if !ok {
			return ""
		}
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
	}
	at := func(d time.Duration) string {
		if d == 0 {
			return ""
		}
		return strconv.FormatFloat(d.Seconds(), 'f', 6, 64)
	}
	count := func(n int) string {
		if n == 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	var itlMean, itlMax string
	buf = r.AppendITLs(buf[:0])
	if len(buf) > 0 {
		var sum, top time.Duration
		for _, d := range buf {
			sum += d
			top = max(top, d)
		}
		itlMean, itlMax = ms(sum/time.Duration(len(buf)), true), ms(top, true)
	}
	sentUTC := ""
	if r.Sent != 0 {
		sentUTC = epoch.Add(r.Sent).UTC().Format(time.RFC3339Nano)
	}
	status := ""
	if r.Status != 0 {
		status = strconv.Itoa(r.Status)
	}
	vals := []string{
		host, strconv.FormatUint(r.Seq, 10), strconv.Itoa(r.Stage), stage, strconv.FormatBool(r.Warmup),
		string(r.Outcome), string(r.ErrorClass), status,
		strconv.FormatFloat(r.Scheduled.Seconds(), 'f', 6, 64), at(r.Sent), sentUTC,
		ms(r.TTFT()), ms(r.TTFC()), ms(r.TPOT()), itlMean, itlMax, ms(r.E2E()), ms(r.ScheduleLag()),
		count(r.InputTokens), count(r.MaxTokens), strconv.Itoa(r.PromptTokens), strconv.Itoa(r.OutputTokens),
		count(r.ReasoningTokens), count(r.CachedTokens),
		strconv.FormatBool(r.Estimated), r.FinishReason, strconv.Itoa(len(r.ChunkTimes)), count(r.Retries), r.Error,
		count(r.ResentWritten),
	}
	copy(row, vals)
	return buf
}

// csvTail fills row with r's columns of the metrics extra (csvExtra); buf
// is scratch space, returned for reuse.
func csvTail(row []string, r *results.Result, extra []results.Metric, buf []time.Duration) []time.Duration {
	for i, m := range extra {
		buf = m.Observe(r, buf[:0])
		row[i] = ""
		if len(buf) > 0 {
			var sum time.Duration
			for _, d := range buf {
				sum += d
			}
			row[i] = strconv.FormatFloat(float64(sum/time.Duration(len(buf)))/float64(time.Millisecond), 'f', 3, 64)
		}
	}
	return buf
}

// VLLMResult is one stage of a summary in the shape of the JSON file
// `vllm bench serve --save-result` writes (vllm/benchmarks/serve.py:
// the setup keys main() writes, then the result of benchmark()), so that
// scripts and dashboards built on that file read servebench's figures.
// The latency keys are those of the default --percentile-metrics
// (ttft, tpot, itl) plus e2el, with --metric-percentiles 90,99. ITL is
// per chunk, as vLLM measures it (servebench's itl_chunk_ms); TPOT, E2EL
// and TTFT are servebench's figures of the same definition. Percentiles
// come from HdrHistograms (3 significant digits), not numpy's
// interpolation. The per-request lists (--save-detailed) are left out; the
// servebench_* keys are extra, as `vllm bench serve --metadata KEY=VALUE`
// adds them.
type VLLMResult struct {
	Date         string `json:"date"` // the run's start, UTC, as YYYYMMDD-HHMMSS
	EndpointType string `json:"endpoint_type"`
	Backend      string `json:"backend"` // openai-chat or openai (completions)
	Label        string `json:"label"`
	ModelID      string `json:"model_id"`
	TokenizerID  string `json:"tokenizer_id"`
	NumPrompts   int64  `json:"num_prompts"` // requests scheduled
	// RequestRate is the open loop's arrival rate, or "inf" for a closed
	// loop (vLLM's unpaced requests, bounded by MaxConcurrency).
	RequestRate    any      `json:"request_rate"`
	Burstiness     *float64 `json:"burstiness"` // 1 for Poisson arrivals, the gamma shape, null for evenly spaced ones
	MaxConcurrency *int     `json:"max_concurrency"`

	Duration             float64  `json:"duration"` // seconds
	Completed            int64    `json:"completed"`
	Failed               int64    `json:"failed"` // failed and canceled
	TotalInputTokens     int64    `json:"total_input_tokens"`
	TotalOutputTokens    int64    `json:"total_output_tokens"`
	RequestThroughput    float64  `json:"request_throughput"`
	RequestGoodput       *float64 `json:"request_goodput"` // null, as vLLM writes it without --goodput
	OutputThroughput     float64  `json:"output_throughput"`
	TotalTokenThroughput float64  `json:"total_token_throughput"`
	MaxOutputTokensPerS  float64  `json:"max_output_tokens_per_s"`
	MaxConcurrentReqs    int      `json:"max_concurrent_requests"`
	RTFx                 float64  `json:"rtfx"`

	MeanTTFTMS   float64 `json:"mean_ttft_ms"`
	MedianTTFTMS float64 `json:"median_ttft_ms"`
	StdTTFTMS    float64 `json:"std_ttft_ms"`
	P90TTFTMS    float64 `json:"p90_ttft_ms"`
	P99TTFTMS    float64 `json:"p99_ttft_ms"`
	MeanTPOTMS   float64 `json:"mean_tpot_ms"`
	MedianTPOTMS float64 `json:"median_tpot_ms"`
	StdTPOTMS    float64 `json:"std_tpot_ms"`
	P90TPOTMS    float64 `json:"p90_tpot_ms"`
	P99TPOTMS    float64 `json:"p99_tpot_ms"`
	MeanITLMS    float64 `json:"mean_itl_ms"`
	MedianITLMS  float64 `json:"median_itl_ms"`
	StdITLMS     float64 `json:"std_itl_ms"`
	P90ITLMS     float64 `json:"p90_itl_ms"`
	P99ITLMS     float64 `json:"p99_itl_ms"`
	MeanE2ELMS   float64 `json:"mean_e2el_ms"`
	MedianE2ELMS float64 `json:"median_e2el_ms"`
	StdE2ELMS    float64 `json:"std_e2el_ms"`
	P90E2ELMS    float64 `json:"p90_e2el_ms"`
	P99E2ELMS    float64 `json:"p99_e2el_ms"`

	// ServebenchDropped counts the arrivals dropped at the cap, never
	// sent (vLLM's client never drops); ServebenchAccounting states
	// completed + failed + dropped = num_prompts.
	ServebenchDropped    int64  `json:"servebench_dropped"`
	ServebenchAccounting string `json:"servebench_accounting"`
	// ServebenchITL says what the itl keys measure: per chunk, as vLLM.
	ServebenchITL      string `json:"servebench_itl"`
	ServebenchVersion  string `json:"servebench_version"`
	ServebenchScenario string `json:"servebench_scenario"`
	ServebenchStage    string `json:"servebench_stage"`
	ServerVersion      string `json:"servebench_server_version,omitempty"`
}

// VLLM returns the summary's stages as vLLM results, one per stage.
func (s *Summary) VLLM() []VLLMResult {
	out := make([]VLLMResult, 0, len(s.Stages))
	for _, st := range s.Stages {
		backend := "openai"
		tokenizer := s.Model
		if w := s.Workload; w != nil && w.Tokenizer != "" {
			tokenizer = w.Tokenizer // what counted the prompts, not the model's name
		}
		var load StageLoad
		if w := s.Workload; w != nil {
			if w.API == results.APIChat {
				backend = "openai-chat"
			}
			if st.Index < len(w.Stages) {
				load = w.Stages[st.Index]
			}
		}
		v := VLLMResult{
			Date: s.Started.UTC().Format("20060102-150405"), EndpointType: backend, Backend: backend,
			Label: "servebench " + s.Scenario + "/" + st.Name, ModelID: s.Model, TokenizerID: tokenizer,
			NumPrompts: st.Requests.Scheduled, RequestRate: "inf",
			Duration: st.Duration, Completed: st.Requests.OK, Failed: st.Requests.Failed + st.Requests.Canceled,
			TotalInputTokens: st.Tokens.Prompt, TotalOutputTokens: st.Tokens.Output,
			RequestThroughput: st.RequestsPerSec, OutputThroughput: st.OutputTokensPerSec, TotalTokenThroughput: st.TotalTokensPerSec,
			MaxOutputTokensPerS: st.PeakOutputTokensPerSec, MaxConcurrentReqs: st.PeakInFlight,
			MeanTTFTMS: st.TTFT.Mean, MedianTTFTMS: st.TTFT.P50, StdTTFTMS: st.TTFT.Std, P90TTFTMS: st.TTFT.P90, P99TTFTMS: st.TTFT.P99,
			MeanTPOTMS: st.TPOT.Mean, MedianTPOTMS: st.TPOT.P50, StdTPOTMS: st.TPOT.Std, P90TPOTMS: st.TPOT.P90, P99TPOTMS: st.TPOT.P99,
			MeanITLMS: st.ITLChunk.Mean, MedianITLMS: st.ITLChunk.P50, StdITLMS: st.ITLChunk.Std, P90ITLMS: st.ITLChunk.P90, P99ITLMS: st.ITLChunk.P99,
			MeanE2ELMS: st.E2E.Mean, MedianE2ELMS: st.E2E.P50, StdE2ELMS: st.E2E.Std, P90E2ELMS: st.E2E.P90, P99E2ELMS: st.E2E.P99,
			ServebenchVersion: s.Version, ServebenchScenario: s.Scenario, ServebenchStage: st.Name, ServerVersion: s.ServerVersion,
			ServebenchDropped: st.Requests.Dropped, ServebenchITL: "per chunk (servebench's itl_chunk_ms; its itl_ms is per token)",
		}
		v.ServebenchAccounting = fmt.Sprintf("completed %d + failed %d + dropped %d = num_prompts %d", v.Completed, v.Failed, v.ServebenchDropped, v.NumPrompts)
		one := 1.0
		switch load.Loop {
		case "closed":
			v.Burstiness, v.MaxConcurrency = &one, &load.Concurrency
		case "open":
			v.RequestRate = load.Rate
			switch load.Arrival {
			case "poisson":
				v.Burstiness = &one
			case "gamma":
				b := load.Burstiness
				v.Burstiness = &b
			}
			if load.MaxConcurrency > 0 {
				v.MaxConcurrency = &load.MaxConcurrency
			}
		}
		out = append(out, v)
	}
	return out
}

// WriteVLLM writes the summary in the format of `vllm bench serve
// --save-result` (VLLMResult): one JSON object per stage, each on its own
// line, as --append-result appends one run after another.
func WriteVLLM(w io.Writer, s *Summary) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, v := range s.VLLM() {
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("write vLLM results: %w", err)
		}
	}
	return nil
}
