package results

import "time"

// Metric is one figure servebench measures, judges and compares. The table
// Metrics returns is the one place a figure's name, unit, class and
// direction are stated: aggregation, budgets, compare gates and sweep
// tables all read it.
type Metric struct {
	// Name is the figure's key in summary.json, budgets, compare gates and
	// sweep tables: "ttft_ms", "error_rate", …
	Name string
	// Unit is the unit of its values: "ms", "fraction", "tokens/s",
	// "requests/s", "inputs/s" or "count".
	Unit  string
	Class MetricClass
	// HigherIsBetter is true for throughputs and goodput, false for
	// latencies, error rates and counts.
	HigherIsBetter bool
	// Budget reports whether a budgets block may limit the figure.
	Budget bool
	// Observe appends the metric's observations of one request record to
	// dst (at most one for most latencies, one per output token after the
	// first for itl_ms, one per chunk gap for itl_chunk_ms); nil for
	// figures of a whole run or stage.
	Observe func(r *Result, dst []time.Duration) []time.Duration
	// About says what the figure is, in a few words.
	About string
}

// MetricClass says what kind of values a figure takes, and so which
// statistics a budget may limit.
type MetricClass int

// Metric classes.
const (
	Latency  MetricClass = iota + 1 // milliseconds: percentiles, mean and max
	Fraction                        // 0 to 1: a bound on the value (max, or min when higher is better)
	Rate                            // per second: a lower bound (min)
	Count                           // a count: an upper bound (max)
	Price                           // a cost per unit of work (joules per token, dollars per 1M tokens): an upper bound (max)
)

// Stats returns the statistics a budget on m may limit.
func (m Metric) Stats() []string {
	switch {
	case m.Class == Latency:
		return []string{"p50", "p90", "p95", "p99", "p99_9", "mean", "max"}
	case m.HigherIsBetter:
		return []string{"min"}
	}
	return []string{"max"}
}

func one(f func(*Result) (time.Duration, bool)) func(*Result, []time.Duration) []time.Duration {
	return func(r *Result, dst []time.Duration) []time.Duration {
		if d, ok := f(r); ok {
			dst = append(dst, d)
		}
		return dst
	}
}

// Table is a metric table: Metrics, or a copy of it with more metrics (a
// test's). The functions that derive an output from the table take it as
// a parameter, so a copy can be tried without global state.
type Table []Metric

// Metrics returns the metric table, latencies first, in the order reports
// show them. The slice is new on every call.
func Metrics() Table {
	return Table{
		{Name: "ttft_ms", Unit: "ms", Class: Latency, Budget: true, Observe: one((*Result).TTFT), About: "time to first token, sent → first content or reasoning"},
		{Name: "ttft_from_schedule_ms", Unit: "ms", Class: Latency, Observe: one((*Result).TTFTFromSchedule), About: "time to first token from the scheduled time"},
		{Name: "ttfc_ms", Unit: "ms", Class: Latency, Budget: true, Observe: one((*Result).TTFC), About: "time to first content, after any reasoning"},
		{Name: "itl_ms", Unit: "ms", Class: Latency, Budget: true, Observe: (*Result).AppendITLs, About: "inter-token latency, per token"},
		{Name: "itl_chunk_ms", Unit: "ms", Class: Latency, Observe: (*Result).AppendChunkITLs, About: "inter-token latency, per chunk"},
		{Name: "tpot_ms", Unit: "ms", Class: Latency, Budget: true, Observe: one((*Result).TPOT), About: "time per output token after the first, per request"},
		{Name: "e2e_ms", Unit: "ms", Class: Latency, Budget: true, Observe: one((*Result).E2E), About: "end-to-end latency, sent → end"},
		{Name: "e2e_from_schedule_ms", Unit: "ms", Class: Latency, Observe: one((*Result).E2EFromSchedule), About: "end-to-end latency from the scheduled time"},
		{Name: "schedule_lag_ms", Unit: "ms", Class: Latency, Observe: one((*Result).ScheduleLag), About: "how late the request left, scheduled → sent"},
		{Name: "wire_lag_ms", Unit: "ms", Class: Latency, Observe: one((*Result).WireLag), About: "how late the request reached the wire, scheduled → written"},
		{Name: "error_rate", Unit: "fraction", Class: Fraction, Budget: true, About: "failed / (ok + failed)"},
		{Name: "drop_rate", Unit: "fraction", Class: Fraction, Budget: true, About: "dropped / scheduled arrivals"},
		{Name: "output_tokens_per_s", Unit: "tokens/s", Class: Rate, HigherIsBetter: true, Budget: true, About: "output tokens of ok requests per second"},
		{Name: "requests_per_s", Unit: "requests/s", Class: Rate, HigherIsBetter: true, Budget: true, About: "ok requests per second"},
		{Name: "total_tokens_per_s", Unit: "tokens/s", Class: Rate, HigherIsBetter: true, Budget: true, About: "prompt and output tokens per second"},
		{Name: "inputs_per_s", Unit: "inputs/s", Class: Rate, HigherIsBetter: true, Budget: true, About: "texts embedded per second (embeddings)"},
		{Name: "goodput", Unit: "fraction", Class: Fraction, HigherIsBetter: true, Budget: true, About: "share of finished requests meeting every slo objective"},
		{Name: "preemptions", Unit: "count", Class: Count, Budget: true, About: "server preemptions during the scope"},
		{Name: "kv_usage", Unit: "fraction", Class: Fraction, Budget: true, About: "peak server KV-cache usage during the scope"},
		{Name: "joules_per_token", Unit: "J/token", Class: Price, Budget: true, About: "GPU energy per output token (GPU telemetry)"},
		{Name: "usd_per_mtok", Unit: "$/1M tokens", Class: Price, Budget: true, About: "cost per million output tokens (scenario cost)"},
		{Name: "token_count_mismatch", Unit: "count", Class: Count, Budget: true, About: "ok requests whose output differs from max_tokens despite ignore_eos"},
	}
}

// MetricByName returns the metric of Metrics called name.
func MetricByName(name string) (Metric, bool) { return Metrics().ByName(name) }

// ByName returns the metric of t called name.
func (t Table) ByName(name string) (Metric, bool) {
	for _, m := range t {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// Budgeted returns the names of t's metrics a budget may limit (Budget),
// in table order.
func (t Table) Budgeted() []string {
	var out []string
	for _, m := range t {
		if m.Budget {
			out = append(out, m.Name)
		}
	}
	return out
}
