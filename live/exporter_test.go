package live

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/servebench/servebench/internal/vllmmetric"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/sim"
)

const ms = time.Millisecond

// okResult is an ok request sent at 1 s: first token after ttft, then
// three chunks 10 ms apart, 4 output tokens.
func okResult(seq uint64, stage int, ttft time.Duration, warmup bool) results.Result {
	sent := time.Second
	return results.Result{Seq: seq, Stage: stage, Warmup: warmup, Outcome: results.OK, Stream: true,
		Scheduled: sent - 2*ms, Sent: sent, FirstToken: sent + ttft, FirstContent: sent + ttft, LastToken: sent + ttft + 30*ms,
		End: sent + ttft + 31*ms, ChunkTimes: []time.Duration{ttft, ttft + 10*ms, ttft + 20*ms, ttft + 30*ms},
		PromptTokens: 100, OutputTokens: 4, MaxTokens: 4}
}

// TestExporterServed feeds records to an exporter, serves its registry on
// a loopback port, scrapes the page as Prometheus would and checks every
// series moved by what the records hold.
func TestExporterServed(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	var inFlight int64 = 7
	e, err := New(reg, Run{Scenario: "s", Target: "http://127.0.0.1:8000", Model: "m", Version: "v1",
		Started: time.Unix(1_700_000_000, 0), StageName: func(i int) string { return []string{"a", "b"}[i] },
		InFlight: func() int64 { return inFlight }})
	if err != nil {
		t.Fatal(err)
	}
	recs := []results.Result{
		okResult(0, 0, 50*ms, true), // warmup: counted, not in the latencies
		okResult(1, 0, 20*ms, false),
		okResult(2, 0, 300*ms, false),
		{Seq: 3, Stage: 1, Outcome: results.Failed, ErrorClass: results.ErrHTTP5xx, Scheduled: time.Second, Sent: time.Second + 40*ms, Status: 503},
		{Seq: 4, Stage: 1, Outcome: results.Dropped, Scheduled: 2 * time.Second},
	}
	for i := range recs {
		e.Observe(&recs[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addr, stop, err := Serve(ctx, "127.0.0.1:0", reg)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		f, ok := fams[name]
		if !ok {
			t.Fatalf("no %s on the page", name)
		}
	metrics:
		for _, m := range f.Metric {
			for k, v := range labels {
				if label(m, k) != v {
					continue metrics
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
		t.Fatalf("no %s%v on the page", name, labels)
		return 0
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{MetricRequests, map[string]string{"stage": "a", "outcome": "ok"}, 3},
		{MetricRequests, map[string]string{"stage": "b", "outcome": "failed"}, 1},
		{MetricRequests, map[string]string{"stage": "b", "outcome": "dropped"}, 1},
		{MetricErrors, map[string]string{"stage": "b", "error_class": "http_5xx"}, 1},
		{MetricOutputTokens, map[string]string{"stage": "a"}, 12},
		{MetricPromptTokens, map[string]string{"stage": "a"}, 300},
		{MetricTTFT, map[string]string{"stage": "a"}, 2}, // the warmup request is left out
		{MetricE2E, map[string]string{"stage": "a"}, 2},
		{MetricTPOT, map[string]string{"stage": "a"}, 2},
		{MetricITL, map[string]string{"stage": "a"}, 6}, // 3 gaps each
		{MetricInFlight, nil, 7},
		{MetricInfo, map[string]string{"scenario": "s", "model": "m", "version": "v1"}, 1},
		{MetricStarted, nil, 1_700_000_000},
		{MetricSchedLag, map[string]string{"stage": "b"}, 0.04},
	} {
		if got := value(tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	// The TTFT histogram puts 20 ms under 25 ms and 300 ms above 250 ms.
	for _, m := range fams[MetricTTFT].Metric {
		for _, b := range m.Histogram.Bucket {
			switch b.GetUpperBound() {
			case 0.025:
				if b.GetCumulativeCount() != 1 {
					t.Errorf("TTFT ≤ 25 ms: %d, want 1", b.GetCumulativeCount())
				}
			case 0.25:
				if b.GetCumulativeCount() != 1 {
					t.Errorf("TTFT ≤ 250 ms: %d, want 1", b.GetCumulativeCount())
				}
			}
		}
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestServeStops checks that stop closes the listener.
func TestServeStops(t *testing.T) {
	t.Parallel()
	addr, stop, err := Serve(context.Background(), "127.0.0.1:0", prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	stop()
	c := &http.Client{Timeout: 2 * time.Second}
	if resp, err := c.Get("http://" + addr + "/metrics"); err == nil {
		resp.Body.Close()
		t.Error("the page still answers after stop")
	}
}

// TestSeriesStartAtZero: before any request ends, every stage has every
// outcome, every error class, the token counters, the latency histograms
// and the schedule lag at 0, so a dashboard shows 0 rather than "No data".
func TestSeriesStartAtZero(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	stages := []string{"warm", "open"}
	if _, err := New(reg, Run{Scenario: "s", StageName: func(i int) string { return stages[i] }, StageCount: len(stages)}); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			seen[key] = true
			if c := m.GetCounter(); c != nil && c.GetValue() != 0 {
				t.Errorf("%s = %v before any request", key, c.GetValue())
			}
			if h := m.GetHistogram(); h != nil && h.GetSampleCount() != 0 {
				t.Errorf("%s has %d samples before any request", key, h.GetSampleCount())
			}
		}
	}
	for _, s := range stages {
		want := []string{MetricOutputTokens + ",stage=" + s, MetricPromptTokens + ",stage=" + s, MetricTTFT + ",stage=" + s,
			MetricTPOT + ",stage=" + s, MetricITL + ",stage=" + s, MetricE2E + ",stage=" + s, MetricSchedLag + ",stage=" + s}
		for _, o := range results.Outcomes() {
			want = append(want, MetricRequests+",outcome="+string(o)+",stage="+s)
		}
		for _, c := range results.ErrorClasses() {
			want = append(want, MetricErrors+",error_class="+string(c)+",stage="+s)
		}
		for _, w := range want {
			if !seen[w] {
				t.Errorf("no series %s at the start", w)
			}
		}
	}
}

// TestGrafanaDashboard checks deploy/grafana/servebench.json: it parses,
// and every servebench_ series its queries name is one this package
// exports, so a renamed metric cannot leave the dashboard blank.
func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../deploy/grafana/servebench.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, n := range []string{MetricRequests, MetricErrors, MetricOutputTokens, MetricPromptTokens, MetricInFlight, MetricTTFT,
		MetricTPOT, MetricITL, MetricE2E, MetricInfo, MetricStarted, MetricSchedLag, MetricStage, MetricChunks, MetricFirstTokens, MetricFirstTokenS} {
		known[n] = true
	}
	vllm := vllmNames(t)
	used := map[string]bool{}
	series := regexp.MustCompile(`servebench_[a-z0-9_]+|vllm:[a-z0-9_:]+`)
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			for _, s := range series.FindAllString(q.Expr, -1) {
				name := strings.TrimSuffix(s, "_bucket")
				switch {
				case strings.HasPrefix(name, "vllm:") && !vllm[name]:
					t.Errorf("panel %q queries %s, which is not among vLLM's names (internal/vllmmetric) the simulator exports", p.Title, s)
				case !strings.HasPrefix(name, "vllm:") && !known[name]:
					t.Errorf("panel %q queries %s, which package live does not export", p.Title, s)
				}
				used[name] = true
			}
		}
	}
	// The server's row: vLLM's series beside the client's.
	for _, n := range []string{vllmmetric.KVCacheUsagePerc, vllmmetric.NumRequestsRunning, vllmmetric.NumRequestsWaiting,
		vllmmetric.PromptTokensTotal, vllmmetric.GenerationTokensTotal, vllmmetric.NumPreemptionsTotal} {
		if !used[n] {
			t.Errorf("the dashboard does not show the server's %s", n)
		}
	}
	for _, n := range []string{MetricRequests, MetricOutputTokens, MetricTTFT, MetricITL, MetricE2E, MetricInFlight, MetricChunks, MetricFirstTokens, MetricFirstTokenS} {
		if !used[n] {
			t.Errorf("the dashboard does not show %s", n)
		}
	}
}

// vllmNames are the vLLM series names of internal/vllmmetric that the
// simulator's /metrics page holds (histograms by their family name), so a
// dashboard query on one of them is a query on a name vLLM exports.
func vllmNames(t *testing.T) map[string]bool {
	t.Helper()
	cfg, err := sim.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := sim.WriteMetrics(&page, sim.Stats{}, cfg); err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(&page)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, n := range []string{vllmmetric.NumRequestsRunning, vllmmetric.NumRequestsWaiting, vllmmetric.KVCacheUsagePerc,
		vllmmetric.NumPreemptionsTotal, vllmmetric.PromptTokensTotal, vllmmetric.GenerationTokensTotal, vllmmetric.PrefixCacheQueries,
		vllmmetric.PrefixCacheHits, vllmmetric.RequestSuccessTotal, vllmmetric.TimeToFirstToken, vllmmetric.InterTokenLatency,
		vllmmetric.E2ERequestLatency, vllmmetric.RequestQueueTime, vllmmetric.IterationTokensTotal, vllmmetric.RequestPromptTokens,
		vllmmetric.RequestGenerationTokens, vllmmetric.CacheConfigInfo} {
		family := strings.TrimSuffix(n, "_total")
		if fams[n] != nil || fams[family] != nil {
			names[n] = true
		}
	}
	return names
}
