package scrape

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/client"
)

// TestSampleResultsFile writes samples beside request records with the
// results-file writer and reads them back with its reader: every field
// survives.
func TestSampleResultsFile(t *testing.T) {
	t.Parallel()
	rd := parseFile(t, "vllm_v1_dp2.prom", "")
	samples := []Sample{
		{Kind: client.KindScrape, Index: 0, Target: "http://127.0.0.1:8000/metrics", Start: 5 * time.Millisecond,
			At: 7 * time.Millisecond, Duration: 9 * time.Millisecond, OK: true, Status: 200, Reading: rd},
		{Kind: client.KindScrape, Index: 1, Target: "http://127.0.0.1:8000/metrics", Start: time.Second,
			At: time.Second + time.Millisecond, Duration: 2 * time.Millisecond, Status: 503, Error: "scrape x: HTTP 503"},
	}
	var buf bytes.Buffer
	w := client.NewWriter(&buf)
	if err := w.Write(client.Header{Kind: client.KindHeader, Schema: client.Schema, Tool: "servebench"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(samples[0]); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(client.Result{Kind: client.KindRequest, Seq: 7, Outcome: client.OK}); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(samples[1]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	r := client.NewReader(&buf, "results.ndjson")
	var got []Sample
	kinds := []string{}
	for r.Scan() {
		kinds = append(kinds, r.Kind())
		if r.Kind() == client.KindScrape {
			s, err := DecodeSample(r.Raw())
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, s)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"header", "scrape", "request", "scrape"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds = %v, want %v", kinds, want)
	}
	if !reflect.DeepEqual(got, samples) {
		t.Errorf("round trip changed the samples:\n%+v\nwant\n%+v", got, samples)
	}
	if _, err := DecodeSample([]byte(`{"kind":"request","seq":1}`)); err == nil || !strings.Contains(err.Error(), `kind is "request"`) {
		t.Errorf("DecodeSample(request) error = %v", err)
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
