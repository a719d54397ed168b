// The tests in this file scrape the simulator's /metrics with Prometheus's
// own text parser, from outside the package, as a scraper would.
package sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/servebench/servebench/sim"
)

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("content type %q", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// value sums a family's samples (counter, gauge, or histogram count)
// matching the label pairs given.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("%s missing from /metrics", name)
	}
	sum := 0.0
	for _, m := range f.GetMetric() {
		lv := map[string]string{}
		for _, l := range m.GetLabel() {
			lv[l.GetName()] = l.GetValue()
		}
		if lv[sim.LabelModelName] != "tiny" && name != sim.MetricCacheConfigInfo {
			t.Errorf("%s: model_name %q", name, lv[sim.LabelModelName])
		}
		if lv[sim.LabelEngine] != "0" {
			t.Errorf("%s: engine %q", name, lv[sim.LabelEngine])
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			match = match && lv[labels[i]] == labels[i+1]
		}
		if !match {
			continue
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			sum += m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			sum += m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

func post(url string, body any) (*http.Response, error) {
	data, _ := json.Marshal(body)
	return http.Post(url, "application/json", bytes.NewReader(data))
}

// TestMetricsMove scrapes /metrics before, during and after a load that
// queues, preempts, hits the prefix cache and aborts, and checks every
// vLLM series exists with its type and moves.
func TestMetricsMove(t *testing.T) {
	t.Parallel()
	cfg, err := sim.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.Listen(context.Background(), "127.0.0.1:0", cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	types := map[string]dto.MetricType{
		sim.MetricNumRequestsRunning:    dto.MetricType_GAUGE,
		sim.MetricNumRequestsWaiting:    dto.MetricType_GAUGE,
		sim.MetricKVCacheUsagePerc:      dto.MetricType_GAUGE,
		sim.MetricNumPreemptionsTotal:   dto.MetricType_COUNTER,
		sim.MetricPromptTokensTotal:     dto.MetricType_COUNTER,
		sim.MetricGenerationTokensTotal: dto.MetricType_COUNTER,
		sim.MetricPrefixCacheQueries:    dto.MetricType_COUNTER,
		sim.MetricPrefixCacheHits:       dto.MetricType_COUNTER,
		sim.MetricRequestSuccessTotal:   dto.MetricType_COUNTER,
		sim.MetricTimeToFirstToken:      dto.MetricType_HISTOGRAM,
		sim.MetricInterTokenLatency:     dto.MetricType_HISTOGRAM,
		sim.MetricE2ERequestLatency:     dto.MetricType_HISTOGRAM,
		sim.MetricRequestQueueTime:      dto.MetricType_HISTOGRAM,
		sim.MetricIterationTokensTotal:  dto.MetricType_HISTOGRAM,
		sim.MetricCacheConfigInfo:       dto.MetricType_GAUGE,
	}
	before := scrape(t, s.URL())
	for name, typ := range types {
		f, ok := before[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s: type %v, want %v", name, f.GetType(), typ)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	if v := value(t, before, sim.MetricCacheConfigInfo); v != 1 {
		t.Errorf("cache_config_info = %v, want 1", v)
	}
	for _, reason := range []string{"stop", "length", "abort"} {
		if _, ok := before[sim.MetricRequestSuccessTotal]; !ok || value(t, before, sim.MetricRequestSuccessTotal, sim.LabelFinishedReason, reason) != 0 {
			t.Errorf("request_success_total{finished_reason=%q} not pre-created at 0", reason)
		}
	}

	// Load: 12 streams (max_num_seqs is 8) sharing a 200-token prefix, each
	// growing to 620 tokens of context (the cache holds 3,072).
	prefix := strings.Repeat(" the", 200)
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := post(s.URL()+"/v1/completions", map[string]any{"model": "tiny",
				"prompt": prefix + strings.Repeat(fmt.Sprintf(" cat%d", i), 20), "max_tokens": 400, "ignore_eos": true, "stream": true})
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	// One request the client abandons.
	ctx, cancel := context.WithCancel(context.Background())
	data, _ := json.Marshal(map[string]any{"model": "tiny", "prompt": "bye", "max_tokens": 1000, "ignore_eos": true, "stream": true})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/completions", bytes.NewReader(data))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		buf := make([]byte, 256)
		_, _ = resp.Body.Read(buf)
		cancel()
		resp.Body.Close()
	} else {
		cancel()
	}

	var during map[string]*dto.MetricFamily
	seen := map[string]bool{}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && !(seen["running"] && seen["waiting"] && seen["usage"]) {
		during = scrape(t, s.URL())
		seen["running"] = seen["running"] || value(t, during, sim.MetricNumRequestsRunning) > 0
		seen["waiting"] = seen["waiting"] || value(t, during, sim.MetricNumRequestsWaiting) > 0
		seen["usage"] = seen["usage"] || value(t, during, sim.MetricKVCacheUsagePerc) > 0.5
		time.Sleep(20 * time.Millisecond)
	}
	for _, k := range []string{"running", "waiting", "usage"} {
		if !seen[k] {
			t.Errorf("gauge %s never moved during the load", k)
		}
	}
	wg.Wait()

	after := scrape(t, s.URL())
	for _, name := range []string{sim.MetricNumPreemptionsTotal, sim.MetricPromptTokensTotal, sim.MetricGenerationTokensTotal,
		sim.MetricPrefixCacheQueries, sim.MetricPrefixCacheHits, sim.MetricTimeToFirstToken, sim.MetricInterTokenLatency,
		sim.MetricE2ERequestLatency, sim.MetricRequestQueueTime, sim.MetricIterationTokensTotal} {
		if b, a := value(t, before, name), value(t, after, name); a <= b {
			t.Errorf("%s did not move: %v → %v", name, b, a)
		}
	}
	if v := value(t, after, sim.MetricRequestSuccessTotal, sim.LabelFinishedReason, "length"); v != 12 {
		t.Errorf("request_success_total{length} = %v, want 12", v)
	}
	deadline = time.Now().Add(5 * time.Second)
	for value(t, after, sim.MetricRequestSuccessTotal, sim.LabelFinishedReason, "abort") != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		after = scrape(t, s.URL())
	}
	if v := value(t, after, sim.MetricRequestSuccessTotal, sim.LabelFinishedReason, "abort"); v != 1 {
		t.Errorf("request_success_total{abort} = %v, want 1", v)
	}
	if v := value(t, after, sim.MetricGenerationTokensTotal); v < 12*400 {
		t.Errorf("generation_tokens_total = %v, want ≥ %d", v, 12*400)
	}
	if v := value(t, after, sim.MetricKVCacheUsagePerc); v != 0 {
		t.Errorf("kv_cache_usage_perc = %v after the load, want 0", v)
	}
}
