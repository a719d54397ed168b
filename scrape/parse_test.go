package scrape

import (
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"

	"github.com/servebench/servebench/internal/golden"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scrape/profile"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func goldenCheck(t *testing.T, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", filepath.FromSlash(t.Name())+".json"), got, *update)
}

func parseFile(t testing.TB, name, profile string) results.Reading {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := NewParser().Parse(f, profile)
	if err != nil {
		t.Fatalf("Parse(%s, %q): %v", name, profile, err)
	}
	return rd
}

// TestParseGolden reads one recorded-style page per profile (written from
// the documented metric names and formats) into stable meanings.
func TestParseGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, profile, wantProfile string
	}{
		{"vllm_v1", "vllm_v1.prom", "", profile.VLLM},
		{"vllm_v1_dp2", "vllm_v1_dp2.prom", "", profile.VLLM},
		{"vllm_v0_renamed", "vllm_v0_renamed.prom", "", profile.VLLM},
		{"vllm_transition_both", "vllm_transition_both.prom", profile.VLLM, profile.VLLM},
		{"sglang_dp2", "sglang_dp2.prom", "", profile.SGLang},
		{"tgi", "tgi.prom", "", profile.TGI},
		{"llamacpp", "llamacpp.prom", "", profile.LlamaCPP},
		{"llamacpp_2024", "llamacpp_2024.prom", profile.Auto, profile.LlamaCPP},
		{"lmdeploy_dp2", "lmdeploy_dp2.prom", "", profile.LMDeploy},
		{"vllm_v1_specdecode", "vllm_v1_specdecode.prom", "", profile.VLLM},
		{"dcgm_4gpu_k8s", "dcgm_4gpu_k8s.prom", profile.DCGM, profile.DCGM},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rd := parseFile(t, tc.file, tc.profile)
			if rd.Profile != tc.wantProfile {
				t.Errorf("profile = %q, want %q", rd.Profile, tc.wantProfile)
			}
			out, err := json.MarshalIndent(struct {
				results.Reading
				Missing []results.Meaning `json:"missing"`
			}{rd, rd.Missing()}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			goldenCheck(t, append(out, '\n'))
		})
	}
}

// TestParseMeanings checks the values that matter independently of the
// golden files: aggregation across engines, replica ranks counted once,
// renamed names, absent meanings.
func TestParseMeanings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file  string
		want        results.Values
		absent      []results.Meaning
		matched     map[results.Meaning]string
		engines     int
		engineWants map[string]results.Values
	}{
		{
			name: "vllm single engine", file: "vllm_v1.prom",
			want: results.Values{results.KVUsage: 0.4231, results.Running: 12, results.Waiting: 3, results.Preemptions: 2, results.PromptTokens: 262144,
				results.GenerationTokens: 98304, results.PrefixHits: 61440, results.PrefixQueries: 184320},
			matched: map[results.Meaning]string{results.KVUsage: "vllm:kv_cache_usage_perc", results.ITL: "vllm:inter_token_latency_seconds"},
		},
		{
			name: "vllm two engines: usage averaged, counts summed", file: "vllm_v1_dp2.prom",
			want: results.Values{results.KVUsage: 0.5, results.Running: 21, results.Waiting: 3, results.Preemptions: 2, results.PromptTokens: 393216,
				results.GenerationTokens: 163840, results.PrefixHits: 102400, results.PrefixQueries: 286720},
			engines: 2,
			engineWants: map[string]results.Values{
				"0": {results.KVUsage: 0.75, results.Running: 12, results.Preemptions: 2},
				"1": {results.KVUsage: 0.25, results.Running: 9, results.Preemptions: 0},
			},
		},
		{
			name: "vllm renamed V0 gauge and prefix counters", file: "vllm_v0_renamed.prom",
			want: results.Values{results.KVUsage: 0.618, results.PrefixHits: 4096, results.PrefixQueries: 9216},
			matched: map[results.Meaning]string{
				results.KVUsage:       "vllm:gpu_cache_usage_perc",
				results.PrefixHits:    "vllm:gpu_prefix_cache_hits_total",
				results.PrefixQueries: "vllm:gpu_prefix_cache_queries_total",
				results.ITL:           "vllm:time_per_output_token_seconds",
			},
		},
		{
			name: "vllm with both spellings prefers the current one", file: "vllm_transition_both.prom",
			want: results.Values{results.KVUsage: 0.618},
			matched: map[results.Meaning]string{
				results.KVUsage: "vllm:kv_cache_usage_perc", results.PrefixHits: "vllm:prefix_cache_hits_total",
				results.ITL: "vllm:inter_token_latency_seconds",
			},
		},
		{
			name: "sglang: dp ranks split, tp ranks repeat, stream label summed", file: "sglang_dp2.prom",
			want: results.Values{results.KVUsage: 0.62, results.Running: 48, results.Waiting: 4, results.Preemptions: 6, results.PromptTokens: 98304,
				results.GenerationTokens: 43008, results.PrefixHits: 32768, results.PrefixQueries: 98304},
			engines: 2,
			engineWants: map[string]results.Values{
				"0": {results.KVUsage: 0.81, results.Running: 30, results.Waiting: 4, results.Preemptions: 5},
				"1": {results.KVUsage: 0.43, results.Running: 18, results.Waiting: 0, results.Preemptions: 1},
			},
		},
		{
			name: "tgi: token counters from histogram sums, kv proxy ratio", file: "tgi.prom",
			want:    results.Values{results.KVUsage: 0.75, results.Running: 24, results.Waiting: 6, results.PromptTokens: 339968, results.GenerationTokens: 38400},
			absent:  []results.Meaning{results.Preemptions, results.PrefixHits, results.PrefixQueries, results.TTFT},
			matched: map[results.Meaning]string{results.KVUsage: "tgi_batch_current_max_tokens/tgi_batch_max_total_tokens"},
		},
		{
			name: "llamacpp has no KV gauge", file: "llamacpp.prom",
			want:   results.Values{results.Running: 4, results.Waiting: 2, results.PromptTokens: 18432, results.GenerationTokens: 6144},
			absent: []results.Meaning{results.KVUsage, results.Preemptions, results.PrefixHits, results.PrefixQueries, results.TTFT, results.ITL, results.E2E, results.QueueTime},
		},
		{
			name: "llamacpp before May 2025 exported one", file: "llamacpp_2024.prom",
			want: results.Values{results.KVUsage: 0.37, results.Running: 4},
		},
		{
			name: "lmdeploy two engines", file: "lmdeploy_dp2.prom",
			want:    results.Values{results.KVUsage: 0.62, results.Running: 30, results.Waiting: 2, results.PromptTokens: 100352, results.PrefixHits: 12288},
			absent:  []results.Meaning{results.Preemptions, results.PrefixQueries},
			engines: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rd := parseFile(t, tc.file, "")
			for m, want := range tc.want {
				got, ok := rd.Values[m]
				if !ok || !near(got, want) {
					t.Errorf("%s = %v (present %v), want %v", m, got, ok, want)
				}
			}
			for _, m := range tc.absent {
				if v, ok := rd.Values[m]; ok {
					t.Errorf("%s = %v, want absent", m, v)
				}
				if _, ok := rd.Histograms[m]; ok {
					t.Errorf("histogram %s present, want absent", m)
				}
				if _, ok := rd.Matched[m]; ok {
					t.Errorf("%s matched %q, want absent", m, rd.Matched[m])
				}
			}
			for m, want := range tc.matched {
				if got := rd.Matched[m]; got != want {
					t.Errorf("%s matched %q, want %q", m, got, want)
				}
			}
			if len(rd.Engines) != tc.engines {
				t.Errorf("%d engines, want %d", len(rd.Engines), tc.engines)
			}
			for e, vals := range tc.engineWants {
				for m, want := range vals {
					if got, ok := rd.Engines[e].Values[m]; !ok || !near(got, want) {
						t.Errorf("engine %s: %s = %v (present %v), want %v", e, m, got, ok, want)
					}
				}
			}
		})
	}
}

// TestParseHistograms checks that histograms keep their buckets, and that
// per-engine histograms add up to the aggregate.
func TestParseHistograms(t *testing.T) {
	t.Parallel()
	rd := parseFile(t, "vllm_v1_dp2.prom", "")
	agg := rd.Histograms[results.TTFT]
	e0, e1 := rd.Engines["0"].Histograms[results.TTFT], rd.Engines["1"].Histograms[results.TTFT]
	if agg.Count != 32 || e0.Count != 20 || e1.Count != 12 {
		t.Fatalf("ttft counts: aggregate %v, engines %v and %v; want 32, 20, 12", agg.Count, e0.Count, e1.Count)
	}
	if len(agg.Upper) != 22 || agg.Upper[0] != 0.001 || agg.Upper[21] != 2560 {
		t.Errorf("ttft bounds = %v, want vLLM's 22 finite results.TTFT buckets", agg.Upper)
	}
	for i := range agg.Cumulative {
		if agg.Cumulative[i] != e0.Cumulative[i]+e1.Cumulative[i] {
			t.Fatalf("bucket %v: aggregate %v != %v + %v", agg.Upper[i], agg.Cumulative[i], e0.Cumulative[i], e1.Cumulative[i])
		}
	}
	if !near(agg.Sum, e0.Sum+e1.Sum) {
		t.Errorf("sum %v != %v + %v", agg.Sum, e0.Sum, e1.Sum)
	}
	if p50, ok := agg.Quantile(0.5); !ok || p50 <= 0 || p50 > 2.5 {
		t.Errorf("ttft p50 = %v, %v; want within the fixture's 0.02..1.8 s spread", p50, ok)
	}

	tgi := parseFile(t, "tgi.prom", "")
	if h := tgi.Histograms[results.E2E]; h.Count != 150 || len(h.Upper) != 16 {
		t.Errorf("tgi e2e = %+v, want 150 observations in 16 finite buckets", h)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, page, profile string
		check               func(error) bool
	}{
		{"malformed line", "vllm:num_requests_running{engine=\"0\" 3\n", "", func(err error) bool {
			var pe expfmt.ParseError
			return errors.As(err, &pe) && pe.Line == 1
		}},
		{"no engine metrics", "# TYPE go_goroutines gauge\ngo_goroutines 12\n", "", func(err error) bool {
			return errors.Is(err, ErrUnknownEngine)
		}},
		{"unknown profile", "", "triton", func(err error) bool {
			return err != nil && strings.Contains(err.Error(), `unknown profile "triton"`)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewParser().Parse(strings.NewReader(tc.page), tc.profile)
			if !tc.check(err) {
				t.Errorf("Parse error = %v", err)
			}
		})
	}
}

// TestParseExplicitProfile: a named profile overrides detection, even when
// it finds nothing on the page.
func TestParseExplicitProfile(t *testing.T) {
	t.Parallel()
	rd := parseFile(t, "vllm_v1.prom", profile.SGLang)
	if rd.Profile != profile.SGLang || len(rd.Values) != 0 || len(rd.Matched) != 0 {
		t.Errorf("sglang profile on a vLLM page = %+v, want an empty sglang reading", rd)
	}
	engine := 0
	for _, m := range results.Meanings() {
		if !m.GPU() && !m.Spec() {
			engine++
		}
	}
	if got := len(rd.Missing()); got != engine {
		t.Errorf("Missing() has %d meanings, want all %d engine meanings", got, engine)
	}
}

// TestParseNonFinite: NaN and infinite values are unknown, never encoded.
func TestParseNonFinite(t *testing.T) {
	t.Parallel()
	page := `# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0"} NaN
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0"} +Inf
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0"} 1.7976931348623157e308
vllm:num_requests_waiting{engine="1"} 1.7976931348623157e308
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0"} 5
`
	rd, err := NewParser().Parse(strings.NewReader(page), "")
	if err != nil {
		t.Fatal(err)
	}
	want := results.Values{results.PromptTokens: 5}
	if !reflect.DeepEqual(rd.Values, want) {
		t.Errorf("values = %v, want %v", rd.Values, want)
	}
	if _, err := json.Marshal(rd); err != nil {
		t.Errorf("marshal: %v", err)
	}
}

func TestProfiles(t *testing.T) {
	t.Parallel()
	for _, p := range profile.All() {
		got, err := profile.ByName(p.Name)
		if err != nil || got.Name != p.Name {
			t.Errorf("profile.ByName(%q) = %v, %v", p.Name, got.Name, err)
		}
		for m := range p.Sources {
			if m.Behaviour() == 0 {
				t.Errorf("profile %s: unknown meaning %q", p.Name, m)
			}
		}
	}
	if p, _ := profile.ByName(profile.LlamaCPP); p.Provides(results.Preemptions) {
		t.Error("llamacpp provides preemptions; it exports none")
	}
}

// near reports whether a and b agree up to rounding.
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}
