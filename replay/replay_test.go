package replay

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/vllmlog"
)

// The seed logs live with the log reader's tests.
const seeds = "../vllmlog/testdata/"

// replayLog builds the replay of a log file, writes it, checks that the
// written scenario loads, and runs it in virtual time.
func replayLog(t *testing.T, path string) (*Replay, *Comparison) {
	t.Helper()
	rep, err := vllmlog.ParseFiles(context.Background(), []string{path}, vllmlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(rep)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sp, err := r.Write(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenario.Load(sp); err != nil {
		t.Fatalf("the written scenario does not load: %v", err)
	}
	c, err := Check(context.Background(), sp, r)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := c.Write(&b); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d request(s), origin %.1f s\n%s", filepath.Base(path), len(r.Trace), r.Origin, b.String())
	for _, n := range r.Assumed {
		t.Logf("assumed: %s", n)
	}
	for _, n := range r.Unknown {
		t.Logf("unknown: %s", n)
	}
	return r, c
}

// within reports whether got is within rel of want, or, for a zero want,
// within the 0.1 a stats line prints.
func within(got, want, rel float64) bool {
	if want == 0 {
		return math.Abs(got) <= 0.05
	}
	return math.Abs(got/want-1) <= rel
}

// TestReplayDecay: the replay of the gpt-oss-120b seed shows the decay
// (544.8 → 348.6 tokens/s over its seven stats lines) within 5 % at every
// line, with the six requests running throughout.
func TestReplayDecay(t *testing.T) {
	_, c := replayLog(t, seeds+"gpt-oss-120b.log")
	if len(c.Lines) != 7 {
		t.Fatalf("%d lines compared, want the log's 7", len(c.Lines))
	}
	for _, l := range c.Lines {
		if !within(l.Replay.Gen, l.Log.Gen, 0.05) {
			t.Errorf("%s: replay %.1f tokens/s, log %.1f (%+.1f %%, allowed ±5 %%)", l.Log.Time, l.Replay.Gen, l.Log.Gen, 100*l.GenDiff())
		}
		if l.Replay.Running != l.Log.Running || l.Replay.Waiting != l.Log.Waiting || l.Replay.Prompt != 0 {
			t.Errorf("%s: replay running %g waiting %g prompt %.1f, log %g, %g, %.1f", l.Log.Time, l.Replay.Running, l.Replay.Waiting, l.Replay.Prompt, l.Log.Running, l.Log.Waiting, l.Log.Prompt)
		}
	}
	if c.NotOK != 0 || c.OK != 6 {
		t.Errorf("%d requests completed, %d not: want the log's 6, all completed", c.OK, c.NotOK)
	}
}

// TestReplayA100: the replay of the A100 gpt-oss-20b seed reproduces its
// three stats intervals (prompt and generation throughput, running)
// within 10 %.
func TestReplayA100(t *testing.T) {
	_, c := replayLog(t, seeds+"gpt-oss-20b.log")
	if len(c.Lines) != 3 {
		t.Fatalf("%d lines compared, want the log's 3", len(c.Lines))
	}
	for _, l := range c.Lines {
		if !within(l.Replay.Gen, l.Log.Gen, 0.10) || !within(l.Replay.Prompt, l.Log.Prompt, 0.10) {
			t.Errorf("%s: replay prompt %.1f generation %.1f tokens/s, log %.1f and %.1f (allowed ±10 %%)", l.Log.Time, l.Replay.Prompt, l.Replay.Gen, l.Log.Prompt, l.Log.Gen)
		}
		if l.Replay.Running != l.Log.Running {
			t.Errorf("%s: replay running %g, log %g", l.Log.Time, l.Replay.Running, l.Log.Running)
		}
	}
}
