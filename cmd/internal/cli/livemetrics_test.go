package cli

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
)

// TestLiveMetrics scrapes the run's /metrics while the load runs: the
// page parses as the Prometheus text format, names the running stage, and
// its counters agree with the records written so far. A non-loopback
// address is refused before any load (nothing is dialled).
func TestLiveMetrics(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Parse("gated.yaml", []byte(liveGated))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu        sync.Mutex
		progress  bytes.Buffer
		scraped   map[string]*dto.MetricFamily
		okSoFar   uint64
		scrapeErr error
	)
	addrLine := regexp.MustCompile(`live metrics: (http://\S+/metrics)`)
	progressW := liveWriterFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return progress.Write(p)
	})
	observe := func(rec results.Record, _ int) {
		r := rec.Result
		if r == nil || scraped != nil || r.Outcome != results.OK {
			return
		}
		if okSoFar++; okSoFar < 10 {
			return
		}
		mu.Lock()
		m := addrLine.FindStringSubmatch(progress.String())
		mu.Unlock()
		if m == nil {
			scrapeErr = errors.New("the run did not print the metrics address")
			scraped = map[string]*dto.MetricFamily{}
			return
		}
		resp, err := http.Get(m[1])
		if err != nil {
			scrapeErr = err
			return
		}
		defer resp.Body.Close()
		parser := expfmt.NewTextParser(model.UTF8Validation)
		scraped, scrapeErr = parser.TextToMetricFamilies(resp.Body)
	}
	lm, err := listenLive("127.0.0.1:0", false, progressW)
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	sum, err := run.Run(context.Background(), sc, run.Options{Dir: t.TempDir(), Observer: lm, Progress: progressW, Observe: observe})
	if err != nil {
		t.Fatal(err)
	}
	if scrapeErr != nil || scraped == nil {
		t.Fatalf("scrape: %v (families %d)", scrapeErr, len(scraped))
	}
	value := func(name, label, want string) float64 {
		mf := scraped[name]
		if mf == nil {
			t.Errorf("no %s", name)
			return -1
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if label == "" || (l.GetName() == label && l.GetValue() == want) {
					if c := m.GetCounter(); c != nil {
						return c.GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
			if label == "" {
				if c := m.GetCounter(); c != nil {
					return c.GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
		t.Errorf("%s has no %s=%q", name, label, want)
		return -1
	}
	// The writer had written the 10th ok record when it scraped: the
	// scheduler's count may be ahead (records on their way), never behind.
	if ok := value("servebench_requests_total", "outcome", "ok"); ok < 10 {
		t.Errorf("servebench_requests_total{outcome=ok} = %g, want at least 10", ok)
	}
	if st := value("servebench_stage", "", ""); st != 1 {
		t.Errorf("servebench_stage = %g, want 1 (the first stage)", st)
	}
	if n, s := value("servebench_first_tokens_total", "", ""), value("servebench_time_to_first_token_seconds_total", "", ""); n < 10 || s <= 0 {
		t.Errorf("first tokens %g, TTFT sum %g s", n, s)
	}
	if mf := scraped["servebench_ttft_seconds"]; mf == nil || mf.Metric[0].GetHistogram().GetSampleCount() < 6 {
		t.Errorf("servebench_ttft_seconds: %v", mf)
	}
	if sum.Overall.Requests.OK != 40 {
		t.Errorf("requests %+v", sum.Overall.Requests)
	}

	_, err = listenLive("10.0.0.7:9464", false, nil)
	if err == nil || !strings.Contains(err.Error(), "want a loopback address") {
		t.Errorf("a non-loopback metrics address: %v", err)
	}
}

// liveGated is a short gated scenario on the simulator.
const liveGated = `name: gated
target: {url: "sim://tiny?seed=5"}
scrape: {interval: 200ms}
load:
  stages:
    - {name: closed, concurrency: 4, requests: 24, warmup: {requests: 4}}
    - {name: open, rate: 40, requests: 20}
budgets:
  overall:
    error_rate: {max: 0}
    ttft_ms: {p50: 0.001}
`

type liveWriterFunc func([]byte) (int, error)

func (f liveWriterFunc) Write(p []byte) (int, error) { return f(p) }
