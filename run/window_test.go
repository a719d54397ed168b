package run

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// counterAt interpolates the server's generation-token counter at t from
// the scrape samples (sorted by time).
func counterAt(samples []results.Sample, t time.Duration) (float64, bool) {
	i := sort.Search(len(samples), func(i int) bool { return samples[i].At >= t })
	if i == 0 || i == len(samples) {
		return 0, false
	}
	a, b := samples[i-1], samples[i]
	va, vb := a.Values[results.GenerationTokens], b.Values[results.GenerationTokens]
	return va + (vb-va)*float64(t-a.At)/float64(b.At-a.At), true
}

// TestThroughputWindow is issue 9's case: a server that queues (the
// simulator with max_num_seqs=2) under 16 closed-loop workers, with and
// without 16 warmup requests. The output tok/s of the stage must be within
// 2 % of the rate the server's own generation counter moved at over the
// same window (first measured send to last measured end): warmup requests
// still streaming inside the window count, as they do for the server.
func TestThroughputWindow(t *testing.T) {
	t.Parallel()
	for _, warmup := range []int{0, 16} {
		t.Run(fmt.Sprintf("warmup=%d", warmup), func(t *testing.T) {
			t.Parallel()
			doc := fmt.Sprintf(`name: window
target: {url: "sim://tiny?max_num_seqs=2&seed=3"}
prompts: {input_tokens: 64, output_tokens: 48}
scrape: {interval: 100ms}
load: {stages: [{name: queued, concurrency: 16, requests: %d, warmup: {requests: %d}}]}
`, 48+warmup, warmup)
			sc, err := scenario.Parse("window.yaml", []byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			sum, err := Run(context.Background(), sc, Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			f, err := results.OpenFiles(filepath.Join(dir, FileResults))
			if err != nil {
				t.Fatal(err)
			}
			var samples []results.Sample
			var from, to time.Duration
			for rec, err := range f.All() {
				if err != nil {
					t.Fatal(err)
				}
				if s := rec.Sample; s != nil && s.OK {
					samples = append(samples, *s)
				}
				if r := rec.Result; r != nil && !r.Warmup {
					if from == 0 || r.Sent < from {
						from = r.Sent
					}
					to = max(to, r.End)
				}
			}
			sort.Slice(samples, func(i, j int) bool { return samples[i].At < samples[j].At })
			c0, ok0 := counterAt(samples, from)
			c1, ok1 := counterAt(samples, to)
			if !ok0 || !ok1 {
				t.Fatalf("no scrapes around the window [%v, %v]", from, to)
			}
			server := (c1 - c0) / (to - from).Seconds()
			st := sum.Stages[0]
			t.Logf("window %.2f s: client %.1f tok/s, server counter %.1f tok/s (%+.2f %%); %d measured, %d warmup",
				st.Duration, st.OutputTokensPerSec, server, 100*(st.OutputTokensPerSec/server-1), st.Requests.OK, st.Requests.Warmup)
			if d := math.Abs(st.OutputTokensPerSec/server - 1); d > 0.02 {
				t.Errorf("output tok/s %.1f is %.1f %% from the server's %.1f", st.OutputTokensPerSec, 100*d, server)
			}
		})
	}
}
