//go:build linux

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
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
