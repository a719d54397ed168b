package scrape

import (
	"github.com/servebench/servebench/results"

	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestSampleResultsFile writes parsed samples beside request records with
// the results-file writer and reads them back: every field of a real
// reading survives.
func TestSampleResultsFile(t *testing.T) {
	t.Parallel()
	rd := parseFile(t, "vllm_v1_dp2.prom", "")
	samples := []results.Sample{
		{Index: 0, Target: "http://127.0.0.1:8000/metrics", Start: 5 * time.Millisecond,
			At: 7 * time.Millisecond, Duration: 9 * time.Millisecond, OK: true, Status: 200, Reading: rd},
		{Index: 1, Target: "http://127.0.0.1:8000/metrics", Start: time.Second,
			At: time.Second + time.Millisecond, Duration: 2 * time.Millisecond, Status: 503, Error: "scrape x: HTTP 503"},
	}
	var buf bytes.Buffer
	w := results.NewWriter(&buf)
	for _, rec := range []results.Record{
		results.HeaderRecord(&results.Header{Schema: results.Schema, Tool: "servebench"}),
		results.SampleRecord(&samples[0]),
		results.ResultRecord(&results.Result{Seq: 7, Outcome: results.OK}),
		results.SampleRecord(&samples[1]),
	} {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := results.NewReader(&buf, "results.ndjson")
	var got []results.Sample
	var kinds []results.Kind
	for r.Scan() {
		rec := r.Record()
		kinds = append(kinds, rec.Kind)
		if rec.Sample != nil {
			got = append(got, *rec.Sample)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []results.Kind{"header", "scrape", "request", "scrape"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds = %v, want %v", kinds, want)
	}
	if !reflect.DeepEqual(got, samples) {
		t.Errorf("round trip changed the samples:\n%+v\nwant\n%+v", got, samples)
	}
}

func TestMetricsURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, base, want, wantErr string }{
		{"bare host", "http://127.0.0.1:8000", "http://127.0.0.1:8000/metrics", ""},
		{"trailing slash", "http://127.0.0.1:8000/", "http://127.0.0.1:8000/metrics", ""},
		{"openai base", "http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/metrics", ""},
		{"openai base with slash", "http://localhost:30000/v1/", "http://localhost:30000/metrics", ""},
		{"behind a path prefix", "http://[::1]:9000/llm/v1", "http://[::1]:9000/llm/metrics", ""},
		{"relative", "localhost/v1", "", "not an absolute URL"},
		{"unparsable", "127.0.0.1:8000", "", "first path segment"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := MetricsURL(tc.base)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("MetricsURL(%q) error = %v, want %q", tc.base, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("MetricsURL(%q) = %q, %v; want %q", tc.base, got, err, tc.want)
			}
		})
	}
}
