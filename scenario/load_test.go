package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/servebench/servebench/internal/golden"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func goldenCheck(t *testing.T, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", golden.Name(t)+".golden"), got, *update)
}

// TestInvalid loads every file in testdata/invalid and compares all the
// messages with one golden file: together they cover every message the
// loader and Validate produce.
func TestInvalid(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	var out bytes.Buffer
	for _, f := range files {
		sc, err := Load(f)
		if err == nil {
			t.Errorf("%s: loaded without error: %+v", f, sc)
			continue
		}
		out.WriteString("== " + filepath.Base(f) + "\n")
		for _, e := range unwrapAll(err) {
			var fe *FieldError
			if !errors.As(e, &fe) {
				t.Errorf("%s: %T is not a *FieldError: %v", f, e, e)
			} else if fe.File != f {
				t.Errorf("%s: error names file %q", f, fe.File)
			}
			out.WriteString(e.Error() + "\n")
		}
	}
	goldenCheck(t, out.Bytes())
}

func unwrapAll(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// TestScenariosDir checks that every user-facing scenario loads.
func TestScenariosDir(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			if _, err := Load(f); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestResolved checks the resolved (defaults applied) JSON of the valid
// test scenarios against golden files.
func TestResolved(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"full", "minimal", "dataset"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc, err := Load(filepath.Join("testdata", "valid", name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			b, err := sc.Resolved()
			if err != nil {
				t.Fatal(err)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, b, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			goldenCheck(t, pretty.Bytes())

			// The resolved JSON decodes back into the same scenario.
			var back Scenario
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			back.src, back.raw = sc.src, sc.raw
			if !reflect.DeepEqual(jsonNumbers(t, &back), jsonNumbers(t, sc)) {
				t.Errorf("round trip differs:\n%+v\n%+v", back, *sc)
			}
		})
	}
}

// jsonNumbers re-encodes v so that maps decoded from YAML (int) and JSON
// (float64) compare equal.
func jsonNumbers(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	return x
}

func TestResolvedHoldsNoSecret(t *testing.T) {
	t.Parallel()
	sc, err := Parse("s.yaml", []byte("name: s\ntarget: {url: 'http://127.0.0.1:1', api_key_env: MY_KEY}\nload: {stages: [{concurrency: 1, requests: 1}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := sc.Resolved()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"api_key_env":"MY_KEY"`)) {
		t.Errorf("resolved scenario lacks the key's variable name: %s", b)
	}
	// A key pasted where the variable name goes is refused, not echoed.
	_, err = Parse("s.yaml", []byte("name: s\ntarget: {api_key_env: 'sk-abc123'}\nload: {stages: [{concurrency: 1, requests: 1}]}\n"))
	if err == nil || strings.Contains(err.Error(), "sk-abc123") {
		t.Errorf("a key-like api_key_env: err = %v", err)
	}
}

// TestDefaultsAndValidate checks that Defaults is idempotent and that
// Validate never changes the scenario.
func TestDefaultsAndValidate(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"testdata/valid/full.yaml", "testdata/valid/minimal.yaml", "../scenarios/quickstart.yaml"} {
		sc, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		before, _ := sc.Resolved()
		sc.Defaults()
		if err := sc.Validate(); err != nil {
			t.Fatal(err)
		}
		after, _ := sc.Resolved()
		if !bytes.Equal(before, after) {
			t.Errorf("%s: Defaults or Validate changed the scenario:\n%s\n%s", f, before, after)
		}
	}
	// Validate on an invalid scenario leaves it as it was.
	sc := &Scenario{Load: LoadSpec{Stages: []Stage{{RatePerSec: 5}}}}
	before, _ := json.Marshal(sc)
	if err := sc.Validate(); err == nil {
		t.Fatal("Validate accepted a scenario without defaults")
	}
	after, _ := json.Marshal(sc)
	if !bytes.Equal(before, after) {
		t.Errorf("Validate changed the scenario:\n%s\n%s", before, after)
	}
}

func TestDefaultsForHandBuiltScenario(t *testing.T) {
	t.Parallel()
	sc := &Scenario{Name: "code", Load: LoadSpec{Stages: []Stage{{RatePerSec: 5, Requests: 10}, {Concurrency: 2, Requests: 4}}}}
	sc.Defaults()
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	st := sc.Load.Stages[0]
	if st.Arrival != ArrivalPoisson || st.MaxConcurrency != DefaultMaxConcurrency || st.Name != "stage-0" {
		t.Errorf("open stage defaults: %+v", st)
	}
	if sc.Target.URL != DefaultURL || !*sc.Target.Stream || sc.Prompts.InputTokens.Value != DefaultInputTokens {
		t.Errorf("defaults: %+v", sc)
	}
	if got := sc.MaxConcurrency(); got != DefaultMaxConcurrency {
		t.Errorf("MaxConcurrency = %d", got)
	}
}

func TestDistShorthand(t *testing.T) {
	t.Parallel()
	sc, err := Parse("s.yaml", []byte("name: s\nprompts: {input_tokens: 300, output_tokens: 7}\nload: {stages: [{concurrency: 1, requests: 1}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := *sc.Prompts.InputTokens; got != (Dist{Dist: DistFixed, Value: 300}) {
		t.Errorf("input_tokens = %+v", got)
	}
	if got := *sc.Prompts.OutputTokens; got != (Dist{Dist: DistFixed, Value: 7}) {
		t.Errorf("output_tokens = %+v", got)
	}
}

func TestFieldErrorFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  FieldError
		want string
	}{
		{"full", FieldError{"a.yaml", 3, "load.stages[0].rate", "must be positive"}, "a.yaml:3: load.stages[0].rate: must be positive"},
		{"no line", FieldError{"--set", 0, "name", "is required"}, "--set: name: is required"},
		{"no field", FieldError{"a.yaml", 2, "", "bad YAML"}, "a.yaml:2: bad YAML"},
		{"nothing", FieldError{"", 0, "", "oops"}, "oops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzLoad feeds arbitrary documents to the loader: it must never panic,
// every error must be positional, and an accepted scenario must resolve to
// JSON that a second Validate accepts unchanged.
func FuzzLoad(f *testing.F) {
	for _, pattern := range []string{"testdata/*/*.yaml", "../scenarios/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse("fuzz.yaml", data)
		if err != nil {
			for _, e := range unwrapAll(err) {
				var fe *FieldError
				if !errors.As(e, &fe) {
					t.Fatalf("%T is not a *FieldError: %v", e, e)
				}
			}
			return
		}
		b, err := sc.Resolved()
		if err != nil {
			t.Fatalf("accepted scenario does not resolve: %v", err)
		}
		if err := sc.Validate(); err != nil {
			t.Fatalf("second Validate: %v", err)
		}
		if err := sc.Override("name=" + sc.Name); err != nil {
			t.Fatalf("no-op override: %v", err)
		}
		if b2, _ := sc.Resolved(); !bytes.Equal(b, b2) {
			t.Fatalf("no-op override changed the scenario:\n%s\n%s", b, b2)
		}
	})
}

// TestMergeKeys: keys merged with "<<" yield to the mapping's own keys,
// before or after the merge, as YAML specifies.
func TestMergeKeys(t *testing.T) {
	t.Parallel()
	sc, err := Load("testdata/valid/merge.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, b := sc.Load.Stages[1], sc.Load.Stages[2]
	if a.Concurrency != 8 || a.Requests != 10 || b.Concurrency != 2 || b.Requests != 5 {
		t.Errorf("stages %+v %+v", a, b)
	}
}

// TestHugeDocument: the structural check stops at maxNodes nodes with one
// message rather than walking (or reporting on) every one of them.
func TestHugeDocument(t *testing.T) {
	t.Parallel()
	doc := "name: huge\nload:\n  stages: [" + strings.Repeat("{}, ", maxNodes) + "{}]\n"
	_, err := Parse("huge.yaml", []byte(doc))
	if err == nil || !strings.Contains(err.Error(), "huge.yaml:3: document too large") || len(unwrapAll(err)) != 1 {
		t.Errorf("err = %.300v", err)
	}
}

// TestSimTarget resolves a preset file named in target.url like a dataset
// path: against the scenario file's directory when written in the file,
// against the working directory when given on the command line.
func TestSimTarget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("twin.yaml", "base: tiny\n")
	sc, err := Load(write("s.yaml", "name: s\ntarget: {url: 'sim://./twin.yaml?seed=2'}\nload: {stages: [{concurrency: 1, requests: 1}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sc.SimTarget(), "sim://"+filepath.Join(dir, "twin.yaml")+"?seed=2"; got != want {
		t.Errorf("SimTarget = %q, want %q", got, want)
	}
	// From the command line the path is the working directory's, where
	// this one does not exist.
	if err := sc.Set("target.url", "sim://./twin.yaml"); err == nil {
		t.Error("--target sim://./twin.yaml was resolved against the scenario's directory")
	}
	abs := "sim://" + filepath.Join(dir, "twin.yaml")
	if err := sc.Set("target.url", abs); err != nil {
		t.Fatal(err)
	}
	if got := sc.SimTarget(); got != abs {
		t.Errorf("SimTarget = %q, want %q", got, abs)
	}
	if err := sc.Set("target.url", "sim://tiny"); err != nil || sc.SimTarget() != "sim://tiny" {
		t.Errorf("SimTarget of a preset = %q, %v", sc.SimTarget(), err)
	}
}
