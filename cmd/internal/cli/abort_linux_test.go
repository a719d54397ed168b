//go:build linux

package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestIssue11AbortKillsSweepServer (issue 11, item 10): a second Ctrl-C
// made bench exit at once, and the server a sweep had launched from a
// string command (a shell, and the server its child) kept running with its
// GPU and port. The abort now kills the server's process group before
// exiting. This runs bench sweep as a process (the test binary acting as
// bench) whose server is `bench sim`, interrupts it twice while the load
// runs, and checks that nothing of the server's process group is left.
func TestIssue11AbortKillsSweepServer(t *testing.T) {
	t.Parallel()
	path := writeScenario(t, fmt.Sprintf(`name: abort
target: {api: completions}
prompts: {input_tokens: 16, output_tokens: 8}
load: {stages: [{concurrency: 1, duration: 2m}]}
sweep:
  parameters: {max_num_seqs: [4]}
  server:
    command: %q
    env: {%s: "1"}
    ready_timeout: 30s
    stop_timeout: 30s
`, os.Args[0]+" sim --preset tiny --addr 127.0.0.1:{{.port}}", benchEnv))
	bench := exec.Command(os.Args[0], "sweep", path, "--out", filepath.Join(t.TempDir(), "out"), "--quiet")
	bench.Env = append(os.Environ(), benchEnv+"=1")
	stderr, err := bench.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	defer bench.Process.Kill()

	// Read bench's log until the server is ready, noting its process group.
	var log strings.Builder
	pgid := 0
	lines := bufio.NewScanner(stderr)
	for pgid == 0 || !strings.Contains(log.String(), "server ready") {
		if !lines.Scan() {
			t.Fatalf("bench stopped before the server was ready: %v\n%s", lines.Err(), log.String())
		}
		log.WriteString(lines.Text() + "\n")
		if i := strings.Index(lines.Text(), "(process group "); i >= 0 && pgid == 0 {
			pgid, _ = strconv.Atoi(strings.TrimRight(strings.Fields(lines.Text()[i:])[2], ","))
		}
	}
	defer syscall.Kill(-pgid, syscall.SIGKILL) // if the test fails
	go func() { _, _ = io.Copy(io.Discard, stderr) }()

	// Ctrl-C twice: the second aborts.
	for range 2 {
		if err := bench.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
	}
	exited := make(chan error, 1)
	go func() { exited <- bench.Wait() }()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
			t.Errorf("bench ended with %v, want exit status %d", err, exitInterrupted)
		}
	case <-time.After(time.Minute):
		t.Fatalf("bench did not exit after a second interrupt\n%s", log.String())
	}
	if !eventually(func() bool { return !groupAlive(pgid) }) {
		t.Fatalf("the server's process group %d outlived bench's abort\n%s", pgid, log.String())
	}
}

// groupAlive reports whether a process of process group pgid is alive: a
// zombie (ended, waiting for init to reap it) counts as gone.
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// "pid (comm) S ppid pgrp …": comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(data), ')')
		f := strings.Fields(string(data[i+1:]))
		if i >= 0 && len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			return true
		}
	}
	return false
}

// eventually polls cond every 20 ms until it holds, for up to 10 s (a
// killed process ends in milliseconds; the bound keeps a failure from
// hanging).
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestAbortRecordsInFlight (issue 11, item 14): after a second Ctrl-C the
// requests in flight are still recorded, as canceled, with the end record
// and summary.json, before bench exits; the grace period is not waited
// for. bench runs as a process against a simulator whose requests last
// about 30 s; the interrupts come once the server has all four running.
func TestAbortRecordsInFlight(t *testing.T) {
	t.Parallel()
	path := writeScenario(t, `name: abort
target: {url: sim://tiny, api: completions}
prompts: {input_tokens: 16, output_tokens: 1000}
scrape: {enabled: false}
load: {stages: [{concurrency: 4, duration: 2m}]}
`)
	out := filepath.Join(t.TempDir(), "out")
	bench := exec.Command(os.Args[0], "run", path, "--out", out, "--set", "request.ignore_eos=true", "--set", "target.url=sim://tiny?per_kv_token_ns=30000")
	bench.Env = append(os.Environ(), benchEnv+"=1")
	stderr, err := bench.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	defer bench.Process.Kill()

	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default: // nobody reads any more
			}
		}
		close(lines)
	}()
	waitLine := func(what string) string {
		t.Helper()
		timeout := time.After(time.Minute)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("bench ended before printing %q", what)
				}
				if strings.Contains(l, what) {
					return l
				}
			case <-timeout:
				t.Fatalf("bench did not print %q within a minute", what)
			}
		}
	}
	// The first line names the simulator's URL: poll its /metrics until
	// the four requests run.
	first := waitLine("http://127.0.0.1:")
	url := strings.Fields(first[strings.Index(first, "http://127.0.0.1:"):])[0]
	if !eventually(func() bool { return runningRequests(url) == 4 }) {
		t.Fatalf("the simulator at %s never ran 4 requests", url)
	}

	// Two interrupts sent back to back can reach the process as one (a
	// pending signal is not queued twice): the second follows bench's
	// answer to the first.
	if err := bench.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	waitLine("Ctrl-C again to abort")
	start := time.Now()
	if err := bench.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- bench.Wait() }()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
			t.Errorf("bench ended with %v, want exit status %d", err, exitInterrupted)
		}
	case <-time.After(time.Minute):
		t.Fatal("bench did not exit after a second interrupt")
	}

	if d := time.Since(start); d > 4*time.Second {
		t.Logf("bench took %v to exit after the abort (the grace period is 5 s)", d)
	}
	data, err := os.ReadFile(filepath.Join(out, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	canceled := strings.Count(string(data), `"outcome":"canceled"`)
	aborted := strings.Count(string(data), `"error":"canceled: aborted"`)
	end := strings.Contains(string(data), `{"kind":"end",`)
	if canceled != 4 || aborted != 4 || !end {
		t.Errorf("results hold %d canceled requests, %d by the abort (want the 4 in flight) and end record %v:\n%.3000s",
			canceled, aborted, end, data)
	}
	if _, err := os.Stat(filepath.Join(out, "summary.json")); err != nil {
		t.Errorf("no summary after the abort: %v", err)
	}
}

// runningRequests reads vllm:num_requests_running from a simulator's
// /metrics (-1 when it cannot).
func runningRequests(base string) int {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(body), "\n") {
		if strings.HasPrefix(line, "vllm:num_requests_running{") {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err == nil {
				return int(v)
			}
		}
	}
	return -1
}
