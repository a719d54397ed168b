package run

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/servebench/servebench/internal/loopback"
)

// liveMetrics serves the run's client-side figures as it goes, in the
// Prometheus text format, for a Prometheus (or an OpenTelemetry collector's
// Prometheus receiver) to scrape: the request counts by outcome and error
// class, requests in flight, tokens and chunks received, first tokens and
// their TTFT sum (rate(sum) / rate(count) is the live TTFT, streams still
// running included), the TTFT quantiles of finished requests, and the
// running stage. deploy/grafana/servebench.json charts them.
type liveMetrics struct {
	srv  *http.Server
	addr string
}

// metricsInfo names the run in servebench_run_info.
type metricsInfo struct {
	scenario, target, model string
	stages                  []string
}

// listenMetrics opens the live metrics' address: loopback unless
// allowRemote (the run's target.allow_remote).
func listenMetrics(addr string, allowRemote bool) (net.Listener, error) {
	if !allowRemote && !loopback.Addr(addr) {
		return nil, fmt.Errorf("metrics address %s: want a loopback address such as 127.0.0.1:9464 (another host may scrape it only with target.allow_remote)", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics address: %w", err)
	}
	return l, nil
}

// serveLiveMetrics serves /metrics on l from prog until stop.
func serveLiveMetrics(l net.Listener, prog *progress, info metricsInfo) *liveMetrics {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
		for _, mf := range prog.families(info) {
			if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
				return
			}
		}
	})
	m := &liveMetrics{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, addr: l.Addr().String()}
	go func() { _ = m.srv.Serve(l) }()
	return m
}

// stop shuts the endpoint down, giving a scrape in progress a second.
func (m *liveMetrics) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := m.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		_ = m.srv.Close()
	}
}

func family(name, help string, typ dto.MetricType, ms ...*dto.Metric) *dto.MetricFamily {
	return &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: typ.Enum(), Metric: ms}
}

func labels(kv ...string) []*dto.LabelPair {
	var out []*dto.LabelPair
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, &dto.LabelPair{Name: proto.String(kv[i]), Value: proto.String(kv[i+1])})
	}
	return out
}

func counter(v float64, kv ...string) *dto.Metric {
	return &dto.Metric{Label: labels(kv...), Counter: &dto.Counter{Value: proto.Float64(v)}}
}

func gauge(v float64, kv ...string) *dto.Metric {
	return &dto.Metric{Label: labels(kv...), Gauge: &dto.Gauge{Value: proto.Float64(v)}}
}

// families is the /metrics page now.
func (p *progress) families(info metricsInfo) []*dto.MetricFamily {
	var c counters
	if p.live.counters != nil {
		c = p.live.counters()
	}
	var chunks, firsts int64
	var firstSum time.Duration
	if p.live.chunks != nil {
		chunks = p.live.chunks()
	}
	if p.live.firsts != nil {
		firsts, firstSum = p.live.firsts()
	}
	p.mu.Lock()
	errs := maps.Clone(p.errors)
	var quantiles []*dto.Quantile
	for _, q := range []float64{0.5, 0.9, 0.99} {
		quantiles = append(quantiles, &dto.Quantile{Quantile: proto.Float64(q), Value: proto.Float64(float64(p.ttft.ValueAtQuantile(100*q)) / 1e6)})
	}
	ttftCount, ttftSum, embed := uint64(p.ttft.TotalCount()), p.ttftSum, p.embed
	p.mu.Unlock()
	latName, latHelp := "servebench_ttft_seconds", "TTFT of requests completed ok."
	if embed {
		latName, latHelp = "servebench_e2e_seconds", "End-to-end latency of embeddings requests completed ok."
	}

	var errMetrics []*dto.Metric
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		errMetrics = append(errMetrics, counter(float64(errs[k]), "class", k))
	}
	stage, stageName := 0.0, ""
	if c.Stage >= 0 && c.Stage < len(info.stages) {
		stage, stageName = float64(c.Stage+1), info.stages[c.Stage]
	}
	out := []*dto.MetricFamily{
		family("servebench_run_info", "The run: its scenario, target and model.", dto.MetricType_GAUGE,
			gauge(1, "scenario", info.scenario, "target", info.target, "model", info.model)),
		family("servebench_stage", "The running stage, counted from 1 (0 before and after the stages), with its name.", dto.MetricType_GAUGE,
			gauge(stage, "stage", stageName)),
		family("servebench_requests_total", "Requests recorded, by outcome (dropped: open-loop arrivals never sent).", dto.MetricType_COUNTER,
			counter(float64(c.OK), "outcome", "ok"), counter(float64(c.Failed), "outcome", "failed"),
			counter(float64(c.Canceled), "outcome", "canceled"), counter(float64(c.Dropped), "outcome", "dropped")),
		family("servebench_requests_in_flight", "Requests sent and not yet recorded.", dto.MetricType_GAUGE, gauge(float64(c.InFlight))),
		family("servebench_output_tokens_total", "Output tokens of requests completed ok.", dto.MetricType_COUNTER, counter(float64(c.OutputTokens))),
		family("servebench_chunks_total", "Token-bearing chunks received, requests still streaming included.", dto.MetricType_COUNTER, counter(float64(chunks))),
		family("servebench_first_tokens_total", "Requests that received their first token, streams still running included.", dto.MetricType_COUNTER, counter(float64(firsts))),
		family("servebench_time_to_first_token_seconds_total", "Sum of the times to first token of servebench_first_tokens_total: rate(this) / rate(that) is the live TTFT.", dto.MetricType_COUNTER, counter(firstSum.Seconds())),
		{Name: proto.String(latName), Help: proto.String(latHelp), Type: dto.MetricType_SUMMARY.Enum(),
			Metric: []*dto.Metric{{Summary: &dto.Summary{SampleCount: proto.Uint64(ttftCount), SampleSum: proto.Float64(ttftSum.Seconds()), Quantile: quantiles}}}},
	}
	if len(errMetrics) > 0 {
		out = append(out, family("servebench_request_errors_total", "Failed requests by error class.", dto.MetricType_COUNTER, errMetrics...))
	}
	return out
}
