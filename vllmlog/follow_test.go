package vllmlog

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// patience bounds every wait of the follow tests; a machine that cannot
// produce a line in that time skips the test rather than fail it.
const patience = 20 * time.Second

func statsLine(stamp, gen, kv string) string {
	return "(APIServer pid=90) INFO 11-28 " + stamp + " [loggers.py:236] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: " +
		gen + " tokens/s, Running: 6 reqs, Waiting: 0 reqs, GPU KV cache usage: " + kv + "%, Prefix cache hit rate: 81.6%\n"
}

// follower runs Follow on path and hands over what it writes line by line.
type follower struct {
	t      *testing.T
	cancel context.CancelFunc
	done   chan error
	lines  chan string
}

func startFollow(t *testing.T, path, format string) *follower {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	f := &follower{t: t, cancel: cancel, done: make(chan error, 1), lines: make(chan string, 64)}
	go func() {
		err := Follow(ctx, path, Options{}, format, 5*time.Millisecond, pw)
		pw.Close()
		f.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			f.lines <- sc.Text()
		}
		close(f.lines)
	}()
	t.Cleanup(cancel)
	return f
}

// next returns the next line Follow writes.
func (f *follower) next(what string) string {
	f.t.Helper()
	select {
	case l, ok := <-f.lines:
		if !ok {
			f.t.Fatalf("Follow stopped before writing %s: %v", what, <-f.done)
		}
		return l
	case <-time.After(patience):
		f.t.Skipf("the machine is too slow: no %s within %v", what, patience)
	}
	return ""
}

// stop cancels Follow and checks that it returns, without error.
func (f *follower) stop() {
	f.t.Helper()
	f.cancel()
	select {
	case err := <-f.done:
		if err != nil {
			f.t.Errorf("Follow: %v", err)
		}
	case <-time.After(patience):
		f.t.Fatal("Follow did not stop when its context was canceled")
	}
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFollow tails a log that grows during the test: the start-up already
// written is summarised with the latest stats line, each new stats line is printed when its newline
// arrives (not before), a truncated and rewritten file is read from its
// start, and canceling the context stops it.
func TestFollow(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "server.log")
	if err := os.WriteFile(path, []byte(strings.Join(startupLines, "\n")+"\n"+statsLine("11:59:14", "544.8", "4.3")), 0o644); err != nil {
		t.Fatal(err)
	}
	f := startFollow(t, path, "text")
	if h := f.next("header"); !strings.Contains(h, "following "+path) || !strings.Contains(h, "vLLM 0.11.2") || !strings.Contains(h, "130,960 tokens (2.46× at 98,304)") {
		t.Errorf("header %q", h)
	}
	if got := f.next("latest stats line"); !strings.Contains(got, "11-28 11:59:14  engine 000  generation 544.8") {
		t.Errorf("latest stats line %q", got)
	}
	// Half a line, a pause of a few polls, then the rest: only the whole
	// line counts.
	line := statsLine("11:59:44", "514.2", "10.4")
	cut := strings.Index(line, "514") + 2
	appendFile(t, path, line[:cut])
	time.Sleep(30 * time.Millisecond)
	appendFile(t, path, line[cut:]+"garbage that is not vLLM's\n"+statsLine("12:00:44", "468.0", "21.5"))
	for _, want := range []string{"11-28 11:59:44  engine 000  generation 514.2 tok/s  prompt 0.0 tok/s  running 6  waiting 0  KV 10.4 %  prefix hit 81.6 %", "11-28 12:00:44  engine 000  generation 468.0"} {
		if got := f.next("stats line"); !strings.HasPrefix(got, want) {
			t.Errorf("got %q, want %q…", got, want)
		}
	}
	// A restarted server truncates its log and writes it again.
	if err := os.WriteFile(path, []byte(statsLine("12:01:44", "426.6", "31.6")), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := f.next("line after truncation"); !strings.Contains(got, "generation 426.6") {
		t.Errorf("after truncation: %q", got)
	}
	f.stop()
}

// TestFollowJSON writes one JSON object per stats line. The line may be
// appended before Follow has read the file or after: it is written either
// way, as the latest line or as a new one.
func TestFollowJSON(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "server.log")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f := startFollow(t, path, "json")
	appendFile(t, path, statsLine("11:59:14", "544.8", "4.3"))
	var got map[string]any
	if err := json.Unmarshal([]byte(f.next("JSON line")), &got); err != nil {
		t.Fatal(err)
	}
	if got["engine"] != "000" || got["generation_tokens_per_s"] != 544.8 || got["kv_usage_perc"] != 4.3 || got["time"] != "11-28 11:59:14" {
		t.Errorf("JSON line %v", got)
	}
	f.stop()
}

func TestFollowErrors(t *testing.T) {
	t.Parallel()
	if err := Follow(context.Background(), filepath.Join(t.TempDir(), "none.log"), Options{}, "text", 0, io.Discard); err == nil {
		t.Error("a missing file is an error")
	}
	if err := Follow(context.Background(), "x", Options{}, "yaml", 0, io.Discard); err == nil {
		t.Error("an unknown format is an error")
	}
}
