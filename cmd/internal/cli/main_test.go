package cli

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
)

// testEnv returns an env writing into buffers, with an empty environment.
//
// Under the race detector its runs draw no plots: drawing them (gonum, on
// one goroutine) is half the package's CPU and ten times slower there, and
// the plain pass draws every one. A test that reads a run's plots or
// report.html sets noPlots back to false.
func testEnv() (env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }, noPlots: raceEnabled}, &out, &errb
}

// quickArgs shrinks the quickstart scenario so a test run takes about a second.
var quickArgs = []string{
	"--set", "load.stages[0].requests=16", "--set", "load.stages[0].warmup.requests=2",
	"--set", "load.stages[1].requests=20", "--set", "load.stages[1].rate=40",
	"--set", "prompts.output_tokens.min=8", "--set", "prompts.output_tokens.max=16",
}

// cliCase is one command line and what it must end with: an exit code and
// a message somewhere in stdout, stderr or the error.
type cliCase struct {
	name    string
	args    []string
	code    int
	message string
}

// checkCLI runs tc as a parallel subtest.
func checkCLI(t *testing.T, tc cliCase) {
	t.Helper()
	t.Run(tc.name, func(t *testing.T) {
		t.Parallel()
		e, out, errb := testEnv()
		err := bench(context.Background(), e, tc.args)
		if got := exitCode(err); got != tc.code {
			t.Fatalf("exit code = %d (err %v), want %d", got, err, tc.code)
		}
		text := out.String() + errb.String()
		if err != nil {
			text += err.Error()
		}
		if !strings.Contains(text, tc.message) {
			t.Errorf("output %q does not mention %q", text, tc.message)
		}
	})
}

func TestRunThenReportReproducesSummary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e, out, errb := testEnv()
	args := append([]string{"run", "../../../scenarios/quickstart.yaml", "--out", dir, "--quiet"}, quickArgs...)
	if err := bench(context.Background(), e, args); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errb)
	}
	if !strings.Contains(out.String(), "closed-8") || !strings.Contains(out.String(), "summary:") {
		t.Errorf("summary table missing from output:\n%s", out)
	}
	want, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	e2, out2, _ := testEnv()
	if err := bench(context.Background(), e2, []string{"report", dir, "--format", "json"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out2.Bytes(), want) {
		t.Fatalf("bench report differs from summary.json\nreport:\n%s\nsummary.json:\n%s", out2, want)
	}
	// Every scheduled request ended as exactly one record.
	r, err := results.Open(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seen := map[uint64]bool{}
	for r.Scan() {
		if res := r.Record().Result; res != nil {
			if seen[res.Seq] {
				t.Errorf("seq %d recorded twice", res.Seq)
			}
			seen[res.Seq] = true
		}
	}
	if len(seen) != 16+20 {
		t.Errorf("records = %d, want 36", len(seen))
	}
}

func TestRunInterruptedWritesSummary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e, _, errb := testEnv()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupt mid-run: once a few requests have been recorded.
	go func() {
		for ctx.Err() == nil {
			data, _ := os.ReadFile(filepath.Join(dir, "results.jsonl"))
			if bytes.Count(data, []byte(`"kind":"request"`)) >= 3 {
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	err := bench(ctx, e, []string{"run", "../../../scenarios/quickstart.yaml", "--out", dir, "--quiet"})
	if exitCode(err) != exitInterrupted {
		t.Fatalf("exit code = %d (err %v), want %d; stderr: %s", exitCode(err), err, exitInterrupted, errb)
	}
	sum, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatalf("no summary after an interrupted run: %v", err)
	}
	if !strings.Contains(string(sum), `"ok":`) {
		t.Errorf("summary has no request counts:\n%s", sum)
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nload:\n  stages:\n    - concurrency: 2\n      requets: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	remote := filepath.Join(dir, "remote.yaml")
	if err := os.WriteFile(remote, []byte("name: x\ntarget: {url: http://192.0.2.1:8000, model: m}\nload:\n  stages:\n    - {concurrency: 1, requests: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []cliCase{
		{"no command", nil, exitUsage, "no command"},
		{"unknown command", []string{"frobnicate"}, exitUsage, "unknown command"},
		{"help", []string{"help", "run"}, exitOK, ""},
		{"version", []string{"version"}, exitOK, ""},
		{"run without scenario", []string{"run"}, exitUsage, "a run without a scenario file needs --target URL"},
		{"bad flag", []string{"run", "--nope", "x.yaml"}, exitUsage, "nope"},
		{"scenario with a typo", []string{"run", bad}, exitUsage, "bad.yaml:5"},
		{"bad --set", []string{"run", "../../../scenarios/quickstart.yaml", "--set", "load.nope=1"}, exitUsage, "load.nope"},
		{"remote target refused", []string{"run", remote, "--out", dir}, exitUsage, "loopback"},
		{"sim refuses a public address", []string{"sim", "--addr", "0.0.0.0:8000"}, exitUsage, "loopback"},
		{"sim unknown preset", []string{"sim", "--preset", "h200-dreams"}, exitUsage, "tiny"},
		{"sim bad setting", []string{"sim", "--set", "max_num_seqs=-1"}, exitUsage, "max_num_seqs"},
		{"run unknown sim preset", []string{"run", "../../../scenarios/quickstart.yaml", "--target", "sim://nope", "--out", dir}, exitUsage, "nope"},
		{"run bad sim query", []string{"run", "../../../scenarios/quickstart.yaml", "--target", "sim://tiny?max_num_seqs=x", "--out", dir}, exitUsage, "max_num_seqs"},
		{"report of a missing file", []string{"report", filepath.Join(dir, "none.jsonl")}, exitFailed, "none.jsonl"},
	}
	for _, tc := range tests {
		checkCLI(t, tc)
	}
}

func TestHelpTeaches(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"run", "report"} {
		e, out, _ := testEnv()
		if err := bench(context.Background(), e, []string{"help", cmd}); err != nil && !errors.Is(err, errInterrupted) {
			if exitCode(err) != exitOK {
				t.Fatal(err)
			}
		}
		if !strings.Contains(out.String(), "Examples:") || !strings.Contains(out.String(), "Flags:") {
			t.Errorf("help %s lacks examples or flags:\n%s", cmd, out)
		}
	}
}

// TestRunOutRefusesUsedDirectory is issue 9's silent overwrite: a second
// run into an --out directory that holds a run is refused (exit 2) unless
// --force, which then clears what the earlier run left, so no stale
// junit.xml of a gated run stays beside an ungated one.
func TestRunOutRefusesUsedDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gated := writeScenario(t, "name: gated\ntarget: {url: \"sim://tiny\"}\nload: {stages: [{concurrency: 2, requests: 4}]}\nbudgets: {overall: {error_rate: {max: 0}}}\n")
	plain := writeScenario(t, "name: plain\ntarget: {url: \"sim://tiny\"}\nload: {stages: [{concurrency: 2, requests: 4}]}\n")
	e, _, errb := testEnv()
	if err := bench(context.Background(), e, []string{"run", gated, "--out", dir, "--quiet"}); err != nil {
		t.Fatalf("first run: %v\n%s", err, errb)
	}
	if _, err := os.Stat(filepath.Join(dir, "junit.xml")); err != nil {
		t.Fatalf("the gated run wrote no junit.xml: %v", err)
	}
	checkCLI(t, cliCase{"second run refused", []string{"run", plain, "--out", dir, "--quiet"}, exitUsage, "already holds a run"})
	e2, _, errb2 := testEnv()
	if err := bench(context.Background(), e2, []string{"run", plain, "--out", dir, "--quiet", "--force"}); err != nil {
		t.Fatalf("--force: %v\n%s", err, errb2)
	}
	if _, err := os.Stat(filepath.Join(dir, "junit.xml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a stale junit.xml survived --force: %v", err)
	}
	if h, err := results.ReadHeader(filepath.Join(dir, "results.jsonl")); err != nil || h.Spec.Name != "plain" {
		t.Errorf("results.jsonl is not the new run's: %+v, %v", h, err)
	}
}

// TestSetAppliedTogether is issue 9's --set order: overrides valid only
// together (a min above the old max, then a larger max) work in either
// order, and a bad --target is reported as --target.
func TestSetAppliedTogether(t *testing.T) {
	t.Parallel()
	file := writeScenario(t, "name: sets\ntarget: {url: \"sim://tiny\"}\nprompts: {output_tokens: {dist: uniform, min: 2, max: 4}}\nload: {stages: [{concurrency: 1, requests: 2}]}\n")
	for _, order := range [][]string{
		{"--set", "prompts.output_tokens.min=20", "--set", "prompts.output_tokens.max=24"},
		{"--set", "prompts.output_tokens.max=24", "--set", "prompts.output_tokens.min=20"},
	} {
		e, out, errb := testEnv()
		if err := bench(context.Background(), e, append([]string{"run", file, "--out", t.TempDir(), "--quiet"}, order...)); err != nil {
			t.Errorf("%v: %v\n%s%s", order, err, out, errb)
		}
	}
	checkCLI(t, cliCase{"bad target", []string{"run", file, "--target", "ftp://127.0.0.1:1"}, exitUsage, `--target: target.url: want http(s)://HOST:PORT[/v1] or sim://PRESET, got "ftp://127.0.0.1:1"`})
}

// TestIssue11DatasetBeforeConnecting (issue 11, item 16): a dataset was
// first read after connecting, so a bad one behind a dead target exited 1
// (target unreachable) instead of 2 with the dataset's file and line. It
// is read before any network use by `bench run`, and before any server is
// launched by `bench sweep` (even a dry run).
func TestIssue11DatasetBeforeConnecting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() // nothing listens once closed
	l.Close()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("prompts.jsonl", "{\"prompt\": \"hello\", \"output_tokens\": 4}\n{\"prompt\": \"again\", \"output_tokens\": 0}\n")
	run := write("run.yaml", "name: ds\ntarget: {url: '"+dead+"', model: m}\nprompts: {dataset: {path: prompts.jsonl}}\nload: {stages: [{concurrency: 1, requests: 1}]}\n")
	sweep := write("sweep.yaml", "name: ds\ntarget: {model: m}\nprompts: {dataset: {path: prompts.jsonl}}\nload: {stages: [{concurrency: 1, requests: 1}]}\n"+
		"sweep: {parameters: {x: [1]}, server: {command: [false]}}\n")
	want := filepath.Join(dir, "prompts.jsonl") + ":2: output_tokens: want 1 to 2097152, got 0"
	checkCLI(t, cliCase{"run", []string{"run", run, "--out", filepath.Join(dir, "out"), "--quiet"}, exitUsage, want})
	checkCLI(t, cliCase{"sweep", []string{"sweep", sweep, "--out", filepath.Join(dir, "sweep")}, exitUsage, want})
	checkCLI(t, cliCase{"sweep dry run", []string{"sweep", sweep, "--dry-run"}, exitUsage, want})
}

// TestRunVirtual runs the quickstart in virtual time, and refuses
// --virtual for a target that is not the simulator.
func TestRunVirtual(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e, out, errb := testEnv()
	if err := bench(context.Background(), e, []string{"run", "../../../scenarios/quickstart.yaml", "--virtual", "--out", dir, "--quiet"}); err != nil {
		t.Fatalf("run --virtual: %v\n%s", err, errb)
	}
	if !strings.Contains(out.String(), "virtual time") {
		t.Errorf("the summary does not say it was made in virtual time:\n%s", out)
	}
	if h, err := results.ReadHeader(filepath.Join(dir, "results.jsonl")); err != nil || !h.Virtual {
		t.Errorf("header: %+v, %v", h, err)
	}
	checkCLI(t, cliCase{"virtual needs the simulator", []string{"run", "../../../scenarios/quickstart.yaml", "--virtual",
		"--target", "http://127.0.0.1:1", "--out", t.TempDir()}, exitUsage, "virtual time needs the simulator"})
}
