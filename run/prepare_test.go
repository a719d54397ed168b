package run

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestPrepareProgress: the preparation says nothing in its first
// prepareEvery, then one line per prepareEvery with its step and share.
func TestPrepareProgress(t *testing.T) {
	t.Parallel()
	if prepareProgress(nil) != nil {
		t.Error("a progress without a writer")
	}
	var b strings.Builder
	p := prepareProgress(&b)
	p("count tokens", 10, 100, "prompts")
	if b.Len() != 0 {
		t.Fatalf("a line before %v: %q", prepareEvery, b.String())
	}
	time.Sleep(prepareEvery + 10*time.Millisecond)
	p("count tokens", 25, 100, "prompts")
	p("count tokens", 26, 100, "prompts")
	p2 := prepareProgress(&b)
	time.Sleep(prepareEvery + 10*time.Millisecond)
	p2("read d.jsonl", 3<<20, 12<<20, "bytes")
	want := "preparing prompts (Ns): count tokens 25 of 100 prompts (25 %); Ctrl-C stops\n" +
		"preparing prompts (Ns): read d.jsonl 3 MiB of 12 MiB (25 %); Ctrl-C stops\n"
	// The elapsed time depends on the machine's load.
	if got := regexp.MustCompile(`\(\d+s\)`).ReplaceAllString(b.String(), "(Ns)"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
