package scrape

import (
	"github.com/servebench/servebench/results"

	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/sim"
)

// TestScrapeSimulator scrapes the built-in simulator while it is driven past
// its KV capacity: every vLLM meaning is found on its page (the profile and
// the simulator share the metric names), the values move, and the counters
// add up to what was generated.
func TestScrapeSimulator(t *testing.T) {
	t.Parallel()
	cfg, err := sim.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, err := sim.Listen(ctx, "127.0.0.1:0", cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	murl, err := MetricsURL(srv.URL() + "/v1")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := New(Config{URL: murl, Interval: MinInterval, Epoch: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	var samples []results.Sample
	done := make(chan error, 1)
	go func() { done <- sc.Run(sctx, func(s results.Sample) { samples = append(samples, s) }) }()

	// More streams than max_num_seqs, and more tokens than the KV cache
	// holds, so requests queue and get preempted.
	const streams, maxTokens = 12, 300
	var wg sync.WaitGroup
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"model":%q,"prompt":%q,"max_tokens":%d,"ignore_eos":true,"stream":true}`,
				cfg.ServedModelName, strings.Repeat(fmt.Sprintf("word%d ", i), 200), maxTokens)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/v1/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("stream: HTTP %d, %v", resp.StatusCode, err)
			}
		}()
	}
	wg.Wait()
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	if len(samples) < 3 {
		t.Fatalf("%d samples, want at least the first, one periodic and the final", len(samples))
	}
	var maxKV, maxRunning, maxWaiting float64
	for i, s := range samples {
		if !s.OK {
			t.Fatalf("sample %d failed: %s", i, s.Error)
		}
		maxKV = max(maxKV, s.Values[results.KVUsage])
		maxRunning = max(maxRunning, s.Values[results.Running])
		maxWaiting = max(maxWaiting, s.Values[results.Waiting])
	}
	last := samples[len(samples)-1]
	if missing := last.Missing(); len(missing) != 0 {
		t.Errorf("meanings missing from the simulator's page: %v (matched %v)", missing, last.Matched)
	}
	if maxKV <= 0.5 || maxKV > 1 || maxRunning <= 0 || maxRunning > float64(cfg.MaxNumSeqs) || maxWaiting <= 0 {
		t.Errorf("peaks: kv_usage %v, running %v, waiting %v; want the cache over half full, the batch busy and a queue", maxKV, maxRunning, maxWaiting)
	}
	// Eight running streams of about 700 tokens cannot share 3,072 KV
	// tokens: vLLM's scheduler must preempt.
	if last.Values[results.Preemptions] <= 0 {
		t.Errorf("no preemptions counted; want some")
	}
	if got := last.Values[results.GenerationTokens]; got != streams*maxTokens {
		t.Errorf("final generation_tokens = %v, want %d", got, streams*maxTokens)
	}
	if got := last.Histograms[results.E2E].Count; got != streams {
		t.Errorf("final e2e count = %v, want %d", got, streams)
	}
	var gen float64
	for _, iv := range results.Rates(samples) {
		gen += iv.Deltas[results.GenerationTokens]
		if len(iv.Resets) > 0 {
			t.Errorf("interval %v–%v: resets %v on a server that never restarted", iv.From, iv.To, iv.Resets)
		}
	}
	if want := last.Values[results.GenerationTokens] - samples[0].Values[results.GenerationTokens]; gen != want {
		t.Errorf("interval deltas sum to %v, want %v", gen, want)
	}
	t.Logf("%d samples; peaks kv_usage %.2f running %v waiting %v; preemptions %v",
		len(samples), maxKV, maxRunning, maxWaiting, last.Values[results.Preemptions])
}
