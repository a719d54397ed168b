package scenario

import (
	"context"
	"errors"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// oneStage is a scenario file of one closed-loop stage.
const oneStage = `name: one
target: {url: "sim://tiny", model: m}
prompts: {input_tokens: {dist: uniform, min: 100, max: 200}, output_tokens: 50}
load: {stages: [{name: c8, concurrency: 8, requests: 96, duration: 20s}]}
`

// TestFromFlags builds scenarios from flags alone: the stage, its name,
// the prompts, the bounds, and what is missing.
func TestFromFlags(t *testing.T) {
	t.Parallel()
	sc, err := FromFlags(Flags{Target: "sim://tiny", Concurrency: 4, Requests: 20, InputTokens: 128, OutputTokens: 32})
	if err != nil {
		t.Fatal(err)
	}
	st := sc.Load.Stages
	if sc.Name != FlagsName || sc.Target.URL != "sim://tiny" || len(st) != 1 || st[0].Name != "concurrency-4" || st[0].Concurrency != 4 ||
		st[0].Requests != 20 || st[0].Open() || *sc.Prompts.InputTokens != (Dist{Dist: DistFixed, Value: 128}) ||
		*sc.Prompts.OutputTokens != (Dist{Dist: DistFixed, Value: 32}) {
		t.Errorf("closed loop from flags: %+v, prompts %+v %+v", sc.Load.Stages, sc.Prompts.InputTokens, sc.Prompts.OutputTokens)
	}

	sc, err = FromFlags(Flags{Target: "http://127.0.0.1:8000", Model: "m", Rate: 2.5, Arrival: ArrivalConstant, Duration: 45 * time.Minute,
		InputTokens: 1024, OutputTokens: 256}, "load.stages[0].max_concurrency=8")
	if err != nil {
		t.Fatal(err)
	}
	st = sc.Load.Stages
	if st[0].Name != "rate-2.5" || st[0].RatePerSec != 2.5 || st[0].Arrival != ArrivalConstant || st[0].MaxConcurrency != 8 ||
		st[0].Duration.D() != 45*time.Minute || sc.Load.MaxDuration.D() != 46*time.Minute || sc.Target.Model != "m" {
		t.Errorf("open loop from flags: %+v, max_duration %s", st[0], sc.Load.MaxDuration)
	}

	for _, tc := range []struct {
		name string
		f    Flags
		sets []string
		err  string
	}{
		{"nothing", Flags{}, nil, "a run without a scenario file needs --target URL (sim://tiny for the built-in simulator); --concurrency N (closed loop) or --rate R (open loop, requests per second); --requests N, --duration D or both; --input-tokens N (or --dataset FILE); --output-tokens N"},
		{"both loops", Flags{Target: "sim://tiny", Concurrency: 4, Rate: 2, Requests: 5, InputTokens: 8, OutputTokens: 8}, nil, "--concurrency 4 and --rate 2: choose"},
		{"arrival of a closed loop", Flags{Target: "sim://tiny", Concurrency: 4, Arrival: "gamma", Requests: 5, InputTokens: 8, OutputTokens: 8}, nil,
			"--arrival: load.stages[0].arrival: applies to open-loop stages (rate) only"},
		{"negative requests", Flags{Target: "sim://tiny", Concurrency: 4, Requests: -5, InputTokens: 8, OutputTokens: 8}, nil,
			"--requests: load.stages[0].requests: must be ≥ 0, got -5"},
		{"a remote target", Flags{Target: "http://10.0.0.7:8000", Concurrency: 4, Requests: 5, InputTokens: 8, OutputTokens: 8}, nil, "--target: target.url"},
		{"a bad --set", Flags{Target: "sim://tiny", Concurrency: 4, Requests: 5, InputTokens: 8, OutputTokens: 8}, []string{"load.stages[0].rat=3"},
			`--set: load.stages[0].rat: unknown field "rat"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := FromFlags(tc.f, tc.sets...); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v, want one saying %q", err, tc.err)
			}
		})
	}
}

// TestApplyFlagsPrecedence checks file < flags < --set on a one-stage
// file, the switch between loops, and the refusal of load flags on a
// file of several stages.
func TestApplyFlagsPrecedence(t *testing.T) {
	t.Parallel()
	load := func(t *testing.T, src string) *Scenario {
		sc, err := Parse("one.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	sc := load(t, oneStage)
	if err := sc.ApplyFlags(Flags{Concurrency: 4, Requests: 20, InputTokens: 64, Model: "flag-model"},
		"load.stages[0].concurrency=2", "target.model=set-model"); err != nil {
		t.Fatal(err)
	}
	st := sc.Load.Stages[0]
	switch {
	case st.Name != "c8" || st.Duration.D() != 20*time.Second: // the file's, untouched by flags
		t.Errorf("the file's name and duration lost: %+v", st)
	case st.Requests != 20: // the flag's, over the file's
		t.Errorf("requests %d, want --requests 20", st.Requests)
	case st.Concurrency != 2 || sc.Target.Model != "set-model": // --set's, over the flag's
		t.Errorf("concurrency %d, model %q: --set must win", st.Concurrency, sc.Target.Model)
	case *sc.Prompts.InputTokens != (Dist{Dist: DistFixed, Value: 64}) || sc.Prompts.OutputTokens.Value != 50:
		t.Errorf("prompts %+v %+v", sc.Prompts.InputTokens, sc.Prompts.OutputTokens)
	}

	// --rate turns the closed loop into an open one (with its defaults),
	// --concurrency turns it back.
	sc = load(t, oneStage)
	if err := sc.ApplyFlags(Flags{Rate: 3}); err != nil {
		t.Fatal(err)
	}
	if st := sc.Load.Stages[0]; st.Concurrency != 0 || st.RatePerSec != 3 || st.Arrival != ArrivalPoisson || st.MaxConcurrency != DefaultMaxConcurrency {
		t.Errorf("--rate 3 over a closed loop: %+v", st)
	}
	if err := sc.ApplyFlags(Flags{Concurrency: 5}); err != nil {
		t.Fatal(err)
	}
	if st := sc.Load.Stages[0]; st.Concurrency != 5 || st.Open() || st.Arrival != "" || st.MaxConcurrency != 0 {
		t.Errorf("--concurrency 5 over an open loop: %+v", st)
	}

	// Several stages: the load flags are refused, the others apply.
	two := strings.Replace(oneStage, "stages: [{name: c8, concurrency: 8, requests: 96, duration: 20s}]",
		"stages: [{concurrency: 8, requests: 9}, {rate: 4, requests: 9}]", 1)
	sc = load(t, two)
	if err := sc.ApplyFlags(Flags{Requests: 5}); err == nil || !strings.Contains(err.Error(), "one.yaml has 2 stages and the load flags") {
		t.Errorf("load flags on two stages: %v", err)
	}
	if err := sc.ApplyFlags(Flags{OutputTokens: 7}); err != nil || sc.Prompts.OutputTokens.Value != 7 {
		t.Errorf("--output-tokens on two stages: %v, %+v", err, sc.Prompts.OutputTokens)
	}
}

// TestFlagsDataset checks that --dataset is taken relative to the working
// directory, not to the scenario file, and recorded absolute.
func TestFlagsDataset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := filepath.Join(dir, "prompts.jsonl")
	if err := os.WriteFile(data, []byte(`{"prompt": "hello there", "output_tokens": 4}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(".", data)
	if err != nil {
		t.Skip("the temporary directory has no path relative to the working directory")
	}
	sc, err := Parse(filepath.Join(dir, "sub", "one.yaml"), []byte(oneStage))
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.ApplyFlags(Flags{Dataset: rel}); err != nil {
		t.Fatal(err)
	}
	if sc.DatasetPath() != data || sc.Prompts.Dataset.Format != FormatJSONL {
		t.Errorf("dataset %q (%s), want %q", sc.DatasetPath(), sc.Prompts.Dataset.Format, data)
	}
}

// TestDistString checks the few words a dry run's plan describes lengths in.
func TestDistString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    *Dist
		want string
	}{
		{&Dist{Dist: DistFixed, Value: 128}, "128"},
		{&Dist{Dist: DistUniform, Min: 64, Max: 128}, "uniform 64–128"},
		{&Dist{Dist: DistNormal, Mean: 512, Stddev: 64, Min: 256, Max: 704}, "normal mean 512 sd 64 in 256–704"},
		{nil, "none"},
	} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.d, got, tc.want)
		}
	}
}

// FuzzHeaderFlag (issue 22, item 10) gives --header arbitrary values: one
// without a name or a value ("Name:value") is refused naming --header (an
// empty value would have reset the header silently); one with both sets
// target.headers[Name] to the trimmed value, or is refused as a header
// (a name or value HTTP cannot carry), never a panic.
func FuzzHeaderFlag(f *testing.F) {
	// The last four were found by the fuzzer: "#…" and "!…" were read as
	// YAML (a comment, a tag) and the header silently dropped; a name with
	// "[" or "." was read as a path.
	for _, h := range []string{"X-Tenant:bench", "Authorization: Bearer sk-1", ":v", "novalue", "X: ", "a:b:c", "X-\x00:y", "Ä:ü",
		"Y:!00", "X-Key:#abc", "0[:0", "X.Y:v"} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, h string) {
		sc, err := FromFlags(Flags{Target: "sim://tiny", Concurrency: 1, Requests: 1, InputTokens: 8, OutputTokens: 4, Headers: []string{h}})
		name, value, ok := strings.Cut(h, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		switch {
		case !ok || name == "" || value == "":
			if err == nil || !strings.Contains(err.Error(), "--header") {
				t.Fatalf("--header %q: %v, want a refusal naming --header", h, err)
			}
		case err == nil:
			if got, ok := sc.Target.Headers[name]; !ok || got != value {
				t.Fatalf("--header %q set headers %v, want %q: %q", h, sc.Target.Headers, name, value)
			}
			// net/http checks a request's headers before it dials: a
			// header it refuses is one no request could carry.
			req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:9/", nil)
			req.Header.Set(name, value)
			tr := &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return nil, errNoDial }}
			if _, err := tr.RoundTrip(req); !errors.Is(err, errNoDial) {
				t.Fatalf("--header %q accepted a header net/http refuses: %v", h, err)
			}
		}
	})
}

// errNoDial is FuzzHeaderFlag's dialer's refusal: no connection is made.
var errNoDial = errors.New("no dial in this test")

// TestIssue22HeaderLiteral (issue 22, item 10, found by FuzzHeaderFlag):
// --header values were read as YAML and names as paths, so "X-Key:#abc"
// sent no header at all. Both are taken as written now.
func TestIssue22HeaderLiteral(t *testing.T) {
	t.Parallel()
	sc, err := FromFlags(Flags{Target: "sim://tiny", Concurrency: 1, Requests: 1, InputTokens: 8, OutputTokens: 4,
		Headers: []string{"X-Key:#abc", "X-Tag: !v1", "X.Y: [1]"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"X-Key": "#abc", "X-Tag": "!v1", "X.Y": "[1]"}
	if !maps.Equal(sc.Target.Headers, want) {
		t.Errorf("headers %v, want %v", sc.Target.Headers, want)
	}
	for _, bad := range []string{"0[:0", "X:", "X-\x00:y"} {
		if _, err := FromFlags(Flags{Target: "sim://tiny", Concurrency: 1, Requests: 1, InputTokens: 8, OutputTokens: 4, Headers: []string{bad}}); err == nil {
			t.Errorf("--header %q accepted", bad)
		}
	}
}
