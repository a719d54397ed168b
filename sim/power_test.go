package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func presetWith(t *testing.T, name string, kv ...string) Config {
	t.Helper()
	c, err := Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		if err := c.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestEnergyIsThePowerModel: the engine's energy counter is the model's
// power integrated over its steps and the idle time between them,
// computed here from the steps themselves, at any moment.
func TestEnergyIsThePowerModel(t *testing.T) {
	t.Parallel()
	cfg := presetWith(t, "tiny", "gpus=2", "idle_power_w=80", "max_power_w=400", "jitter_frac=0")
	s := newVSim(t, cfg)
	var want float64
	last := s.start
	s.onStep = func(b *Batch) {
		occ := math.Min(1, math.Max(float64(len(b.Reqs))/float64(cfg.MaxNumSeqs), float64(b.NumTokens())/float64(cfg.MaxNumBatchedTokens)))
		want += 2 * 80 * b.Start.Sub(last).Seconds()
		want += 2 * (80 + 320*occ) * b.Duration().Seconds()
		last = b.End
	}
	for i := range 6 {
		s.at(time.Duration(i)*700*time.Millisecond, &Request{ID: "r", Prompt: ids(100+i*50, 0, uint32(i)), MaxTokens: 60, IgnoreEOS: true})
	}
	s.run(time.Hour, 100_000)
	s.clk.Set(s.clk.Now().Add(3 * time.Second)) // idle after the load
	want += 2 * 80 * s.clk.Now().Sub(last).Seconds()
	got, busy := s.e.Energy()
	if math.Abs(got-want) > 1e-6*want || busy <= 0 {
		t.Errorf("energy %.6f J (busy %v), want %.6f J from the steps", got, busy, want)
	}
	var m GPUMeter
	r := m.Read(s.e)
	if r.EnergyJ != got/2 || r.LimitW != 400 {
		t.Errorf("per-GPU reading %+v, want half of %.3f J and the 400 W limit", r, got)
	}
	s.clk.Set(s.clk.Now().Add(time.Second))
	if r := m.Read(s.e); math.Abs(r.PowerW-80) > 1e-9 || r.Util != 0 {
		t.Errorf("idle second: %+v, want 80 W a GPU and no utilisation", r)
	}
	var page bytes.Buffer
	if err := WriteDCGM(&page, r, cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`DCGM_FI_DEV_POWER_USAGE{gpu="1",`, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter", `DCGM_FI_DEV_GPU_UTIL{gpu="0",`} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("page lacks %q:\n%s", want, page.String())
		}
	}
}

// TestSpeculativeCounters: every decode step of a request proposes its
// draft and gains the accepted tokens plus one; the counters say so
// exactly, and a draft that always hits gains k + 1 tokens a step.
func TestSpeculativeCounters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		acc  string
	}{{"always", "1"}, {"sometimes", "0.6"}} {
		decay := "0.9"
		if tc.acc == "1" {
			decay = "1"
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := presetWith(t, "tiny", "num_speculative_tokens=3", "draft_acceptance="+tc.acc, "draft_acceptance_decay="+decay)
			s := newVSim(t, cfg)
			steps := map[*Request]int{}
			s.onOut = func(o Output) bool { steps[o.Req]++; return true }
			var reqs []*Request
			for i := range 4 {
				r := &Request{ID: "r", Prompt: ids(50, 0, uint32(i)), MaxTokens: 101, IgnoreEOS: true}
				reqs = append(reqs, r)
				s.at(0, r)
			}
			s.run(time.Hour, 100_000)
			st := s.e.Stats()
			var decodeSteps int64
			for _, r := range reqs {
				if r.OutputTokens() != 101 {
					t.Fatalf("request ended with %d tokens, want 101", r.OutputTokens())
				}
				decodeSteps += int64(steps[r] - 1)
			}
			// Each decode step gains 1 + accepted; the first token's step drafts nothing.
			if st.Preemptions != 0 {
				t.Fatalf("%d preemptions: a recomputed request's steps are not all decodes", st.Preemptions)
			}
			if got := st.GenerationTokens - 4 - decodeSteps; got != st.SpecAccepted {
				t.Errorf("accepted %d, but the decode steps gained %d beyond one each", st.SpecAccepted, got)
			}
			var perPos int64
			for _, n := range st.SpecAcceptedPerPos {
				perPos += n
			}
			if perPos != st.SpecAccepted || st.SpecDrafts > decodeSteps || st.SpecDraftTokens > 3*st.SpecDrafts {
				t.Errorf("drafts %d tokens %d accepted %d per position %v over %d decode steps", st.SpecDrafts, st.SpecDraftTokens, st.SpecAccepted, st.SpecAcceptedPerPos, decodeSteps)
			}
			if tc.acc == "1" && decodeSteps != 4*25 {
				t.Errorf("%d decode steps, want 25 a request (100 tokens, 4 a step)", decodeSteps)
			}
			var page bytes.Buffer
			if err := WriteMetrics(&page, st, cfg); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(page.String(), `vllm:spec_decode_num_accepted_tokens_per_pos_total{position="2",engine="0"`) {
				t.Errorf("page lacks the per-position counter")
			}
		})
	}
}

// TestSpeculativeStream: over HTTP, a step's accepted tokens arrive as one
// chunk, whose continuous usage counts them all; the GPU page is served.
func TestSpeculativeStream(t *testing.T) {
	t.Parallel()
	s := startTiny(t, "num_speculative_tokens=3", "draft_acceptance=1", "max_power_w=300", "idle_power_w=60")
	resp := post(t, context.Background(), s.URL()+"/v1/completions", map[string]any{
		"model": s.Config().ServedModelName, "prompt": "hello there", "max_tokens": 41, "ignore_eos": true, "stream": true,
		"stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true}})
	defer resp.Body.Close()
	var counts []int
	prev := 0
	for _, ev := range sseEvents(t, resp.Body) {
		var c chunk
		if ev == "[DONE]" || json.Unmarshal([]byte(ev), &c) != nil || len(c.Choices) == 0 || c.Usage == nil {
			continue
		}
		counts = append(counts, c.Usage.CompletionTokens-prev)
		prev = c.Usage.CompletionTokens
	}
	// The first token, then 40 in steps of 4.
	if want := []int{1, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}; !slices.Equal(counts, want) {
		t.Errorf("tokens per chunk = %v, want %v", counts, want)
	}
	page, err := http.Get(s.URL() + PathDCGM)
	if err != nil {
		t.Fatal(err)
	}
	defer page.Body.Close()
	body, _ := io.ReadAll(page.Body)
	if page.StatusCode != 200 || !strings.Contains(string(body), "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\"") {
		t.Errorf("GET %s: %d\n%s", PathDCGM, page.StatusCode, body)
	}
}
