// The tests in this file scrape the simulator's /metrics with Prometheus's
// own text parser, from outside the package, as a scraper would.
package sim_test

import (
	"github.com/servebench/servebench/internal/vllmmetric"

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
		if lv[vllmmetric.LabelModelName] != "tiny" && name != vllmmetric.CacheConfigInfo {
			t.Errorf("%s: model_name %q", name, lv[vllmmetric.LabelModelName])
		}
		if lv[vllmmetric.LabelEngine] != "0" {
			t.Errorf("%s: engine %q", name, lv[vllmmetric.LabelEngine])
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
		vllmmetric.NumRequestsRunning:    dto.MetricType_GAUGE,
		vllmmetric.NumRequestsWaiting:    dto.MetricType_GAUGE,
		vllmmetric.KVCacheUsagePerc:      dto.MetricType_GAUGE,
		vllmmetric.NumPreemptionsTotal:   dto.MetricType_COUNTER,
		vllmmetric.PromptTokensTotal:     dto.MetricType_COUNTER,
		vllmmetric.GenerationTokensTotal: dto.MetricType_COUNTER,
		vllmmetric.PrefixCacheQueries:    dto.MetricType_COUNTER,
		vllmmetric.PrefixCacheHits:       dto.MetricType_COUNTER,
		vllmmetric.RequestSuccessTotal:   dto.MetricType_COUNTER,
		vllmmetric.TimeToFirstToken:      dto.MetricType_HISTOGRAM,
		vllmmetric.InterTokenLatency:     dto.MetricType_HISTOGRAM,
		vllmmetric.E2ERequestLatency:     dto.MetricType_HISTOGRAM,
		vllmmetric.RequestQueueTime:      dto.MetricType_HISTOGRAM,
		vllmmetric.IterationTokensTotal:  dto.MetricType_HISTOGRAM,
		vllmmetric.CacheConfigInfo:       dto.MetricType_GAUGE,
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
	if v := value(t, before, vllmmetric.CacheConfigInfo); v != 1 {
		t.Errorf("cache_config_info = %v, want 1", v)
	}
	for _, reason := range []string{"stop", "length", "abort"} {
		if _, ok := before[vllmmetric.RequestSuccessTotal]; !ok || value(t, before, vllmmetric.RequestSuccessTotal, vllmmetric.LabelFinishedReason, reason) != 0 {
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
	// One request the client abandons after its first bytes. It runs
	// beside the gauges' watch below: it may wait for a slot behind the
	// others, and the queue is only seen until the first ones finish.
	wg.Go(func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		data, _ := json.Marshal(map[string]any{"model": "tiny", "prompt": "bye", "max_tokens": 1000, "ignore_eos": true, "stream": true})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/completions", bytes.NewReader(data))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			buf := make([]byte, 256)
			_, _ = resp.Body.Read(buf)
			cancel()
			resp.Body.Close()
		}
	})

	var during map[string]*dto.MetricFamily
	seen := map[string]bool{}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && !(seen["running"] && seen["waiting"] && seen["usage"]) {
		during = scrape(t, s.URL())
		seen["running"] = seen["running"] || value(t, during, vllmmetric.NumRequestsRunning) > 0
		seen["waiting"] = seen["waiting"] || value(t, during, vllmmetric.NumRequestsWaiting) > 0
		seen["usage"] = seen["usage"] || value(t, during, vllmmetric.KVCacheUsagePerc) > 0.5
		time.Sleep(20 * time.Millisecond)
	}
	for _, k := range []string{"running", "waiting", "usage"} {
		if !seen[k] {
			t.Errorf("gauge %s never moved during the load", k)
		}
	}
	wg.Wait()

	after := scrape(t, s.URL())
	for _, name := range []string{vllmmetric.NumPreemptionsTotal, vllmmetric.PromptTokensTotal, vllmmetric.GenerationTokensTotal,
		vllmmetric.PrefixCacheQueries, vllmmetric.PrefixCacheHits, vllmmetric.TimeToFirstToken, vllmmetric.InterTokenLatency,
		vllmmetric.E2ERequestLatency, vllmmetric.RequestQueueTime, vllmmetric.IterationTokensTotal} {
		if b, a := value(t, before, name), value(t, after, name); a <= b {
			t.Errorf("%s did not move: %v → %v", name, b, a)
		}
	}
	if v := value(t, after, vllmmetric.RequestSuccessTotal, vllmmetric.LabelFinishedReason, "length"); v != 12 {
		t.Errorf("request_success_total{length} = %v, want 12", v)
	}
	deadline = time.Now().Add(5 * time.Second)
	for value(t, after, vllmmetric.RequestSuccessTotal, vllmmetric.LabelFinishedReason, "abort") != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		after = scrape(t, s.URL())
	}
	if v := value(t, after, vllmmetric.RequestSuccessTotal, vllmmetric.LabelFinishedReason, "abort"); v != 1 {
		t.Errorf("request_success_total{abort} = %v, want 1", v)
	}
	if v := value(t, after, vllmmetric.GenerationTokensTotal); v < 12*400 {
		t.Errorf("generation_tokens_total = %v, want ≥ %d", v, 12*400)
	}
	if v := value(t, after, vllmmetric.KVCacheUsagePerc); v != 0 {
		t.Errorf("kv_cache_usage_perc = %v after the load, want 0", v)
	}
}
