//go:build linux

package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestIssue22TermDuringPreparation (issue 22, item 3): one SIGTERM (what
// timeout and Kubernetes send) was ignored for 90 s while the prompts of a
// large dataset were read and counted. bench runs as a process (the test
// binary acting as bench) with a dataset that takes seconds to prepare; a
// single SIGTERM, sent once bench says how far the preparation got, ends
// it with exit 130 at once, leaving nothing in --out (the directory it
// made is gone).
func TestIssue22TermDuringPreparation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// 150,000 prompts of 300 bytes: 45 MB, seconds to count on any machine.
	f, err := os.Create(filepath.Join(dir, "big.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	words := strings.Repeat("a dataset prompt with enough words to take a while to count, ", 4)
	for i := range 150_000 {
		fmt.Fprintf(w, `{"prompt": "%d %s", "output_tokens": 8}`+"\n", i, words)
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		t.Fatal(err)
	}
	scen := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(scen, []byte(`name: big
target: {url: sim://tiny}
prompts: {dataset: {path: big.jsonl}}
load: {stages: [{concurrency: 1, requests: 4}]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	bench := exec.Command(os.Args[0], "run", scen, "--out", out)
	bench.Env = append(os.Environ(), benchEnv+"=1")
	stderr, err := bench.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	defer bench.Process.Kill()
	var log strings.Builder
	lines := bufio.NewScanner(stderr)
	for !strings.Contains(log.String(), "preparing prompts") {
		if !lines.Scan() {
			t.Fatalf("bench ended before it said it was preparing the prompts: %v\n%s", lines.Err(), log.String())
		}
		log.WriteString(lines.Text() + "\n")
	}
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		for lines.Scan() {
			b.WriteString(lines.Text() + "\n")
		}
		rest <- b.String()
	}()

	sent := time.Now()
	if err := bench.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Its stderr to the end first: Wait closes the pipe, and a read still
	// under way then loses the last lines (the ones this test reads).
	select {
	case s := <-rest:
		log.WriteString(s)
	case <-time.After(time.Minute):
		t.Fatalf("bench did not exit within a minute of one SIGTERM\n%s", log.String())
	}
	waitErr := bench.Wait()
	took := time.Since(sent)
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) || ee.ExitCode() != exitInterrupted {
		t.Errorf("bench ended with %v, want exit status %d\n%s", waitErr, exitInterrupted, log.String())
	}
	// The acceptance is 2 s (measured by the reproducible command in the
	// report); the bound here only tells "obeyed" from "ignored until the
	// preparation ended", with room for a busy machine.
	t.Logf("exited %v after SIGTERM", took)
	if took > 10*time.Second && !sweepRace {
		t.Errorf("bench took %v to exit after SIGTERM during the preparation\n%s", took, log.String())
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		entries, _ := os.ReadDir(out)
		t.Errorf("--out is left behind (%v) holding %d files", err, len(entries))
	}
	if !strings.Contains(log.String(), "context canceled") {
		t.Errorf("the message does not say the preparation was stopped:\n%s", log.String())
	}
}
