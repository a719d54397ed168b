package scrape

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/loopback"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scrape/profile"
)

// vllmPage renders a small two-engine vLLM page whose values depend on n,
// the number of requests served so far.
func vllmPage(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# TYPE vllm:kv_cache_usage_perc gauge\n")
	fmt.Fprintf(&b, "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} %g\n", 0.1*float64(n))
	fmt.Fprintf(&b, "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"m\"} %g\n", 0.05*float64(n))
	fmt.Fprintf(&b, "# TYPE vllm:num_requests_running gauge\n")
	fmt.Fprintf(&b, "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} %d\n", n)
	fmt.Fprintf(&b, "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} %d\n", n)
	fmt.Fprintf(&b, "# TYPE vllm:generation_tokens_total counter\n")
	fmt.Fprintf(&b, "vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} %d\n", 100*n)
	fmt.Fprintf(&b, "vllm:generation_tokens_total{engine=\"1\",model_name=\"m\"} %d\n", 50*n)
	return b.String()
}

// metricsServer serves vllmPage with a growing n and records the Accept
// headers it received.
type metricsServer struct {
	*httptest.Server
	hits    atomic.Int64
	mu      sync.Mutex
	accepts []string
}

func newMetricsServer(t *testing.T, handle func(n int, w http.ResponseWriter) bool) *metricsServer {
	t.Helper()
	ms := &metricsServer{}
	ms.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(ms.hits.Add(1))
		ms.mu.Lock()
		ms.accepts = append(ms.accepts, r.Header.Get("Accept"))
		ms.mu.Unlock()
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		if handle != nil && handle(n, w) {
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		fmt.Fprint(w, vllmPage(n))
	}))
	t.Cleanup(ms.Close)
	return ms
}

// runUntil runs s until emit has been called stop times, then lets Run make
// its final scrape, and returns every sample.
func runUntil(t *testing.T, s *Scraper, stop int) []results.Sample {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []results.Sample
	err := s.Run(ctx, func(smp results.Sample) {
		got = append(got, smp)
		if len(got) == stop {
			cancel()
		}
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return got
}

func newScraper(t *testing.T, cfg Config) *Scraper {
	t.Helper()
	if cfg.Epoch.IsZero() {
		cfg.Epoch = time.Now()
	}
	if cfg.Interval == 0 {
		cfg.Interval = MinInterval
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func TestScraperValuesChange(t *testing.T) {
	t.Parallel()
	ms := newMetricsServer(t, nil)
	s := newScraper(t, Config{URL: ms.URL + "/metrics"})
	got := runUntil(t, s, 3)

	if len(got) != 4 {
		t.Fatalf("%d samples, want 3 and the final one", len(got))
	}
	for i, smp := range got {
		if !smp.OK || smp.Error != "" || smp.Status != 200 {
			t.Errorf("sample %d: ok %v, status %d, error %q", i, smp.OK, smp.Status, smp.Error)
		}
		if smp.Index != uint64(i) || smp.Profile != profile.VLLM || smp.Target != ms.URL+"/metrics" {
			t.Errorf("sample %d: index %d profile %q target %q", i, smp.Index, smp.Profile, smp.Target)
		}
		if smp.Start <= 0 || smp.At < smp.Start || smp.Duration < smp.At-smp.Start {
			t.Errorf("sample %d: start %v at %v duration %v out of order", i, smp.Start, smp.At, smp.Duration)
		}
		if i > 0 && smp.At <= got[i-1].At {
			t.Errorf("sample %d at %v, not after sample %d at %v", i, smp.At, i-1, got[i-1].At)
		}
		n := float64(i + 1)
		if v := smp.Values[results.GenerationTokens]; v != 150*n {
			t.Errorf("sample %d: generation_tokens %v, want %v", i, v, 150*n)
		}
		if v := smp.Values[results.Running]; v != 2*n {
			t.Errorf("sample %d: running %v, want %v (summed over engines)", i, v, 2*n)
		}
		if v := smp.Values[results.KVUsage]; !near(v, 0.075*n) {
			t.Errorf("sample %d: kv_usage %v, want %v (averaged over engines)", i, v, 0.075*n)
		}
		if len(smp.Engines) != 2 {
			t.Errorf("sample %d: %d engines, want 2", i, len(smp.Engines))
		}
	}
	for _, iv := range results.Rates(got) {
		if iv.Deltas[results.GenerationTokens] != 150 || iv.Rates[results.GenerationTokens] <= 0 || len(iv.Resets) != 0 {
			t.Errorf("interval %+v: want 150 tokens, a positive rate, no reset", iv)
		}
	}
	if st := s.Stats(); st.OK != 4 || st.Failed != 0 {
		t.Errorf("stats = %+v, want 4 ok", st)
	}
	if w := s.Warnings(); len(w) != 0 {
		t.Errorf("warnings = %v", w)
	}
	if s.Profile() != profile.VLLM {
		t.Errorf("Profile() = %q after detection", s.Profile())
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for _, a := range ms.accepts {
		if a != "text/plain; version=0.0.4" {
			t.Errorf("Accept = %q, want the text format 0.0.4", a)
		}
	}
}

// TestScraperSampleJSON: a sample is one NDJSON line with the documented keys.
func TestScraperSampleJSON(t *testing.T) {
	t.Parallel()
	ms := newMetricsServer(t, nil)
	got := runUntil(t, newScraper(t, Config{URL: ms.URL + "/metrics", Profile: profile.VLLM}), 1)
	var buf bytes.Buffer
	if err := results.NewWriter(&buf).Write(results.SampleRecord(&got[0])); err != nil {
		t.Fatal(err)
	}
	line := buf.Bytes()
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"kind", "index", "target", "start_ns", "at_ns", "duration_ns", "ok", "status", "profile", "values", "engines", "matched"} {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing from %s", k, line)
		}
	}
	if m["kind"] != "scrape" {
		t.Errorf("kind = %v", m["kind"])
	}
	var back results.Sample
	if err := json.Unmarshal(line, &back); err != nil {
		t.Fatal(err)
	}
	if back.Values[results.GenerationTokens] != got[0].Values[results.GenerationTokens] || back.At != got[0].At || back.Engines["1"].Values[results.Running] != 1 {
		t.Errorf("round trip lost data: %+v", back)
	}
}

func TestScraperNoMetricsEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		path   string
		status int
	}{
		{"404", "/nothing-here", http.StatusNotFound},
		{"llama.cpp without --metrics answers 501", "/metrics", http.StatusNotImplemented},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ms := newMetricsServer(t, func(n int, w http.ResponseWriter) bool {
				if tc.status == http.StatusNotImplemented {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tc.status)
					fmt.Fprint(w, `{"error":{"code":501,"message":"This server does not support metrics endpoint. Start it with `+"`--metrics`"+`","type":"not_supported_error"}}`)
					return true
				}
				return false
			})
			s := newScraper(t, Config{URL: ms.URL + tc.path})
			got := runUntil(t, s, 3)
			if len(got) != 4 {
				t.Fatalf("%d samples, want 4: scraping goes on", len(got))
			}
			for i, smp := range got {
				if smp.OK || smp.Status != tc.status || !strings.Contains(smp.Error, ErrNoMetricsEndpoint.Error()) || len(smp.Values) != 0 {
					t.Errorf("sample %d: ok %v status %d error %q", i, smp.OK, smp.Status, smp.Error)
				}
			}
			w := s.Warnings()
			if len(w) != 1 || !errors.Is(w[0], ErrNoMetricsEndpoint) {
				t.Errorf("warnings = %v, want one wrapping ErrNoMetricsEndpoint", w)
			}
			if st := s.Stats(); st.Failed != 4 || st.OK != 0 {
				t.Errorf("stats = %+v, want 4 failed", st)
			}
		})
	}
}

// TestScraperFailuresAreData: a failing scrape between good ones is a
// sample with an error; the run goes on and later scrapes succeed.
func TestScraperFailuresAreData(t *testing.T) {
	t.Parallel()
	ms := newMetricsServer(t, func(n int, w http.ResponseWriter) bool {
		switch n {
		case 2:
			http.Error(w, "engine dead", http.StatusInternalServerError)
			return true
		case 3:
			fmt.Fprint(w, "vllm:num_requests_running{engine=\"0\" 3\n") // malformed
			return true
		}
		return false
	})
	s := newScraper(t, Config{URL: ms.URL + "/metrics"})
	got := runUntil(t, s, 4)
	want := []struct {
		ok     bool
		status int
		errHas string
	}{
		{true, 200, ""},
		{false, 500, "HTTP 500: engine dead"},
		{false, 200, "text format parsing error in line 1"},
		{true, 200, ""},
		{true, 200, ""},
	}
	if len(got) != len(want) {
		t.Fatalf("%d samples, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].OK != w.ok || got[i].Status != w.status || !strings.Contains(got[i].Error, w.errHas) {
			t.Errorf("sample %d: ok %v status %d error %q; want %v %d %q", i, got[i].OK, got[i].Status, got[i].Error, w.ok, w.status, w.errHas)
		}
	}
	if st := s.Stats(); st.OK != 3 || st.Failed != 2 {
		t.Errorf("stats = %+v, want 3 ok 2 failed", st)
	}
	if w := s.Warnings(); len(w) != 2 {
		t.Errorf("warnings = %v, want one per kind of failure", w)
	}
}

func TestScraperUnreachable(t *testing.T) {
	t.Parallel()
	ms := newMetricsServer(t, nil)
	url := ms.URL + "/metrics"
	ms.Close()
	s := newScraper(t, Config{URL: url})
	got := runUntil(t, s, 2)
	for i, smp := range got {
		if smp.OK || smp.Status != 0 || smp.Error == "" {
			t.Errorf("sample %d: ok %v status %d error %q", i, smp.OK, smp.Status, smp.Error)
		}
	}
	if len(s.Warnings()) != 1 {
		t.Errorf("warnings = %v, want one", s.Warnings())
	}
}

// TestScraperTimeout: a scrape that outlives Timeout fails alone (1 s:
// long enough for the next scrape to answer on a busy machine under -race,
// where 150 ms was missed).
func TestScraperTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	ms := newMetricsServer(t, func(n int, w http.ResponseWriter) bool {
		if n == 1 {
			<-release
			return true
		}
		return false
	})
	defer close(release)
	s := newScraper(t, Config{URL: ms.URL + "/metrics", Timeout: time.Second})
	got := runUntil(t, s, 2)
	if got[0].OK || !strings.Contains(got[0].Error, "deadline exceeded") {
		t.Errorf("first sample: ok %v error %q, want a timeout", got[0].OK, got[0].Error)
	}
	if !got[1].OK {
		t.Errorf("second sample failed: %q", got[1].Error)
	}
}

// TestScraperFinalScrape: a Run whose context has already ended still makes
// the final scrape, on a detached context.
func TestScraperFinalScrape(t *testing.T) {
	t.Parallel()
	ms := newMetricsServer(t, nil)
	s := newScraper(t, Config{URL: ms.URL + "/metrics"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var got []results.Sample
	if err := s.Run(ctx, func(smp results.Sample) { got = append(got, smp) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[0].OK {
		t.Fatalf("samples = %+v, want one successful final scrape", got)
	}
	if err := s.Run(context.Background(), func(results.Sample) {}); err == nil {
		t.Error("second Run succeeded, want an error")
	}
}

func TestScraperMaxScrapes(t *testing.T) {
	t.Parallel()
	ms := newMetricsServer(t, nil)
	s := newScraper(t, Config{URL: ms.URL + "/metrics", MaxScrapes: 2})
	got := runUntil(t, s, 100)
	if len(got) != 2 {
		t.Errorf("%d samples, want MaxScrapes = 2", len(got))
	}
	if w := s.Warnings(); len(w) != 1 || !strings.Contains(w[0].Error(), "stopped after 2 scrapes") {
		t.Errorf("warnings = %v", w)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	epoch := time.Now()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"not loopback", Config{URL: "http://10.0.0.8:8000/metrics", Epoch: epoch}, "not a loopback address"},
		{"public name", Config{URL: "http://example.com/metrics", Epoch: epoch}, "not a loopback address"},
		{"scheme", Config{URL: "ftp://127.0.0.1/metrics", Epoch: epoch}, "want an http or https URL"},
		{"interval too short", Config{URL: "http://127.0.0.1:8000/metrics", Interval: 50 * time.Millisecond, Epoch: epoch}, "shorter than 100ms"},
		{"no epoch", Config{URL: "http://127.0.0.1:8000/metrics"}, "Epoch is required"},
		{"unknown profile", Config{URL: "http://127.0.0.1:8000/metrics", Epoch: epoch, Profile: "ollama"}, `unknown profile "ollama"`},
		{"localhost ok", Config{URL: "http://localhost:8000/metrics", Epoch: epoch}, ""},
		{"ipv6 loopback ok", Config{URL: "http://[::1]:8000/metrics", Epoch: epoch, Profile: profile.Auto}, ""},
		{"127/8 ok", Config{URL: "http://127.0.0.2:8000/metrics", Epoch: epoch, Profile: profile.TGI}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := New(tc.cfg)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if s.cfg.Interval != DefaultInterval {
					t.Errorf("interval = %v, want the default %v", s.cfg.Interval, DefaultInterval)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("New error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestScraperRedirectOffLoopback: a redirect may not lead the scraper off
// the machine.
func TestScraperRedirectOffLoopback(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.RedirectHandler("http://192.0.2.1/metrics", http.StatusFound))
	defer srv.Close()
	got := runUntil(t, newScraper(t, Config{URL: srv.URL + "/metrics"}), 1)
	if got[0].OK || !strings.Contains(got[0].Error, "not a loopback address") {
		t.Errorf("sample: ok %v error %q", got[0].OK, got[0].Error)
	}
}

// TestIssue22DialChecked (issue 22, item 9): the scraper checked its URL
// but not its connections, so a loopback name resolving elsewhere would
// have been dialled. Its transport's dialer refuses a non-loopback address
// before connecting (the check runs on the socket, ahead of connect), and
// lets loopback through.
func TestIssue22DialChecked(t *testing.T) {
	t.Parallel()
	tr := newTransport(loopback.Policy{}, nil)
	if _, err := tr.DialContext(t.Context(), "tcp", "10.0.0.5:9"); !errors.Is(err, loopback.ErrNotLoopback) {
		t.Errorf("dial 10.0.0.5: %v, want ErrNotLoopback", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := tr.DialContext(t.Context(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatalf("dial loopback: %v", err)
	}
	c.Close()
}
