package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/golden"
	"github.com/servebench/servebench/scrape/profile"
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
			if g := goTypeIn(e); g != "" {
				t.Errorf("%s: %q names a Go type or YAML tag (%s)", f, e, g)
			}
			out.WriteString(e.Error() + "\n")
		}
	}
	goldenCheck(t, out.Bytes())
}

// goTypeRE matches what a message for people must not hold: Go type
// names, YAML's tags and decoder prefixes (issue 11, item 16).
var goTypeRE = regexp.MustCompile(`!!(?:map|seq|str|int|float|bool|null|timestamp|merge)\b|\bunmarshal\b|(?:^|[\s(])(?:yaml|json): |` +
	`\[\][\w*]|\bmap\[|\binterface ?\{|\b(?:u?int(?:8|16|32|64)|float(?:32|64))\b|\*(?:u?int|bool|string|float)|` +
	`\b(?:scenario|results|time|reflect)\.[A-Z]`)

// quotedRE matches a quoted string in a message: the user's own text.
var quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// goTypeIn returns the first Go type name (or YAML tag) in err's message
// outside quoted values and the field path, or "".
func goTypeIn(err error) string {
	msg := err.Error()
	var fe *FieldError
	if errors.As(err, &fe) {
		msg = fe.Msg
	}
	return goTypeRE.FindString(quotedRE.ReplaceAllString(msg, `""`))
}

// TestIssue11ExplicitZeros (issue 11, item 16): a zero written where
// Defaults would put its default was silently replaced (max_duration: 0s
// ran for 30 minutes, max_concurrency: 0 capped at 1024). Written in the
// file or with --set it is refused, saying what to write; left out, left
// empty ("key:") or reset with an empty --set value, it takes the default.
// testdata/invalid/zeros.yaml has every such field.
func TestIssue11ExplicitZeros(t *testing.T) {
	t.Parallel()
	const base = "name: z\nload:\n  max_duration: %s\n  stages: [{rate: 5, requests: 10, max_concurrency: %s}]\n"
	for _, tc := range []struct {
		name, duration, maxConc string
		sets                    []string
		want                    string // "" for success with the defaults
	}{
		{name: "written in the file", duration: "0s", maxConc: "0",
			want: "z.yaml:3: load.max_duration: 0s is not a bound: write the longest the whole run may take, like 1h, or remove the key for the default (30m)\n" +
				"z.yaml:4: load.stages[0].max_concurrency: 0 would leave no room for a request: write a cap on requests in flight from 1 to 100000, or remove the key for the default (1024)"},
		{name: "left empty", duration: "", maxConc: "~"},
		{name: "set on the command line", duration: "1m", maxConc: "8", sets: []string{"load.max_duration=0s"},
			want: "--set: load.max_duration: 0s is not a bound"},
		{name: "reset on the command line", duration: "1m", maxConc: "8", sets: []string{"load.max_duration=", "load.stages[0].max_concurrency="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc, err := Parse("z.yaml", []byte(fmt.Sprintf(base, tc.duration, tc.maxConc)))
			if err == nil && len(tc.sets) > 0 {
				err = sc.Override(tc.sets...)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want == "":
				if sc.Load.MaxDuration.D() != DefaultMaxDuration || sc.Load.Stages[0].MaxConcurrency != DefaultMaxConcurrency {
					t.Errorf("defaults not applied: %+v", sc.Load)
				}
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Errorf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// TestIssue11PlainWords (issue 11, item 16): messages name no Go type. The
// structural check covers typed maps (budgets.stages, target.headers,
// sweep.server.env), free-form values (request.extra) and --set; what the
// YAML and JSON encoders still say is rewritten.
func TestIssue11PlainWords(t *testing.T) {
	t.Parallel()
	const base = "name: p\nload: {stages: [{concurrency: 1, requests: 1}]}\n"
	for _, tc := range []struct {
		name string
		doc  string   // appended to base
		sets []string // applied to base
		want string
	}{
		{name: "budget set of a stage", doc: "budgets: {stages: {stage-0: {ttft_ms: {p99: fast}}}}\n",
			want: `p.yaml:3: budgets.stages.stage-0.ttft_ms.p99: want a number, got "fast"`},
		{name: "unknown key in a stage's budgets", doc: "budgets: {stages: {stage-0: {ttft_ms: {p99: 1}, bogus: 1}}}\n",
			want: "p.yaml:3: budgets.stages.stage-0.bogus: unknown field (known: "},
		{name: "header value", doc: "target: {headers: {X-A: [1]}}\n", want: "p.yaml:3: target.headers.X-A: want a string, got a list"},
		{name: "nested key sent as JSON", doc: "request: {extra: {kw: {1: 2}}}\n",
			want: `p.yaml:3: request.extra.kw.1: a key sent as JSON must be a string: quote it ("1")`},
		{name: "command as a mapping", doc: "sweep: {parameters: {a: [1]}, server: {command: {x: 1}}}\n",
			want: "p.yaml:3: sweep.server.command: want a command as a list of arguments or a shell string, got a mapping"},
		{name: "set an environment value", sets: []string{"sweep.parameters.a=[1]", "sweep.server.command=x", "sweep.server.env.A=[1]"},
			want: "--set: sweep.server.env.A: want a string, got a list"},
		{name: "set an extra key", sets: []string{"request.extra.kw={1: 2}"},
			want: `--set: request.extra.kw.1: a key sent as JSON must be a string: quote it ("1")`},
		{name: "set a stage's budgets", sets: []string{"budgets.stages={stage-0: {ttft_ms: {p99: fast}}}"},
			want: `--set: budgets.stages.stage-0.ttft_ms.p99: want a number, got "fast"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc, err := Parse("p.yaml", []byte(base+tc.doc))
			if len(tc.sets) > 0 {
				if err != nil {
					t.Fatal(err)
				}
				err = sc.Override(tc.sets...)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
			for _, e := range unwrapAll(err) {
				if g := goTypeIn(e); g != "" {
					t.Errorf("%q names a Go type or YAML tag (%s)", e, g)
				}
			}
		})
	}
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
// every error must be positional and in plain words (no Go type names), and an accepted scenario must resolve to
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
	bomb, _ := mergeBomb("anchors", 20, 12)
	f.Add([]byte(bomb))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse("fuzz.yaml", data)
		if err != nil {
			for _, e := range unwrapAll(err) {
				var fe *FieldError
				if !errors.As(e, &fe) {
					t.Fatalf("%T is not a *FieldError: %v", e, e)
				}
				if g := goTypeIn(e); g != "" {
					t.Fatalf("%q names a Go type or YAML tag (%s)", e, g)
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
	if err == nil || !strings.Contains(err.Error(), "huge.yaml:3: load.stages[") ||
		!strings.Contains(err.Error(), "document too large: more than 100000 nodes") || len(unwrapAll(err)) != 1 {
		t.Errorf("err = %.300v", err)
	}
}

// mergeBomb is a scenario whose anchors sit under key (a field the schema
// does not know, or request.extra) and whose first stage is {<<: *aDEPTH}:
// each anchor merges a list of fan aliases of the one before, so the stage
// expands to fan^depth copies of the first anchor's keys, from a document
// of about 5·fan·depth bytes. useLine is the line of the stage.
func mergeBomb(key string, fan, depth int) (doc string, useLine int) {
	var b strings.Builder
	b.WriteString("name: bomb\n" + key + ":\n  a0: &a0 {concurrency: 1, requests: 1}\n")
	for i := 1; i <= depth; i++ {
		fmt.Fprintf(&b, "  a%d: &a%d {<<: [%s]}\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), fan), ", "))
	}
	b.WriteString("load:\n  stages:\n")
	useLine = strings.Count(b.String(), "\n") + 1
	fmt.Fprintf(&b, "    - {<<: *a%d}\n", depth)
	return b.String(), useLine
}

// TestIssue11MergeBomb (issue 11, item 9): a 1.7 KB document of nested "<<"
// merges kept the loader busy for more than ten minutes, because a merged
// key that yields to one already set was not counted against the node
// budget. Every merged key and every alias followed now counts, so the
// loader refuses the document at once, naming the line of the expansion
// and the limit. Loading is pure computation, bounded by that budget; the
// watchdog only turns a regression into a failure instead of a hang.
func TestIssue11MergeBomb(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		key  string // where the anchors are
		want string // a regular expression; USE is the stage's line
	}{
		// The structural check expands the stage's merges.
		{"anchors outside the schema", "anchors", `(?m)^bomb\.yaml:USE: load\.stages\[0\]: `},
		// The decoder would expand a free-form mapping: it is counted first.
		{"anchors in a free-form mapping", "request:\n extra", `(?m)^bomb\.yaml:\d+: request\.extra\.a\d+: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, line := mergeBomb(tc.key, 20, 12)
			if len(doc) > 2000 {
				t.Fatalf("the bomb is %d bytes, want under 2 KB", len(doc))
			}
			err := parseWithin(t, "bomb.yaml", doc)
			want := regexp.MustCompile(strings.Replace(tc.want, "USE", strconv.Itoa(line), 1) + regexp.QuoteMeta(fmt.Sprintf("document too large: more than %d nodes once aliases and << merges are expanded", maxNodes)))
			var fe *FieldError
			if err == nil || !want.MatchString(err.Error()) || !errors.As(err, &fe) {
				t.Errorf("err = %v\nwant one matching %s", err, want)
			}
		})
	}
}

// parseWithin parses doc, failing the test if that takes more than a
// minute (it takes milliseconds; a minute means the expansion is unbounded).
func parseWithin(t *testing.T, name, doc string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := Parse(name, []byte(doc))
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s: still loading after a minute: the expansion is not bounded", name)
		return nil
	}
}

// TestRemoteTargetOptIn: a non-loopback target is refused with its file,
// line and field, and accepted with target.allow_remote (validation only:
// nothing is dialled).
func TestRemoteTargetOptIn(t *testing.T) {
	t.Parallel()
	const doc = "name: r\ntarget:\n  url: http://10.0.0.7:8000/v1\nload: {stages: [{concurrency: 1, requests: 1}]}\n"
	_, err := Parse("r.yaml", []byte(doc))
	if err == nil || !strings.Contains(err.Error(), `r.yaml:3: target.url: host "10.0.0.7" is not loopback`) || !strings.Contains(err.Error(), "allow_remote") {
		t.Errorf("err = %v", err)
	}
	sc, err := Parse("r.yaml", []byte(strings.Replace(doc, "target:\n", "target:\n  allow_remote: true\n", 1)))
	if err != nil || !sc.Policy().AllowRemote {
		t.Errorf("with allow_remote: %v", err)
	}
	if _, err := Parse("r.yaml", []byte(strings.Replace(doc, "target:\n", "target:\n  headers: {\"Bad Name\": x}\n  tls: {insecure_skip_verify: true}\n  allow_remote: true\n", 1))); err == nil ||
		!strings.Contains(err.Error(), "target.headers.Bad Name: is not a valid HTTP header name") || !strings.Contains(err.Error(), "target.tls: applies to https targets only") {
		t.Errorf("bad header and tls: %v", err)
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

// TestIssue22Nesting (issue 22, item 7): a 10 KB scenario nesting 5,000
// levels in request.extra took 483 MB. A free-form value deeper than
// maxNesting is refused with its line, in the file and from --set.
func TestIssue22Nesting(t *testing.T) {
	t.Parallel()
	const head = "name: deep\nprompts: {input_tokens: 8, output_tokens: 4}\nload: {stages: [{concurrency: 1, requests: 1}]}\n"
	deep := strings.Repeat("{a: ", 5000) + "1" + strings.Repeat("}", 5000)
	list := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	// request.extra is the first level.
	ok := strings.Repeat("{a: ", maxNesting-1) + "1" + strings.Repeat("}", maxNesting-1)
	want := "nests deeper than 64 levels"
	for _, tc := range []struct{ name, doc, wantPrefix string }{
		{"extra mapping", head + "request:\n  extra:\n    x: " + deep + "\n", "deep.yaml:6: request.extra: "},
		{"extra list", head + "request:\n  extra:\n    x: " + list + "\n", "deep.yaml:6: request.extra: "},
		{"tools", head + "target: {api: chat}\nrequest:\n  tools: [{type: function, function: {name: f, parameters: " + deep + "}}]\n", "deep.yaml:6: request.tools[0]: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("deep.yaml", []byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.wantPrefix+want) {
				t.Errorf("Parse: %.300v\nwant %q", err, tc.wantPrefix+want)
			}
			if err != nil && strings.Count(err.Error(), want) != 1 {
				t.Errorf("reported %d times", strings.Count(err.Error(), want))
			}
		})
	}
	sc, err := Parse("deep.yaml", []byte(head+"request:\n  extra:\n    x: "+ok+"\n"))
	if err != nil {
		t.Fatalf("%d levels: %v", maxNesting, err)
	}
	if err := sc.Set("request.extra.y", deep); err == nil || !strings.Contains(err.Error(), "--set: request.extra.y: "+want) {
		t.Errorf("--set: %.300v", err)
	}
}

// TestScrapeProfiles: every profile the scraper knows is a valid
// scrape.profile (the validator reads the scraper's table), and nothing
// else is.
func TestScrapeProfiles(t *testing.T) {
	t.Parallel()
	for _, name := range append(profile.Names(), "lmdeploy") {
		doc := "name: p\ntarget: {url: \"sim://tiny\"}\nscrape: {profile: " + name + "}\nload: {stages: [{concurrency: 1, requests: 1}]}\n"
		if _, err := Parse("p.yaml", []byte(doc)); err != nil {
			t.Errorf("scrape.profile %s: %v", name, err)
		}
	}
	doc := "name: p\ntarget: {url: \"sim://tiny\"}\nscrape: {profile: vlm}\nload: {stages: [{concurrency: 1, requests: 1}]}\n"
	if _, err := Parse("p.yaml", []byte(doc)); err == nil || !strings.Contains(err.Error(), "lmdeploy") {
		t.Errorf("scrape.profile vlm: %v, want the known profiles named", err)
	}
}
