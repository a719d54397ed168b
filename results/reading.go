package results

import (
	"math"
	"slices"
)

// Values maps gauge and counter meanings to their value on one page. A
// meaning missing from the map is unknown: the page did not export it.
// Counters are raw cumulative values; see Rates.
type Values map[Meaning]float64

// Histogram is a cumulative histogram as the server exposes it: Count, Sum
// and every bucket count only grow until the server restarts. For the
// latency meanings Sum and Upper are in seconds.
type Histogram struct {
	Count float64 `json:"count"` // observations so far
	Sum   float64 `json:"sum"`   // sum of the observations

	// Upper holds the finite bucket upper bounds, ascending; the +Inf
	// bucket is left out because its count is Count. Cumulative[i] counts
	// the observations ≤ Upper[i]. Both are empty when the server exposes a
	// summary (count and sum only) instead of a histogram.
	Upper      []float64 `json:"le,omitempty"`
	Cumulative []float64 `json:"cumulative,omitempty"`
}

// Snapshot is what one page says about one engine, or about all engines
// together.
type Snapshot struct {
	Values     Values                `json:"values,omitempty"`
	Histograms map[Meaning]Histogram `json:"histograms,omitempty"`
}

// Reading is a metrics page mapped onto stable meanings.
type Reading struct {
	Profile string `json:"profile,omitempty"` // name of the profile that read the page

	// Snapshot holds the values aggregated over all engines: kv_usage is
	// the mean over engines, everything else the sum.
	Snapshot

	// Engines holds each engine's own values, keyed by the value of the
	// profile's engine label, when the page has more than one engine.
	// Series without the engine label (SGLang's tokenizer metrics, for
	// example) count in the aggregate only.
	Engines map[string]Snapshot `json:"engines,omitempty"`

	// Matched records, for every meaning found, the metric it was read from
	// (the profile's first candidate present on the page).
	Matched map[Meaning]string `json:"matched,omitempty"`

	// CountersAtEnd is true when the engine adds a request's tokens to its
	// counters only when the request ends (llama.cpp's server): a counter's
	// rate over a second says when requests ended, not how fast tokens were
	// generated; only totals over a whole run compare with the client's.
	// It is what the profile knows of its engine, a hint: the correlation
	// tells the counter's granularity from the series themselves and takes
	// this only when they cannot tell.
	CountersAtEnd bool `json:"counters_at_end,omitempty"`

	// GPU is true for GPU telemetry (a DCGM exporter's page, an
	// nvidia-smi or amd-smi sampler's output): Engines are the GPUs, keyed by
	// their index, and Devices says what each is.
	GPU bool `json:"gpu,omitempty"`
	// Devices describes each GPU of a GPU reading, keyed as Engines.
	Devices map[string]Device `json:"devices,omitempty"`

	// AcceptedPerPos holds, for speculative decoding, the cumulative
	// accepted tokens at each draft position (0 first), summed over
	// engines: vLLM's vllm:spec_decode_num_accepted_tokens_per_pos. Nil
	// when the page has none.
	AcceptedPerPos []float64 `json:"spec_accepted_per_pos,omitempty"`
}

// Device is one GPU as its telemetry names it. Pod, Namespace and
// Container are those of the workload using it (the DCGM exporter's
// Kubernetes mapping); empty elsewhere.
type Device struct {
	UUID      string `json:"uuid,omitempty"`
	Model     string `json:"model,omitempty"`
	Host      string `json:"host,omitempty"`
	Pod       string `json:"pod,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Container string `json:"container,omitempty"`
}

// Missing returns the meanings the reading lacks, in canonical order: those
// its profile never exports and those absent from the page. A GPU reading
// is measured against the GPU meanings, an engine's against the others
// but speculative decoding's, which an engine exports only when a draft is
// configured.
func (r Reading) Missing() []Meaning {
	var out []Meaning
	for _, m := range Meanings() {
		if m.GPU() != r.GPU || m.Spec() {
			continue
		}
		if _, ok := r.Matched[m]; !ok {
			out = append(out, m)
		}
	}
	return out
}

// Quantile estimates the q-quantile (0 ≤ q ≤ 1) of the observations by
// linear interpolation inside the bucket that holds it, as Prometheus's
// histogram_quantile does: the first bucket's lower bound is 0, and a
// quantile that falls in the +Inf bucket is reported as the largest finite
// bound. It returns false when there are no observations or no buckets.
func (h Histogram) Quantile(q float64) (float64, bool) {
	if h.Count <= 0 || len(h.Upper) == 0 || len(h.Upper) != len(h.Cumulative) || math.IsNaN(q) {
		return 0, false
	}
	q = math.Min(math.Max(q, 0), 1)
	rank := q * h.Count
	lower, below := 0.0, 0.0
	for i, upper := range h.Upper {
		c := h.Cumulative[i]
		if c >= rank && c > below {
			return lower + (upper-lower)*(rank-below)/(c-below), true
		}
		lower, below = upper, c
	}
	return h.Upper[len(h.Upper)-1], true
}

// Mean returns Sum/Count, or false when there are no observations.
func (h Histogram) Mean() (float64, bool) {
	if h.Count <= 0 {
		return 0, false
	}
	return h.Sum / h.Count, true
}

// Sub returns the observations made between prev and h, both cumulative
// histograms of the same series. When any count went down the server was
// restarted, and h itself (the observations since the restart) is returned
// with reset true. When the bucket bounds differ, only Count and Sum are
// subtracted.
func (h Histogram) Sub(prev Histogram) (delta Histogram, reset bool) {
	if h.Count < prev.Count {
		return h.clone(), true
	}
	d := Histogram{Count: h.Count - prev.Count, Sum: h.Sum - prev.Sum}
	if len(h.Upper) == 0 || !slices.Equal(h.Upper, prev.Upper) || len(h.Cumulative) != len(prev.Cumulative) {
		return d, false
	}
	d.Upper = slices.Clone(h.Upper)
	d.Cumulative = make([]float64, len(h.Cumulative))
	for i, c := range h.Cumulative {
		if c < prev.Cumulative[i] {
			return h.clone(), true
		}
		d.Cumulative[i] = c - prev.Cumulative[i]
	}
	return d, false
}

// Plus returns the sum of two histograms. Buckets are kept only when both
// have the same bounds; otherwise the sum has Count and Sum only.
func (h Histogram) Plus(o Histogram) Histogram {
	s := Histogram{Count: h.Count + o.Count, Sum: h.Sum + o.Sum}
	if len(h.Upper) == 0 || !slices.Equal(h.Upper, o.Upper) || len(h.Cumulative) != len(o.Cumulative) || len(h.Upper) != len(h.Cumulative) {
		return s
	}
	s.Upper = slices.Clone(h.Upper)
	s.Cumulative = make([]float64, len(h.Cumulative))
	for i := range h.Cumulative {
		s.Cumulative[i] = h.Cumulative[i] + o.Cumulative[i]
	}
	return s
}

// Finite reports whether every number of h is finite.
func (h Histogram) Finite() bool {
	if !finite(h.Count) || !finite(h.Sum) {
		return false
	}
	for _, c := range h.Cumulative {
		if !finite(c) {
			return false
		}
	}
	return true
}

// clone returns a copy sharing no memory with h; a histogram without
// buckets has nil slices, so it survives a JSON round trip unchanged.
func (h Histogram) clone() Histogram {
	if len(h.Upper) == 0 || len(h.Upper) != len(h.Cumulative) {
		h.Upper, h.Cumulative = nil, nil
		return h
	}
	h.Upper = slices.Clone(h.Upper)
	h.Cumulative = slices.Clone(h.Cumulative)
	return h
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
