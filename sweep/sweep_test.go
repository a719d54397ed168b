package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/golden"
	"github.com/servebench/servebench/internal/loopback"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/chart"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// testServerEnv selects what the test binary does when a sweep launches it
// as a server (see TestMain).
const testServerEnv = "SWEEP_TEST_SERVER"

// TestMain lets the test binary stand in for a server process: launched
// with SWEEP_TEST_SERVER=MODE and the port as its argument, it behaves as
// MODE says instead of running tests.
//
//	serve       answers /health and /v1/models until SIGTERM
//	exit        exits at once with status 3
//	never-ready answers /health with 503
//	stubborn    serves, ignores SIGTERM, and starts a child that does too
//	argv        serves, having printed its arguments after the port as JSON
//	parent      stands in for bench: launches a "serve" server from a shell
//	            command string, prints its pid, and waits to be killed
func TestMain(m *testing.M) {
	if mode := os.Getenv(testServerEnv); mode != "" {
		os.Exit(fakeServer(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeServer(mode string, args []string) int {
	if mode == "parent" {
		return fakeParent(args)
	}
	if mode == "exit" {
		fmt.Fprintln(os.Stderr, "fake server: CUDA out of memory (pretend)")
		return 3
	}
	if mode == "child" {
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(time.Minute)
		return 0
	}
	if len(args) < 1 || len(args) > 1 && mode != "argv" {
		fmt.Fprintln(os.Stderr, "fake server: want the port")
		return 2
	}
	if mode == "argv" {
		b, _ := json.Marshal(args[1:])
		fmt.Printf("argv %s\n", b)
	}
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), testServerEnv+"=child")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Printf("child pid %d\n", child.Process.Pid)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	health := http.StatusOK
	if mode == "never-ready" {
		health = http.StatusServiceUnavailable
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(health) })
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake","object":"model"}]}`)
	})
	fmt.Println("fake server: listening")
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(l) }()
	sigs := make(chan os.Signal, 1)
	if mode != "stubborn" {
		signal.Notify(sigs, syscall.SIGTERM)
	}
	select {
	case <-sigs:
		fmt.Println("fake server: SIGTERM, shutting down")
	case <-time.After(2 * time.Minute): // bounded: never outlive a test run
	}
	return 0
}

// fakeParent launches the test binary as a "serve" server the way a sweep
// does (a shell command string rendered by the scenario, its log in
// args[0]'s directory), prints "server pid N" once it is ready, and sleeps
// until it is killed (two minutes at most).
func fakeParent(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "fake parent: want a directory")
		return 2
	}
	port, err := freePort()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sv := &scenario.SweepServer{Command: scenario.Command{Shell: shellJoin([]string{os.Args[0]}) + " {{.port}}"}}
	l, err := sv.Render(map[string]string{scenario.SweepVarPort: strconv.Itoa(port)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	p, err := launch(l.Args, append(os.Environ(), testServerEnv+"=serve"), filepath.Join(args[0], "server.log"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := p.WaitReady(context.Background(), fmt.Sprintf("http://127.0.0.1:%d/health", port), time.Minute, loopback.Policy{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Printf("server pid %d\n", p.Pid())
	time.Sleep(2 * time.Minute)
	return 0
}

// alive reports whether process pid exists and has not ended: a zombie
// (ended, not yet reaped by its parent, which may be init) counts as gone.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	state, _, ok := procStat(pid)
	return !ok || state != 'Z'
}

// groupAlive reports whether a process of process group pgid is alive.
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // no /proc: the kernel says the group has members
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, pgrp, ok := procStat(pid); ok && pgrp == pgid && state != 'Z' {
			return true
		}
	}
	return false
}

// procStat reads a process's state and process group from /proc (Linux).
func procStat(pid int) (state byte, pgrp int, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// "pid (comm) S ppid pgrp …": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	f := strings.Fields(string(data[i+1:]))
	if i < 0 || len(f) < 3 {
		return 0, 0, false
	}
	pgrp, err = strconv.Atoi(f[2])
	return f[0][0], pgrp, err == nil
}

// eventually polls cond every 20 ms until it holds, for up to 10 s (the
// kernel ends a killed process in milliseconds; the bound only keeps a
// failure from hanging).
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// fakeRun stands in for run.Run at the process boundary: it checks the
// target answers (a real HTTP request to the launched server, or nothing
// for sim://), writes the summary.json a run leaves, and returns a summary
// whose figures follow the swept value x: throughput x, TTFT 1000/x, ITL
// x/100 (ms). verdict, when set, decides the budget verdict.
type fakeRun struct {
	param   string
	calls   atomic.Int64
	verdict func(x float64) *bool
}

func (f *fakeRun) run(ctx context.Context, sc *scenario.Scenario, dir string) (*report.Summary, error) {
	f.calls.Add(1)
	if strings.HasPrefix(sc.Target.URL, "http") {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, sc.Target.URL+"/v1/models", nil)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			return nil, fmt.Errorf("target: %w", err)
		}
		resp.Body.Close()
	}
	if sc.Sweep != nil {
		return nil, errors.New("the derived scenario still has a sweep block")
	}
	x, _ := strconv.ParseFloat(valueIn(sc, f.param), 64)
	if x == 0 {
		x = 1
	}
	d := func(ms float64) report.Dist { return report.Dist{Count: 10, P50: ms, P99: 2 * ms} }
	sum := &report.Summary{Schema: 1, Scenario: sc.Name, Target: sc.Target.URL,
		Overall: report.Stage{Index: -1, Name: "overall", Requests: report.Requests{Scheduled: 10, OK: 10},
			TTFT: d(1000 / x), ITL: d(x / 100), TPOT: d(x / 100), E2E: d(1000), OutputTokensPerSec: x, RequestsPerSec: x / 100}}
	if f.verdict != nil {
		if pass := f.verdict(x); pass != nil {
			sum.Verdict = &report.Verdict{Pass: *pass, Checks: []report.Check{{Name: "overall.ttft_ms.p99", Pass: *pass}}}
		}
	}
	return sum, run.WriteSummaryFiles(dir, sum)
}

// valueIn finds the swept value in the derived scenario: in the sim URL's
// query, or in the launched server's target (the port is not it), or in
// the description for field sweeps.
func valueIn(sc *scenario.Scenario, param string) string {
	if i := strings.Index(sc.Target.URL, param+"="); i >= 0 {
		v, _, _ := strings.Cut(sc.Target.URL[i+len(param)+1:], "&")
		return v
	}
	return sc.Description
}

func parse(t *testing.T, doc string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse("sweep.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

const simSweep = `name: mnbt
target: {url: "sim://tiny?seed=3"}
load: {stages: [{concurrency: 1, requests: 2}]}
sweep:
  repeats: 2
  parameters:
    max_num_batched_tokens: [256, 1024]
    load.stages[0].concurrency: [1, 2]
`

func TestPlan(t *testing.T) {
	t.Parallel()
	p, err := NewPlan(t.Context(), parse(t, simSweep))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range p.Jobs {
		got = append(got, fmt.Sprintf("%d %s r%d %s → %s c=%d", j.Point, j.Label, j.Repeat, j.Dir,
			j.Scenario.Target.URL, j.Scenario.Load.Stages[0].Concurrency))
		if j.Scenario.Sweep != nil {
			t.Errorf("%s: derived scenario keeps the sweep block", j.Label)
		}
	}
	want := []string{
		"0 load.stages[0].concurrency=1,max_num_batched_tokens=256 r1 load.stages_0_.concurrency=1,max_num_batched_tokens=256/repeat-1 → sim://tiny?max_num_batched_tokens=256&seed=3 c=1",
		"0 load.stages[0].concurrency=1,max_num_batched_tokens=256 r2 load.stages_0_.concurrency=1,max_num_batched_tokens=256/repeat-2 → sim://tiny?max_num_batched_tokens=256&seed=3 c=1",
		"1 load.stages[0].concurrency=1,max_num_batched_tokens=1024 r1 load.stages_0_.concurrency=1,max_num_batched_tokens=1024/repeat-1 → sim://tiny?max_num_batched_tokens=1024&seed=3 c=1",
		"1 load.stages[0].concurrency=1,max_num_batched_tokens=1024 r2 load.stages_0_.concurrency=1,max_num_batched_tokens=1024/repeat-2 → sim://tiny?max_num_batched_tokens=1024&seed=3 c=1",
		"2 load.stages[0].concurrency=2,max_num_batched_tokens=256 r1 load.stages_0_.concurrency=2,max_num_batched_tokens=256/repeat-1 → sim://tiny?max_num_batched_tokens=256&seed=3 c=2",
		"2 load.stages[0].concurrency=2,max_num_batched_tokens=256 r2 load.stages_0_.concurrency=2,max_num_batched_tokens=256/repeat-2 → sim://tiny?max_num_batched_tokens=256&seed=3 c=2",
		"3 load.stages[0].concurrency=2,max_num_batched_tokens=1024 r1 load.stages_0_.concurrency=2,max_num_batched_tokens=1024/repeat-1 → sim://tiny?max_num_batched_tokens=1024&seed=3 c=2",
		"3 load.stages[0].concurrency=2,max_num_batched_tokens=1024 r2 load.stages_0_.concurrency=2,max_num_batched_tokens=1024/repeat-2 → sim://tiny?max_num_batched_tokens=1024&seed=3 c=2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("jobs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestPlanChecksSimSettings(t *testing.T) {
	t.Parallel()
	// tiny has max_num_seqs 8: a budget of 4 tokens is refused up front,
	// before any run.
	doc := strings.Replace(simSweep, "[256, 1024]", "[256, 4]", 1)
	_, err := NewPlan(t.Context(), parse(t, doc))
	if err == nil || !strings.Contains(err.Error(), "sweep.parameters.max_num_batched_tokens: value 4: simulator set max_num_batched_tokens=4") {
		t.Fatalf("err = %v", err)
	}
}

// TestPlanPresetFile sweeps simulator settings over a preset file next to
// the scenario: every run's target names the file by its resolved path.
func TestPlanPresetFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "twin.yaml"), []byte("base: tiny\nname: twin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(simSweep, "sim://tiny?seed=3", "sim://./twin.yaml?seed=3", 1)
	if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Load(filepath.Join(dir, "s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(t.Context(), sc)
	if err != nil {
		t.Fatal(err)
	}
	want := "sim://" + filepath.Join(dir, "twin.yaml") + "?max_num_batched_tokens=256&seed=3"
	if got := p.Jobs[0].Scenario.Target.URL; got != want {
		t.Errorf("target = %q, want %q", got, want)
	}
	if got := p.Jobs[0].Scenario.SimTarget(); got != want {
		t.Errorf("SimTarget = %q, want %q", got, want)
	}
}

func TestDirName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"max_num_batched_tokens=1024": "max_num_batched_tokens=1024",
		"model=org/name,kv=fp8":       "model=org_name,kv=fp8",
		"a=../../etc":                 "a=.._.._etc",
	} {
		if got := dirName(in); got != want {
			t.Errorf("dirName(%q) = %q, want %q", in, got, want)
		}
	}
	long := dirName(strings.Repeat("x", 300))
	if len(long) > 120 || long == dirName(strings.Repeat("x", 299)) {
		t.Errorf("long names must be shortened and stay distinct: %q", long)
	}
}

// serverSweep launches the test binary as the server; the mode parameter
// picks its behaviour.
func serverSweep(modes ...string) string {
	return fmt.Sprintf(`name: launch
target: {model: fake}
load: {stages: [{concurrency: 1, requests: 1}]}
sweep:
  parameters:
    mode: [%s]
  server:
    command: [%q, "{{.port}}"]
    env: {%s: "{{.mode}}"}
    ready_timeout: 1500ms
    stop_timeout: 5s
`, strings.Join(modes, ", "), os.Args[0], testServerEnv)
}

func TestDryRun(t *testing.T) {
	t.Parallel()
	p, err := NewPlan(t.Context(), parse(t, `name: vllm-mnbt
target: {model: m}
load: {stages: [{concurrency: 1, requests: 1}]}
sweep:
  repeats: 2
  parameters:
    max_num_batched_tokens: [2048, 8192]
    kv_cache_dtype: [auto]
  server:
    command: [vllm, serve, Qwen/Qwen3-8B, --port, "{{.port}}", --max-num-batched-tokens, "{{.max_num_batched_tokens}}", --kv-cache-dtype, "{{.kv_cache_dtype}}", --served-model-name, m]
    env: {VLLM_LOGGING_LEVEL: INFO}
    base_url: http://127.0.0.1:{{.port}}/v1
`))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := p.DryRun(&b, "out", false); err != nil {
		t.Fatal(err)
	}
	goldenCheck(t, b.Bytes())
}

// TestExecuteServers launches a real process per value: one that serves,
// one that exits at once, one that never becomes ready. The two failures
// are recorded for their values and the sweep goes on.
func TestExecuteServers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, err := NewPlan(t.Context(), parse(t, serverSweep("exit", "serve", "never-ready")))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRun{param: "mode"}
	var log bytes.Buffer
	s, err := p.Execute(context.Background(), Options{Dir: dir, Run: f.run, Log: &log, Environ: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("log:\n%s", log.String())
	if f.calls.Load() != 1 {
		t.Errorf("the load ran %d times, want once (only for the server that became ready)", f.calls.Load())
	}
	byMode := map[string]RunRecord{}
	for _, r := range s.Runs {
		byMode[r.Values["mode"]] = r
	}
	for _, tc := range []struct {
		mode, status, err string
	}{
		{"exit", StatusFailed, "server exited before it was ready (exit status 3)"},
		{"serve", StatusOK, ""},
		{"never-ready", StatusFailed, "/health after 1.5s (last poll: HTTP 503)"},
	} {
		r := byMode[tc.mode]
		if r.Status != tc.status || !strings.Contains(r.Error, tc.err) {
			t.Errorf("%s: status %q error %q; want %q containing %q", tc.mode, r.Status, r.Error, tc.status, tc.err)
		}
		logData, err := os.ReadFile(filepath.Join(dir, r.ServerLog))
		if err != nil || len(logData) == 0 {
			t.Errorf("%s: no server log: %v", tc.mode, err)
		}
	}
	if !strings.Contains(byMode["exit"].Error, "CUDA out of memory (pretend)") {
		t.Errorf("a start failure should quote the end of the server's log: %q", byMode["exit"].Error)
	}
	if got := byMode["serve"].Server; got != "exit status 0" {
		t.Errorf("serve ended %q, want a graceful exit after SIGTERM", got)
	}
	if s.Recommendation.Label != "mode=serve" {
		t.Errorf("recommendation = %+v", s.Recommendation)
	}
	for _, name := range []string{FileJSON, FileCSV, FilePNG, FileSVG} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	var back Summary
	data, _ := os.ReadFile(filepath.Join(dir, FileJSON))
	if err := json.Unmarshal(data, &back); err != nil || len(back.Runs) != 3 || back.Schema != Schema {
		t.Errorf("sweep.json does not read back: %v", err)
	}
}

// TestIssue11ShellInjection (issue 11, item 11): with a shell command, a
// swept value "6ms $(touch pwned)" ran touch. The server launched for
// each value must get the value as one argument, literally, and nothing
// else may run.
func TestIssue11ShellInjection(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pwned := filepath.Join(dir, "pwned")
	values := []string{"6ms $(touch " + pwned + ")", "6ms; touch " + pwned, "'`touch " + pwned + "`'"}
	quoted := make([]string, len(values))
	for i, v := range values {
		b, _ := json.Marshal(v)
		quoted[i] = string(b)
	}
	doc := fmt.Sprintf(`name: shell
target: {model: fake}
load: {stages: [{concurrency: 1, requests: 1}]}
sweep:
  parameters:
    delay: [%s]
  server:
    command: %q
    env: {%s: argv}
    ready_timeout: 20s
    stop_timeout: 5s
`, strings.Join(quoted, ", "), shellJoin([]string{os.Args[0]})+" {{.port}} {{.delay}}", testServerEnv)
	p, err := NewPlan(t.Context(), parse(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRun{param: "delay"}
	s, err := p.Execute(context.Background(), Options{NoPlots: raceEnabled, Dir: dir, Run: f.run, Environ: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range s.Runs {
		data, err := os.ReadFile(filepath.Join(dir, r.ServerLog))
		if err != nil {
			t.Fatal(err)
		}
		want := "argv " + string(must(json.Marshal([]string{values[i]}))) + "\n"
		if r.Status != StatusOK || !strings.HasPrefix(string(data), want) {
			t.Errorf("value %q: %s %s; the server's log starts\n%s\nwant\n%s", values[i], r.Status, r.Error, data, want)
		}
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Errorf("a swept value ran a command: %s exists", pwned)
	}
}

// TestIssue11ReadyNoRedirect (issue 11, item 11): the readiness poll
// followed redirects, so a ready_url could send it to any address. A
// server whose ready_url redirects (here to another loopback port that
// answers 200) is not ready: the redirect is an answer that is not 2xx,
// and nothing is requested where it points.
func TestIssue11ReadyNoRedirect(t *testing.T) {
	t.Parallel()
	var followed atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { followed.Add(1) }))
	defer target.Close()
	redirect := httptest.NewServer(http.RedirectHandler(target.URL+"/health", http.StatusTemporaryRedirect))
	defer redirect.Close()
	doc := serverSweep("serve") + "    ready_url: " + redirect.URL + "/health\n"
	doc = strings.Replace(doc, "ready_timeout: 1500ms", "ready_timeout: 1s", 1)
	p, err := NewPlan(t.Context(), parse(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRun{param: "mode"}
	s, err := p.Execute(context.Background(), Options{NoPlots: raceEnabled, Dir: t.TempDir(), Run: f.run, Environ: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Runs[0]; r.Status != StatusFailed || !strings.Contains(r.Error, "(last poll: HTTP 307)") {
		t.Errorf("run: %s %q; want failed, not ready (HTTP 307)", r.Status, r.Error)
	}
	if n := followed.Load(); n != 0 || f.calls.Load() != 0 {
		t.Errorf("the poll followed the redirect %d times; the load ran %d times", n, f.calls.Load())
	}
}

// TestIssue11ReadyURLEveryValue (issue 11, item 11): validation renders
// the server section with the first value of each parameter only, so a
// later value could point the readiness poll (or the load) elsewhere. The
// plan renders every combination and refuses one whose URL the policy
// does not allow, before anything is launched; target.allow_remote allows
// it.
func TestIssue11ReadyURLEveryValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, field, want string
	}{
		{"ready_url", "ready_url", "sweep value host=192.0.2.1: sweep.server.ready_url http://192.0.2.1:1/health: not a loopback address"},
		{"base_url", "base_url", `sweep value host=192.0.2.1: sweep.server.base_url http://192.0.2.1:1: --set: target.url: host "192.0.2.1" is not loopback`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := fmt.Sprintf(`name: hosts
target: {model: m}
load: {stages: [{concurrency: 1, requests: 1}]}
sweep:
  parameters: {host: [127.0.0.1, 192.0.2.1]}
  server:
    command: [server, "{{.port}}"]
    %s: http://{{.host}}:{{.port}}%s
`, tc.field, map[string]string{"ready_url": "/health", "base_url": "\n    ready_url: http://127.0.0.1:{{.port}}/health"}[tc.field])
			_, err := NewPlan(t.Context(), parse(t, doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant it to contain %q", err, tc.want)
			}
			remote := strings.Replace(doc, "target: {model: m}", "target: {model: m, allow_remote: true}", 1)
			if _, err := NewPlan(t.Context(), parse(t, remote)); err != nil {
				t.Errorf("with allow_remote: %v", err)
			}
		})
	}
}

// TestIssue11AbortKillsServers (issue 11, item 10): bench's second Ctrl-C
// exits at once, so the sweep never stops its server. Options.Servers lets
// the program kill every running server's process group first. Here the
// server (a shell command string) ignores SIGTERM and has a child that
// does too; Kill, called while the load runs, ends both at once.
func TestIssue11AbortKillsServers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc := fmt.Sprintf(`name: abort
target: {model: fake}
load: {stages: [{concurrency: 1, requests: 1}]}
sweep:
  parameters: {mode: [stubborn]}
  server:
    command: %q
    env: {%s: "{{.mode}}"}
    ready_timeout: 20s
    stop_timeout: 1m
`, shellJoin([]string{os.Args[0]})+" {{.port}}", testServerEnv)
	p, err := NewPlan(t.Context(), parse(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	servers := &Servers{}
	var log bytes.Buffer
	var server, child int
	run := func(ctx context.Context, sc *scenario.Scenario, runDir string) (*report.Summary, error) {
		// The server is ready and the load runs: the program aborts.
		if _, err := fmt.Sscanf(log.String()[strings.Index(log.String(), "(process group "):], "(process group %d,", &server); err != nil {
			return nil, fmt.Errorf("no process group in the log: %v\n%s", err, log.String())
		}
		data, _ := os.ReadFile(filepath.Join(runDir, "server.log"))
		if _, err := fmt.Sscanf(string(data), "child pid %d", &child); err != nil {
			return nil, fmt.Errorf("no child pid in the server's log: %q", data)
		}
		if n := servers.Kill(); n != 1 {
			return nil, fmt.Errorf("Kill signalled %d groups, want 1", n)
		}
		// Before Execute's own stop (which would wait a minute for this
		// server to heed SIGTERM), both are gone.
		if !eventually(func() bool { return !alive(server) && !alive(child) }) {
			return nil, fmt.Errorf("server %d (alive %v) or its child %d (alive %v) outlived Kill", server, alive(server), child, alive(child))
		}
		return nil, errors.New("aborted")
	}
	s, err := p.Execute(context.Background(), Options{NoPlots: raceEnabled, Dir: dir, Run: run, Log: &log, Environ: os.Environ(), Servers: servers})
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Runs[0]; !strings.HasSuffix(r.Error, "aborted") || r.Server != "signal: killed" {
		t.Errorf("run: %q, server %q; want the abort and a killed server", r.Error, r.Server)
	}
	if server == 0 || child == 0 {
		return
	}
	for _, pid := range []int{server, child} {
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestStopKillsTheGroup: a server that ignores SIGTERM is killed after the
// grace period, and so is the child it started (same process group).
func TestStopKillsTheGroup(t *testing.T) {
	t.Parallel()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "server.log")
	p, err := launch([]string{os.Args[0], strconv.Itoa(port)}, append(os.Environ(), testServerEnv+"=stubborn"), logPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReady(context.Background(), fmt.Sprintf("http://127.0.0.1:%d/health", port), 10*time.Second, loopback.Policy{}); err != nil {
		p.Stop(0)
		t.Fatal(err)
	}
	data, _ := os.ReadFile(logPath)
	var child int
	if _, err := fmt.Sscanf(string(data), "child pid %d", &child); err != nil {
		p.Stop(0)
		t.Fatalf("no child pid in the log %q", data)
	}
	st, err := p.Stop(200 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Forced || st.Status != "signal: killed" {
		t.Errorf("stop = %+v, want forced and killed", st)
	}
	// The child is reaped by init once killed; allow a moment.
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(child, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("child %d of the server survived the group kill", child)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestExecuteSimRecommend(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc := `name: mnbt
target: {url: "sim://tiny"}
load: {stages: [{concurrency: 1, requests: 2}]}
sweep:
  parameters:
    max_num_batched_tokens: [256, 512, 1024, 2048]
`
	p, err := NewPlan(t.Context(), parse(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	// Budgets: pass up to 1024 (say the ITL budget fails above 1024); the
	// fake's throughput grows with the value.
	f := &fakeRun{param: "max_num_batched_tokens", verdict: func(x float64) *bool { b := x <= 1024; return &b }}
	s, err := p.Execute(context.Background(), Options{NoPlots: raceEnabled, Dir: dir, Run: f.run})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Recommendation; got.Label != "max_num_batched_tokens=1024" || got.Basis != "budgets" ||
		!strings.Contains(got.Reason, "max_num_batched_tokens=2048: missed overall.ttft_ms.p99") {
		t.Errorf("recommendation = %+v", got)
	}
	csvData, _ := os.ReadFile(filepath.Join(dir, FileCSV))
	if !strings.HasPrefix(string(csvData), "max_num_batched_tokens,repeat,status,ok,failed,dropped,ttft_p50_ms") ||
		!strings.Contains(string(csvData), "\n512,1,ok,10,0,0,1.953125,3.90625,5.12,10.24,") {
		t.Errorf("sweep.csv:\n%s", csvData)
	}
}

// TestExecuteResume runs a two-value sweep with the real run library on the
// simulator, then resumes it: nothing runs again, and the summaries rebuilt
// from the results files give the same figures and verdicts. A run whose
// summary.json is missing runs again.
func TestExecuteResume(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, err := NewPlan(t.Context(), parse(t, `name: resume
target: {url: "sim://tiny?seed=3"}
load: {stages: [{concurrency: 2, requests: 6}]}
budgets: {overall: {error_rate: {max: 0}}}
sweep: {parameters: {max_num_seqs: [2, 4]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	// The real run library; under the race detector without its plots.
	s, err := p.Execute(context.Background(), Options{NoPlots: raceEnabled, Dir: dir, Run: func(ctx context.Context, sc *scenario.Scenario, dir string) (*report.Summary, error) {
		return run.Run(ctx, sc, run.Options{Dir: dir, Render: chart.Renderer{}, NoPlots: raceEnabled})
	}})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	counting := func(ctx context.Context, sc *scenario.Scenario, dir string) (*report.Summary, error) {
		calls++
		return run.Run(ctx, sc, run.Options{Dir: dir})
	}
	s2, err := p.Execute(context.Background(), Options{NoPlots: raceEnabled, Dir: dir, Run: counting, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 0 {
		t.Errorf("resume ran %d runs again", calls)
	}
	for i, r := range s2.Runs {
		want := s.Runs[i]
		if r.Status != StatusResumed || r.Metrics == nil || !reflect.DeepEqual(*r.Metrics, *want.Metrics) ||
			r.BudgetsPass == nil || *r.BudgetsPass != *want.BudgetsPass {
			t.Errorf("run %d: %s %+v %v; want resumed with %+v %v", i, r.Status, r.Metrics, r.BudgetsPass, want.Metrics, want.BudgetsPass)
		}
	}
	if err := os.Remove(filepath.Join(dir, p.Jobs[1].Dir, run.FileSummary)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Execute(context.Background(), Options{NoPlots: raceEnabled, Dir: dir, Run: counting, Resume: true}); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("resume ran %d runs, want the one without a summary", calls)
	}
	// Issue 9: an interrupted or killed run leaves a summary too; resume
	// must run it again, not take its partial figures. Cut job 0's results
	// before their end record, as a killed run leaves them.
	path := filepath.Join(dir, p.Jobs[0].Dir, run.FileResults)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	if !strings.HasPrefix(lines[len(lines)-1], `{"kind":"end"`) {
		t.Fatalf("the last record is not the end: %s", lines[len(lines)-1])
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines[:len(lines)-1], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	if _, err := p.Execute(context.Background(), Options{NoPlots: raceEnabled, Dir: dir, Run: counting, Resume: true, Log: &log}); err != nil {
		t.Fatal(err)
	}
	if calls != 2 || !strings.Contains(log.String(), "running again: the earlier run did not complete") {
		t.Errorf("resume ran %d runs in all, want 2; log:\n%s", calls, log.String())
	}
}

func TestExecuteInterrupted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, err := NewPlan(t.Context(), parse(t, "name: x\nload: {stages: [{concurrency: 1, requests: 1}]}\nsweep: {parameters: {max_num_seqs: [1, 2, 4]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &fakeRun{param: "max_num_seqs"}
	run := func(ctx context.Context, sc *scenario.Scenario, dir string) (*report.Summary, error) {
		if f.calls.Load() == 1 {
			cancel() // Ctrl-C during the second run
			return nil, ctx.Err()
		}
		return f.run(ctx, sc, dir)
	}
	s, err := p.Execute(ctx, Options{NoPlots: raceEnabled, Dir: dir, Run: run})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	var got []string
	for _, r := range s.Runs {
		got = append(got, r.Status)
	}
	if strings.Join(got, ",") != "ok,failed,skipped" {
		t.Errorf("statuses = %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, FileJSON)); err != nil {
		t.Errorf("no sweep.json after an interrupt: %v", err)
	}
}

func TestRecommend(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	m := func(tps, failed float64) *Metrics {
		return &Metrics{OK: 10, Failed: failed, OutputTokensPerSec: tps, TTFTP50: 50, TTFTP99: 100, ITLP50: 10, ITLP99: 20, E2EP50: 1000}
	}
	e2e := func(m *Metrics, ms float64) *Metrics { m.E2EP50 = ms; return m }
	ci := func(m *Metrics, lo, hi float64) *Metrics {
		m.CI, m.CIFrom = map[string][2]float64{"output_tokens_per_s": {lo, hi}}, "run"
		return m
	}
	for _, tc := range []struct {
		name   string
		points []Point
		label  string
		reason string
	}{
		{"best throughput", []Point{{Label: "a", Runs: 1, Metrics: m(10, 0)}, {Label: "b", Runs: 1, Metrics: m(30, 0)}, {Label: "c", Runs: 1, Metrics: m(20, 0)}},
			"b", "b has the best throughput without failed requests (30.0 output tokens/s, TTFT p50 50 p99 100 ms, ITL p50 10 p99 20 ms, E2E p50 1000 ms); no figure has a 95 % interval (too few samples)"},
		{"a tie goes to the lowest E2E p50", []Point{{Label: "a", Runs: 1, Metrics: e2e(m(1000, 0), 900)}, {Label: "b", Runs: 1, Metrics: e2e(m(995, 0), 800)}, {Label: "c", Runs: 1, Metrics: e2e(m(980, 0), 700)}},
			"b", "2 values were within 1 % of the best throughput and it has the lowest E2E p50 of them"},
		{"failed requests exclude", []Point{{Label: "a", Runs: 1, Metrics: m(10, 0)}, {Label: "b", Runs: 1, Metrics: m(30, 2)}},
			"a", "excluded: b: 2 failed requests"},
		{"a failed repeat excludes", []Point{{Label: "a", Runs: 1, Metrics: m(10, 0)}, {Label: "b", Runs: 1, Failed: 1, Metrics: m(30, 0)}},
			"a", "excluded: b: 1 of 2 runs failed"},
		{"budgets filter", []Point{{Label: "a", Runs: 1, Metrics: m(10, 0), BudgetsMet: &yes}, {Label: "b", Runs: 1, Metrics: m(30, 0), BudgetsMet: &no, Missed: []string{"overall.itl_ms.p99"}}},
			"a", "a meets every budget with the best throughput"},
		{"inconclusive excludes, citing its evidence", []Point{{Label: "a", Runs: 1, Metrics: m(10, 0), BudgetsMet: &yes, Verdict: "met"},
			{Label: "b", Runs: 1, Metrics: m(30, 0), BudgetsMet: &no, Verdict: "inconclusive", Inconclusive: []string{"overall.ttft_ms.p50"},
				undecided: []CheckMargin{{Name: "overall.ttft_ms.p50", Status: "inconclusive", Measured: ptrTo(193.3), Interval: &[2]float64{166.6, 201}, Limit: 190, Op: "<=", Unit: "ms"}}}},
			"a", "excluded: b: budgets inconclusive: overall.ttft_ms.p50 193.3 ms, 95 % interval [166.6, 201] straddles its limit ≤ 190"},
		{"overlapping throughput intervals are named", []Point{{Label: "a", Runs: 1, Metrics: ci(m(100, 0), 90, 110), BudgetsMet: &yes}, {Label: "b", Runs: 1, Metrics: ci(m(95, 0), 85, 105), BudgetsMet: &yes},
			{Label: "c", Runs: 1, Metrics: ci(m(50, 0), 45, 55), BudgetsMet: &yes}, {Label: "d", Runs: 1, Metrics: m(60, 0), BudgetsMet: &yes}},
			"a", "100.0 [90.0, 110.0] output tokens/s, TTFT p50 50 p99 100 ms, ITL p50 10 p99 20 ms, E2E p50 1000 ms); 95 % intervals in brackets, from the run's own samples (none for TTFT p50, TTFT p99, ITL p50, ITL p99, E2E p50: too few samples); " +
				"its throughput is not told apart from that of b (95.0 [85.0, 105.0]), d (60.0, no interval): the 95 % intervals overlap (or the other has none), so the data do not show it faster"},
		{"none qualifies", []Point{{Label: "a", Failed: 1}, {Label: "b", Runs: 1, Metrics: m(30, 0), BudgetsMet: &no, Missed: []string{"overall.itl_ms.p99"}}},
			"", "no value qualifies: a: no completed run; b: missed overall.itl_ms.p99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := recommend(tc.points, "")
			if got.Label != tc.label || !strings.Contains(got.Reason, tc.reason) {
				t.Errorf("recommend = %+v; want %q with reason containing %q", got, tc.label, tc.reason)
			}
		})
	}
}

// TestFigure renders the trade-off plot of a sweep with a failed value.
func TestFigure(t *testing.T) {
	t.Parallel()
	s := &Summary{Scenario: "mnbt-sweep", Parameters: []string{"max_num_batched_tokens"},
		Recommendation: Recommendation{Label: "max_num_batched_tokens=4096"}}
	for i, v := range []float64{1024, 2048, 4096, 8192, 16384} {
		pt := Point{Label: fmt.Sprintf("max_num_batched_tokens=%g", v), Values: map[string]string{"max_num_batched_tokens": strconv.FormatFloat(v, 'f', -1, 64)}}
		if i != 3 {
			pt.Metrics = &Metrics{TTFTP50: 8e5 / v, TTFTP99: 2e6 / v, ITLP50: 20 + v/1000, ITLP99: 30 + v/200, OutputTokensPerSec: 900 + v/20}
		}
		s.Points = append(s.Points, pt)
	}
	fig := Figure(s)
	if !fig.Numeric || fig.Recommended != 2 || !fig.Points[3].Missing {
		t.Errorf("figure = %+v", fig)
	}
	png, svg, err := fig.Render()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) || !bytes.Contains(svg, []byte("<svg")) {
		t.Error("not a PNG and an SVG")
	}
	if dir := os.Getenv("SWEEP_PLOT_DIR"); dir != "" { // to look at it
		_ = os.WriteFile(filepath.Join(dir, "sweep-test.png"), png, 0o644)
	}
}

func goldenCheck(t *testing.T, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", golden.Name(t)+".golden"), got, *update)
}

// TestIssue22ForeignServerOnPort (issue 22, item 9): with a fixed port
// that another server held, the launched server could not bind and the
// foreign one answered the readiness poll and took the load (4 requests
// measured against it). A port that already accepts connections before
// the launch is refused, and no load is sent.
func TestIssue22ForeignServerOnPort(t *testing.T) {
	t.Parallel()
	var foreign atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { foreign.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	doc := strings.Replace(serverSweep("serve"), "    ready_timeout:", "    port: "+port+"\n    ready_timeout:", 1)
	p, err := NewPlan(t.Context(), parse(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRun{param: "mode"}
	s, err := p.Execute(context.Background(), Options{NoPlots: raceEnabled, Dir: t.TempDir(), Run: f.run, Environ: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	want := "something already accepts connections at 127.0.0.1:" + port + " before the server is launched"
	if len(s.Runs) != 1 || s.Runs[0].Status != StatusFailed || !strings.Contains(s.Runs[0].Error, want) {
		t.Fatalf("runs %+v, want one failed with %q", s.Runs, want)
	}
	if f.calls.Load() != 0 || foreign.Load() != 0 {
		t.Errorf("the load ran %d times, the foreign server answered %d requests: want none", f.calls.Load(), foreign.Load())
	}
}

// TestPlanUpperCaseSim: a URL's scheme is case-insensitive, and SIM://tiny
// is the simulator for bench sweep as it is for bench run (the scenario
// and the plan ask internal/simurl, not a prefix of their own).
func TestPlanUpperCaseSim(t *testing.T) {
	t.Parallel()
	p, err := NewPlan(t.Context(), parse(t, strings.Replace(simSweep, "sim://tiny", "SIM://tiny", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Sim || !strings.Contains(p.Jobs[0].Scenario.Target.URL, "max_num_batched_tokens=256") {
		t.Errorf("sim %v, first job's target %s: want the setting in the simulator's URL", p.Sim, p.Jobs[0].Scenario.Target.URL)
	}
}

func ptrTo[T any](v T) *T { return &v }
