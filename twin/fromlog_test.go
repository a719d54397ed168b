package twin

import (
	"context"
	"strings"
	"testing"

	"github.com/servebench/servebench/vllmlog"
)

// TestCalibrateFromServerLog takes the capacity a vLLM log states (the
// gpt-oss-120b seed: max_num_seqs 6, max_model_len 98,304, 130,960 KV
// tokens) into a calibration that scraped nothing; a setting given
// explicitly wins over the log's.
func TestCalibrateFromServerLog(t *testing.T) {
	t.Parallel()
	rep, err := vllmlog.ParseFiles(context.Background(), []string{"../vllmlog/testdata/gpt-oss-120b.log"}, vllmlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{MaxNumBatchedTokens: 512}
	taken, err := opts.FromLog(rep)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("taken from the log: %q", taken)
	if opts.MaxNumSeqs != 6 || opts.MaxModelLen != 98304 || opts.MaxNumBatchedTokens != 512 {
		t.Errorf("options %+v: want max_num_seqs 6 and max_model_len 98304 from the log, the given budget 512 kept", opts)
	}
	bs := opts.BlockSize
	if bs == 0 {
		bs = DefaultBlockSize
	}
	// gpt-oss keeps a full-attention and a sliding-window group in one
	// pool: 130,960 tokens is one group's share of 16,370 blocks, one of
	// them the null block.
	if opts.KVBlocks != 16369 {
		t.Errorf("KV blocks %d, want the pool of 16,370 blocks less the null block", opts.KVBlocks)
	}

	dir := t.TempDir()
	target := writeTruth(t, dir)
	doc := strings.Replace(workload("one", target, stageDoc(4, "10s")), "scrape: {interval: 250ms}", "scrape: {enabled: false}", 1)
	res, err := Calibrate([]string{virtualRun(t, dir, doc, 0)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{"max_num_seqs": 6, "max_model_len": 98304, "num_gpu_blocks_override": float64(opts.KVBlocks + 1), "max_num_batched_tokens": 512} {
		e, ok := res.Estimate(name)
		if !ok || e.Value != want || e.Source != "given" {
			t.Errorf("%s = %+v, want %g given", name, e, want)
			continue
		}
		if fromLog := strings.HasPrefix(e.Note, "from the server log"); fromLog == (name == "max_num_batched_tokens") {
			t.Errorf("%s note %q: want the log named for the log's settings only", name, e.Note)
		}
	}
	if notes := strings.Join(res.Notes, "\n"); strings.Contains(notes, "KV-cache capacity") || strings.Contains(notes, "max_num_seqs:") {
		t.Errorf("the notes still call the capacity unknown:\n%s", notes)
	}

	if _, err := (&Options{}).FromLog(&vllmlog.Report{}); err == nil {
		t.Error("a log without a server start gave no error")
	}
}

// TestFromLogRealLogs takes the capacity from real logs users pasted
// (vllmlog/testdata/corpus): max_model_len stated only by the concurrency
// line, and a V0 log that prints its blocks.
func TestFromLogRealLogs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		log            string
		maxLen, blocks int
	}{
		// "Maximum concurrency for 32,768 tokens per request: 1.30x", 42,656 tokens.
		{"024-v1-kv-lines-unnamed-model.log", 32768, 42656 / DefaultBlockSize},
		// V0: "# GPU blocks: 1478, # CPU blocks: 2048", "Maximum concurrency for 29000 tokens …".
		{"012-v0-kv-fragments-two-starts.log", 29000, 1478},
	} {
		rep, err := vllmlog.ParseFiles(context.Background(), []string{"../vllmlog/testdata/corpus/" + tc.log}, vllmlog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var opts Options
		taken, err := opts.FromLog(rep)
		if err != nil {
			t.Fatalf("%s: %v", tc.log, err)
		}
		if opts.MaxModelLen != tc.maxLen || opts.KVBlocks != tc.blocks {
			t.Errorf("%s: max_model_len %d, KV blocks %d; want %d, %d (%q)", tc.log, opts.MaxModelLen, opts.KVBlocks, tc.maxLen, tc.blocks, taken)
		}
	}
}
