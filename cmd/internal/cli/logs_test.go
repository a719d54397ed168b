package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testLog = "../../../vllmlog/testdata/gpt-oss-120b.log"

// TestLogs explains the gpt-oss-120b test log in each format and writes
// the plots and logs.json with --out.
func TestLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e, out, errb := testEnv()
	if err := bench(context.Background(), e, []string{"logs", testLog, "--out", dir}); err != nil {
		t.Fatalf("logs: %v\nstderr: %s", err, errb)
	}
	for _, want := range []string{"GPU KV cache size          130,960 tokens", "2.46× at 98,304 tokens per request", "agrees (gpt-oss-120b", "544.8 → 348.6 tokens/s (−36 %)", "4.3 % → 59.3 %"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	for _, name := range []string{"logs.json", "startup.png", "startup.svg", "decay.png", "decay.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	e, out, _ = testEnv()
	if err := bench(context.Background(), e, []string{"logs", "--format", "json", testLog}); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Schema int
		Runs   []struct {
			KVCache struct{ Tokens int } `json:"kv_cache"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Schema != 2 || len(rep.Runs) != 1 || rep.Runs[0].KVCache.Tokens != 130960 {
		t.Errorf("JSON report: %+v, %v", rep, err)
	}
}

// TestLogsReplay writes the replay of the gpt-oss-120b log, prints the
// log's stats lines beside the simulator's, and keeps the files of an
// earlier replay unless --force.
func TestLogsReplay(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "replay")
	e, out, errb := testEnv()
	if err := bench(context.Background(), e, []string{"logs", testLog, "--replay", dir}); err != nil {
		t.Fatalf("logs --replay: %v\nstderr: %s", err, errb)
	}
	for _, want := range []string{"wrote " + filepath.Join(dir, "replay.yaml"), "Assumed", "The log does not tell",
		"11-28 12:04:54", "348.6 / 348.", "Generation throughput within ±5 % of the log's at 7 of 7 lines with tokens", "Running count equal at 7 of 7 lines"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	for _, name := range []string{"replay.yaml", "server.yaml", "trace.jsonl"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	e, _, _ = testEnv()
	if err := bench(context.Background(), e, []string{"logs", testLog, "--replay", dir}); exitCode(err) != exitUsage || !strings.Contains(err.Error(), "--force") {
		t.Errorf("a second replay into %s: %v, want a usage error naming --force", dir, err)
	}
	e, _, _ = testEnv()
	if err := bench(context.Background(), e, []string{"logs", testLog, "--replay", dir, "--force"}); err != nil {
		t.Errorf("--force: %v", err)
	}
}

// TestLogsFollowStops: --follow prints what the log holds and returns
// when its context ends (Ctrl-C), with exit code 0.
func TestLogsFollowStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e, out, errb := testEnv()
	if err := bench(ctx, e, []string{"logs", "--follow", testLog}); err != nil {
		t.Fatalf("logs --follow: %v\nstderr: %s", err, errb)
	}
	if !strings.Contains(out.String(), "following "+testLog) || !strings.Contains(out.String(), "generation 348.6 tok/s") {
		t.Errorf("output: %s", out)
	}
}

func TestLogsUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []cliCase{
		{"no file", []string{"logs"}, exitUsage, "want log files"},
		{"bad format", []string{"logs", testLog, "--format", "yaml"}, exitUsage, `--format: want text, json or markdown, got "yaml"`},
		{"follow two files", []string{"logs", "--follow", testLog, testLog}, exitUsage, "one with --follow"},
		{"missing file", []string{"logs", "no/such.log"}, exitFailed, "no such file"},
		{"missing model config", []string{"logs", testLog, "--model-config", "no/config.json"}, exitFailed, "model config"},
		{"help", []string{"logs", "--help"}, exitOK, "Examples"},
		{"another engine", []string{"logs", "../../../vllmlog/testdata/corpus/051-sglang-decode-batches.log"}, exitFailed, "is a log of SGLang, not of vLLM"},
		{"llama.cpp", []string{"logs", "../../../vllmlog/testdata/corpus/055-llamacpp-journald.log"}, exitFailed, "llama.cpp"},
		{"nothing understood", []string{"logs", "../../../vllmlog/testdata/corpus/SOURCES.md"}, exitFailed, "nothing in ../../../vllmlog/testdata/corpus/SOURCES.md was understood"},
		{"replay two files", []string{"logs", "--replay", "x", testLog, testLog}, exitUsage, "--replay takes one log file"},
		{"replay as json", []string{"logs", "--replay", "x", "--format", "json", testLog}, exitUsage, "neither --follow, --out nor --format"},
		{"replay of one stats line", []string{"logs", "--replay", "x", "../../../vllmlog/testdata/corpus/014-v0-finished-requests.log"}, exitFailed, "has 1 stats line(s), a replay needs at least 2"},
		{"replay of another engine", []string{"logs", "--replay", "x", "../../../vllmlog/testdata/corpus/051-sglang-decode-batches.log"}, exitFailed, "is a log of SGLang"},
	} {
		checkCLI(t, tc)
	}
}

// TestCalibrateServerLogV0 reads the capacity of a V0 log a user pasted
// (two starts; the last prints "# GPU blocks: 1478" and max_model_len
// 29,000 only in its concurrency line) instead of refusing it: what fails
// then is the missing results file, not the log.
func TestCalibrateServerLogV0(t *testing.T) {
	t.Parallel()
	e, _, errb := testEnv()
	err := bench(context.Background(), e, []string{"calibrate", filepath.Join(t.TempDir(), "no-results"), "--out", filepath.Join(t.TempDir(), "twin.yaml"),
		"--server-log", "../../../vllmlog/testdata/corpus/012-v0-kv-fragments-two-starts.log"})
	if err == nil || strings.Contains(err.Error(), "server-log") {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"max_model_len = 29000", "usable KV-cache blocks = 1478"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb)
		}
	}
}
