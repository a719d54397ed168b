package scenario

import (
	"bytes"
	"strings"
	"testing"
)

const setBase = `name: base
prompts:
  input_tokens: {dist: fixed, value: 64}
load:
  stages:
    - concurrency: 4
      requests: 10
`

func TestSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		sets    []string
		check   func(*Scenario) bool
		wantErr string // substring of the error; "" for success
	}{
		{name: "int", sets: []string{"load.stages[0].concurrency=16"},
			check: func(sc *Scenario) bool { return sc.Load.Stages[0].Concurrency == 16 }},
		{name: "duration", sets: []string{"load.max_duration=90s"},
			check: func(sc *Scenario) bool { return sc.Load.MaxDuration.String() == "1m30s" }},
		{name: "string taken literally", sets: []string{"request.system=yes: no"},
			check: func(sc *Scenario) bool { return sc.Request.System == "yes: no" }},
		{name: "quoted string", sets: []string{`target.model="123"`},
			check: func(sc *Scenario) bool { return sc.Target.Model == "123" }},
		{name: "url", sets: []string{"target.url=http://127.0.0.1:8000"},
			check: func(sc *Scenario) bool { return sc.Target.URL == "http://127.0.0.1:8000" }},
		{name: "bool pointer", sets: []string{"target.stream=false"},
			check: func(sc *Scenario) bool { return !*sc.Target.Stream }},
		{name: "temperature zero is kept", sets: []string{"request.temperature=0"},
			check: func(sc *Scenario) bool { return sc.Request.Temperature != nil && *sc.Request.Temperature == 0 }},
		{name: "dist shorthand", sets: []string{"prompts.input_tokens=512"},
			check: func(sc *Scenario) bool { return *sc.Prompts.InputTokens == Dist{Dist: DistFixed, Value: 512} }},
		{name: "dist mapping", sets: []string{"prompts.output_tokens={dist: uniform, min: 1, max: 9}"},
			check: func(sc *Scenario) bool { return *sc.Prompts.OutputTokens == Dist{Dist: DistUniform, Min: 1, Max: 9} }},
		{name: "nested field of a default", sets: []string{"prompts.output_tokens.value=33"},
			check: func(sc *Scenario) bool { return sc.Prompts.OutputTokens.Value == 33 }},
		{name: "extra key", sets: []string{"request.extra.top_k=5", "request.extra.chat_template_kwargs={enable_thinking: false}"},
			check: func(sc *Scenario) bool {
				return sc.Request.Extra["top_k"] == 5 && sc.Request.Extra["chat_template_kwargs"].(map[string]any)["enable_thinking"] == false
			}},
		{name: "append a stage", sets: []string{"load.stages[1]={rate: 5, requests: 20}"},
			check: func(sc *Scenario) bool {
				st := sc.Load.Stages[1]
				return st.RatePerSec == 5 && st.Arrival == ArrivalPoisson && st.Name == "stage-1"
			}},
		{name: "closed to open gets open defaults", sets: []string{"load.stages[0].concurrency=0", "load.stages[0].rate=8"},
			check: func(sc *Scenario) bool {
				st := sc.Load.Stages[0]
				return st.RatePerSec == 8 && st.Concurrency == 0 && st.MaxConcurrency == DefaultMaxConcurrency
			}},
		{name: "empty resets to default", sets: []string{"target.api=completions", "target.api="},
			check: func(sc *Scenario) bool { return sc.Target.API == "chat" }},

		{name: "unknown field", sets: []string{"load.stages[0].concurency=3"}, wantErr: `--set: load.stages[0].concurency: unknown field "concurency" in load.stages[0] (did you mean concurrency?)`},
		{name: "unknown top-level", sets: []string{"nmae=x"}, wantErr: `unknown field "nmae" in the scenario (did you mean name?)`},
		{name: "index out of range", sets: []string{"load.stages[3].rate=1"}, wantErr: "index 3 out of range: load.stages has 1 elements"},
		{name: "bad index", sets: []string{"load.stages[x].rate=1"}, wantErr: "bad index"},
		{name: "index on a non-list", sets: []string{"load[0]=1"}, wantErr: "load is not a list"},
		{name: "below a leaf", sets: []string{"name.first=x"}, wantErr: "name is not a mapping"},
		{name: "too deep in extra", sets: []string{"request.extra.a.b=1"}, wantErr: "only one key below request.extra can be set"},
		{name: "not path=value", sets: []string{"load.max_duration"}, wantErr: `--set: want path=value, got "load.max_duration"`},
		{name: "empty path", sets: []string{"=3"}, wantErr: "empty path"},
		{name: "wrong type", sets: []string{"load.stages[0].requests=many"}, wantErr: `--set: load.stages[0].requests: want an integer, got "many"`},
		{name: "duration without unit", sets: []string{"load.max_duration=30"}, wantErr: `want a duration with a unit`},
		{name: "bad YAML", sets: []string{"load.stages[0]={rate: [}"}, wantErr: "is not YAML"},
		{name: "unknown key in a value", sets: []string{"load.stages[0]={rate: 5, requets: 3}"}, wantErr: "--set: load.stages[0].requets: unknown field (did you mean requests?)"},
		{name: "invalid result names --set", sets: []string{"load.stages[0].concurrency=-3"}, wantErr: "--set: load.stages[0].concurrency: want 1 to 100000, got -3"},
		{name: "invalid result names the file", sets: []string{"load.stages[0].requests=0"}, wantErr: "base.yaml:6: load.stages[0]: needs a bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc, err := Parse("base.yaml", []byte(setBase))
			if err != nil {
				t.Fatal(err)
			}
			before, _ := sc.Resolved()
			err = sc.Override(tc.sets...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if after, _ := sc.Resolved(); string(after) != string(before) {
					t.Errorf("a failed override changed the scenario:\n%s\n%s", before, after)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(sc) {
				b, _ := sc.Resolved()
				t.Errorf("override not applied: %s", b)
			}
		})
	}
}

// TestSetSequence checks that single Sets compose like one Override and
// that the scenario as written (not the resolved one) is what they modify.
func TestSetSequence(t *testing.T) {
	t.Parallel()
	sc, err := Parse("base.yaml", []byte(setBase))
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Set("load.stages[0].rate", "5"); err == nil {
		t.Fatal("setting rate on a closed-loop stage succeeded")
	}
	for _, kv := range [][2]string{{"load.stages[1]", "{rate: 5, requests: 5}"}, {"load.stages[1].arrival", "constant"}, {"prompts.seed", "9"}} {
		if err := sc.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if st := sc.Load.Stages[1]; st.Arrival != ArrivalConstant || st.RatePerSec != 5 || sc.Prompts.Seed != 9 {
		t.Errorf("after sets: %+v seed %d", st, sc.Prompts.Seed)
	}
}

// FuzzSet (issue 22, item 10) applies arbitrary --set path=value pairs to a
// valid scenario: Override must never panic, must leave the scenario as it
// was when it refuses, and must leave one that validates when it accepts.
func FuzzSet(f *testing.F) {
	const doc = "name: fuzz\nprompts: {input_tokens: 64, output_tokens: 8}\nload: {stages: [{concurrency: 2, requests: 4}, {rate: 5, duration: 1s}]}\n"
	for _, s := range [][2]string{
		{"load.stages[0].concurrency", "64"}, {"prompts.input_tokens", "{dist: uniform, min: 1, max: 9}"},
		{"request.extra.top_k", "5"}, {"request.extra.x", "[[[[1]]]]"}, {"load.stages[2]", "{rate: 1, requests: 1}"},
		{"target.headers.X-Tenant", "a"}, {"load.stages[0].duration", "30s"}, {"prompts.dataset.max_line_mib", "-1"},
		{"load.stages[1]", ""}, {"sweep.parameters.x", "[1, 2]"}, {"a.b[", "1"}, {"request.extra", "{<<: *x}"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, path, value string) {
		sc, err := Parse("fuzz.yaml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		before, err := sc.Resolved()
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.Set(path, value); err != nil {
			after, _ := sc.Resolved()
			if !bytes.Equal(before, after) {
				t.Fatalf("a refused --set %s=%q changed the scenario", path, value)
			}
			return
		}
		if err := sc.Validate(); err != nil {
			t.Fatalf("--set %s=%q accepted a scenario that does not validate: %v", path, value, err)
		}
		if _, err := sc.Resolved(); err != nil {
			t.Fatalf("--set %s=%q: the resolved scenario does not encode: %v", path, value, err)
		}
	})
}
