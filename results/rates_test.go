package results

import (
	"reflect"
	"testing"
	"time"
)

func okSample(at time.Duration, v Values) Sample {
	return Sample{At: at, OK: true, Reading: Reading{Profile: "vllm", Snapshot: Snapshot{Values: v}}}
}

func engineSample(at time.Duration, engines map[string]Values) Sample {
	s := okSample(at, Values{})
	s.Engines = map[string]Snapshot{}
	for e, vals := range engines {
		s.Engines[e] = Snapshot{Values: vals}
		for m, v := range vals {
			s.Values[m] += v
		}
	}
	return s
}

func TestRates(t *testing.T) {
	t.Parallel()
	sec := time.Second
	tests := []struct {
		name    string
		samples []Sample
		want    []Interval
	}{
		{
			name:    "counter grows",
			samples: []Sample{okSample(sec, Values{GenerationTokens: 100, Running: 3}), okSample(3*sec, Values{GenerationTokens: 500, Running: 4})},
			want:    []Interval{{From: sec, To: 3 * sec, Deltas: Values{GenerationTokens: 400}, Rates: Values{GenerationTokens: 200}}},
		},
		{
			name:    "counter reset counts the value since the restart",
			samples: []Sample{okSample(sec, Values{PromptTokens: 1000}), okSample(2*sec, Values{PromptTokens: 50})},
			want: []Interval{{From: sec, To: 2 * sec, Deltas: Values{PromptTokens: 50}, Rates: Values{PromptTokens: 50},
				Resets: []Meaning{PromptTokens}}},
		},
		{
			name: "failed samples skipped, input order ignored",
			samples: []Sample{
				okSample(3*sec, Values{Preemptions: 7}),
				{At: 2 * sec, Error: "HTTP 500"},
				okSample(sec, Values{Preemptions: 5}),
			},
			want: []Interval{{From: sec, To: 3 * sec, Deltas: Values{Preemptions: 2}, Rates: Values{Preemptions: 1}}},
		},
		{
			// Issue 9: a counter absent before the load (created at its first
			// event) counts from zero; one that disappeared has no rate.
			name:    "a counter that appears counts from zero, one that disappears has no rate",
			samples: []Sample{okSample(sec, Values{GenerationTokens: 10}), okSample(2*sec, Values{PromptTokens: 10})},
			want:    []Interval{{From: sec, To: 2 * sec, Deltas: Values{PromptTokens: 10}, Rates: Values{PromptTokens: 10}}},
		},
		{
			name:    "two samples at the same instant give no interval",
			samples: []Sample{okSample(sec, Values{GenerationTokens: 10}), okSample(sec, Values{GenerationTokens: 20})},
			want:    nil,
		},
		{
			name: "one engine restarts: the others' progress is kept",
			samples: []Sample{
				engineSample(sec, map[string]Values{"0": {GenerationTokens: 1000}, "1": {GenerationTokens: 500}}),
				engineSample(2*sec, map[string]Values{"0": {GenerationTokens: 1100}, "1": {GenerationTokens: 20}}),
			},
			// The aggregate fell from 1500 to 1120, which alone would read
			// as a reset worth 1120 tokens.
			want: []Interval{{From: sec, To: 2 * sec, Deltas: Values{GenerationTokens: 120}, Rates: Values{GenerationTokens: 120},
				Resets: []Meaning{GenerationTokens}}},
		},
		{
			name: "engines change between samples: aggregate used",
			samples: []Sample{
				engineSample(sec, map[string]Values{"0": {GenerationTokens: 1000}, "1": {GenerationTokens: 500}}),
				engineSample(2*sec, map[string]Values{"0": {GenerationTokens: 1100}, "2": {GenerationTokens: 600}}),
			},
			want: []Interval{{From: sec, To: 2 * sec, Deltas: Values{GenerationTokens: 200}, Rates: Values{GenerationTokens: 200}}},
		},
		{
			name:    "empty",
			samples: nil,
			want:    nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := append([]Sample(nil), tc.samples...)
			got := Rates(tc.samples)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Rates =\n%+v\nwant\n%+v", got, tc.want)
			}
			if !reflect.DeepEqual(before, tc.samples) {
				t.Error("Rates modified its input")
			}
		})
	}
}

func TestRatesHistograms(t *testing.T) {
	t.Parallel()
	up := []float64{0.1, 0.5, 1}
	withHist := func(at time.Duration, h Histogram) Sample {
		s := okSample(at, nil)
		s.Histograms = map[Meaning]Histogram{TTFT: h}
		return s
	}
	tests := []struct {
		name      string
		prev, cur Histogram
		want      Histogram
		reset     bool
	}{
		{
			name: "observations in the interval",
			prev: Histogram{Count: 10, Sum: 2, Upper: up, Cumulative: []float64{4, 8, 9}},
			cur:  Histogram{Count: 15, Sum: 3.5, Upper: up, Cumulative: []float64{5, 11, 13}},
			want: Histogram{Count: 5, Sum: 1.5, Upper: up, Cumulative: []float64{1, 3, 4}},
		},
		{
			name:  "restart",
			prev:  Histogram{Count: 10, Sum: 2, Upper: up, Cumulative: []float64{4, 8, 9}},
			cur:   Histogram{Count: 2, Sum: 0.3, Upper: up, Cumulative: []float64{1, 2, 2}},
			want:  Histogram{Count: 2, Sum: 0.3, Upper: up, Cumulative: []float64{1, 2, 2}},
			reset: true,
		},
		{
			name: "bucket bounds changed: count and sum only",
			prev: Histogram{Count: 10, Sum: 2, Upper: up, Cumulative: []float64{4, 8, 9}},
			cur:  Histogram{Count: 12, Sum: 2.5, Upper: []float64{0.2}, Cumulative: []float64{12}},
			want: Histogram{Count: 2, Sum: 0.5},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ivs := Rates([]Sample{withHist(time.Second, tc.prev), withHist(2*time.Second, tc.cur)})
			if len(ivs) != 1 {
				t.Fatalf("%d intervals, want 1", len(ivs))
			}
			if got := ivs[0].Histograms[TTFT]; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("delta = %+v, want %+v", got, tc.want)
			}
			if got := len(ivs[0].Resets) == 1; got != tc.reset {
				t.Errorf("resets = %v, want reset %v", ivs[0].Resets, tc.reset)
			}
		})
	}
}

func TestHistogramQuantile(t *testing.T) {
	t.Parallel()
	h := Histogram{Count: 100, Sum: 30, Upper: []float64{0.1, 0.5, 1}, Cumulative: []float64{50, 90, 95}}
	tests := []struct {
		name string
		h    Histogram
		q    float64
		want float64
		ok   bool
	}{
		{"median at the first bound", h, 0.5, 0.1, true},
		{"interpolated in the second bucket", h, 0.7, 0.3, true},
		{"in the +Inf bucket: largest finite bound", h, 0.99, 1, true},
		{"q below 0 clamps", h, -1, 0, true},
		{"empty", Histogram{}, 0.5, 0, false},
		{"summary without buckets", Histogram{Count: 3, Sum: 1}, 0.5, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := tc.h.Quantile(tc.q)
			if ok != tc.ok || !near(got, tc.want) {
				t.Errorf("Quantile(%v) = %v, %v; want %v, %v", tc.q, got, ok, tc.want, tc.ok)
			}
		})
	}
}
