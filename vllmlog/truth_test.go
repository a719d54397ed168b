package vllmlog

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// truthFile is the ground truth of one corpus log (testdata/corpus/
// NNN-name.truth.json), written by hand from the log text alone.
type truthFile struct {
	// Engine is the server the log is from: "vllm", "sglang", "tgi" or
	// "llama.cpp".
	Engine string     `json:"engine"`
	Note   string     `json:"note"`
	Runs   []truthRun `json:"runs"` // the vLLM server starts, in order
}

// truthRun is what one server start states.
type truthRun struct {
	Generation string `json:"generation"` // "V0" or "V1"
	// Fields are the facts the log states, by the names of fieldReaders.
	// "final_error" is a part of the final error's text; "kv_check" is
	// "agrees" or "none" (no check can honestly be made).
	Fields map[string]any `json:"fields"`
	// Findings are the diagnosis IDs the log supports; any other
	// diagnosis is a false finding. Contradicts lists the tempting ones
	// the numbers rule out.
	Findings    []string `json:"findings"`
	Contradicts []string `json:"contradicts"`
	// Warnings are grouped warnings or errors: a part of the message and
	// how many times the log prints it.
	Warnings []struct {
		Contains string `json:"contains"`
		Count    int64  `json:"count"`
	} `json:"warnings"`
}

// fieldReaders read a truth field from a run: the value and whether the
// report states it at all.
var fieldReaders = map[string]func(r *Run) (any, bool){
	"version":                strField(func(r *Run) string { return r.Config.Version }),
	"model":                  strField(func(r *Run) string { return r.Config.Model }),
	"served_model_name":      strField(func(r *Run) string { return r.Config.ServedModelName }),
	"architecture":           strField(func(r *Run) string { return r.Config.Architecture }),
	"dtype":                  strField(func(r *Run) string { return r.Config.Dtype }),
	"quantization":           strField(func(r *Run) string { return r.Config.Quantization }),
	"kv_cache_dtype":         strField(func(r *Run) string { return r.Config.KVCacheDtype }),
	"cudagraph_mode":         strField(func(r *Run) string { return r.Config.CUDAGraphMode }),
	"tensor_parallel":        numField(func(r *Run) float64 { return float64(r.Config.TensorParallel) }),
	"pipeline_parallel":      numField(func(r *Run) float64 { return float64(r.Config.PipelineParallel) }),
	"data_parallel":          numField(func(r *Run) float64 { return float64(r.Config.DataParallel) }),
	"max_model_len":          numField(func(r *Run) float64 { return float64(r.Config.MaxModelLen) }),
	"max_num_seqs":           numField(func(r *Run) float64 { return float64(r.Config.MaxNumSeqs) }),
	"max_num_batched_tokens": numField(func(r *Run) float64 { return float64(r.Config.MaxNumBatchedTokens) }),
	"block_size":             numField(func(r *Run) float64 { return float64(r.Config.BlockSize) }),
	"gpu_memory_utilization": numField(func(r *Run) float64 { return r.Config.GPUMemoryUtilization }),
	"enforce_eager":          boolean(func(r *Run) *bool { return r.Config.EnforceEager }),
	"chunked_prefill":        boolean(func(r *Run) *bool { return r.Config.ChunkedPrefill }),
	"compile_cache_hit":      boolean(func(r *Run) *bool { return r.Startup.CompileCacheHit }),
	"available_kv_gib":       numField(func(r *Run) float64 { return r.KV.AvailableGiB }),
	"kv_tokens":              numField(func(r *Run) float64 { return float64(r.KV.Tokens) }),
	"gpu_blocks":             numField(func(r *Run) float64 { return float64(r.KV.GPUBlocks) }),
	"cpu_blocks":             numField(func(r *Run) float64 { return float64(r.KV.CPUBlocks) }),
	"max_concurrency":        numField(func(r *Run) float64 { return r.KV.Concurrency }),
	"concurrency_tokens":     numField(func(r *Run) float64 { return float64(r.KV.ConcurrencyLen) }),
	"profiling_blocks":       numField(func(r *Run) float64 { return float64(r.KV.ProfilingBlocks) }),
	"model_loading_gib":      numField(func(r *Run) float64 { return r.Startup.ModelGiB }),
	"torch_compile_s":        numField(func(r *Run) float64 { return r.Startup.CompileS }),
	"graphs_piecewise":       numField(func(r *Run) float64 { return float64(r.Startup.GraphsPiecewise) }),
	"graphs_full":            numField(func(r *Run) float64 { return float64(r.Startup.GraphsFull) }),
	"final_error":            strField(func(r *Run) string { return r.FinalError }),
	"stats_lines": func(r *Run) (any, bool) {
		n := 0.0
		for _, s := range r.Runtime.Engines {
			n += float64(s.Lines)
		}
		return n, n > 0
	},
	"max_running": seriesMax(func(s *Series) float64 { return s.MaxRunning }),
	"max_waiting": seriesMax(func(s *Series) float64 { return s.MaxWaiting }),
	"access_lines": func(r *Run) (any, bool) {
		n := 0.0
		for _, q := range r.Runtime.Requests {
			n += float64(q.Count)
		}
		return n, n > 0
	},
	"kv_check": func(r *Run) (any, bool) {
		switch ck := r.KV.Check; {
		case ck == nil || ck.Skipped != "":
			return "none", true
		case ck.Agrees():
			return "agrees", true
		}
		return "disagrees", true
	},
}

func strField(f func(r *Run) string) func(r *Run) (any, bool) {
	return func(r *Run) (any, bool) { v := f(r); return v, v != "" }
}

func numField(f func(r *Run) float64) func(r *Run) (any, bool) {
	return func(r *Run) (any, bool) { v := f(r); return v, v != 0 }
}

func boolean(f func(r *Run) *bool) func(r *Run) (any, bool) {
	return func(r *Run) (any, bool) {
		if b := f(r); b != nil {
			return *b, true
		}
		return nil, false
	}
}

func seriesMax(f func(s *Series) float64) func(r *Run) (any, bool) {
	return func(r *Run) (any, bool) {
		m := 0.0
		for _, s := range r.Runtime.Engines {
			m = max(m, f(s))
		}
		return m, len(r.Runtime.Engines) > 0
	}
}

// same compares a truth value (from JSON) with a report's.
func same(name string, want, got any) bool {
	switch w := want.(type) {
	case float64:
		g, ok := got.(float64)
		return ok && math.Abs(g-w) <= 1e-9*math.Max(1, math.Abs(w))
	case string:
		g, ok := got.(string)
		if name == "final_error" {
			return ok && strings.Contains(g, w)
		}
		return ok && g == w
	}
	return want == got
}

// score counts the ground-truth items of one group of logs.
type score struct{ items, read, missing int }

func (s score) String() string {
	if s.items == 0 {
		return "no items"
	}
	return fmt.Sprintf("%d of %d read (%.1f %%), %d missing", s.read, s.items, 100*float64(s.read)/float64(s.items), s.missing)
}

// TestCorpus runs the reader on every log of the corpus of real logs
// (testdata/corpus, see SOURCES.md) and checks every ground-truth item: a
// wrong field, a false finding, a wrong engine or a wrong number of
// server starts fails the test; an item the report does not state is
// missing and counts against the score, which must reach 90 % for V0
// logs, V1 logs and other engines' logs alike. Run with -v for the
// per-version scores.
func TestCorpus(t *testing.T) {
	t.Parallel()
	logs, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.log"))
	if err != nil || len(logs) < 30 {
		t.Fatalf("%d corpus logs (%v), want at least 30", len(logs), err)
	}
	scores := map[string]*score{}
	var misses []string
	for _, path := range logs {
		name := strings.TrimSuffix(filepath.Base(path), ".log")
		tf := readTruth(t, strings.TrimSuffix(path, ".log")+".truth.json")
		group := "other engines"
		if tf.Engine == "vllm" && len(tf.Runs) > 0 {
			group = tf.Runs[0].Generation
		}
		if scores[group] == nil {
			scores[group] = &score{}
		}
		rep, err := ParseFiles(context.Background(), []string{path}, Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c := checker{t: t, name: name, sc: scores[group]}
		c.check(tf, rep)
		misses = append(misses, c.misses...)
	}
	groups := make([]string, 0, len(scores))
	total := score{}
	for g, s := range scores {
		groups = append(groups, g)
		total.items, total.read, total.missing = total.items+s.items, total.read+s.read, total.missing+s.missing
	}
	sort.Strings(groups)
	for _, g := range groups {
		t.Logf("score %-13s %v", g, scores[g])
		if s := scores[g]; float64(s.read) < 0.9*float64(s.items) {
			t.Errorf("%s logs: %v, want at least 90 %%", g, s)
		}
	}
	t.Logf("score %-13s %v", "all", total)
	for _, m := range misses {
		t.Logf("missing: %s", m)
	}
}

func readTruth(t *testing.T, path string) truthFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("every corpus log needs its ground truth: %v", err)
	}
	var tf truthFile
	if err := json.Unmarshal(data, &tf); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return tf
}

// checker compares one log's report with its ground truth.
type checker struct {
	t      *testing.T
	name   string
	sc     *score
	misses []string
}

func (c *checker) item(ok, present bool, what string, args ...any) {
	c.sc.items++
	switch {
	case ok:
		c.sc.read++
	case !present:
		c.sc.missing++
		c.misses = append(c.misses, c.name+": "+fmt.Sprintf(what, args...))
	default:
		c.t.Errorf("%s: wrong: "+what, append([]any{c.name}, args...)...)
	}
}

func (c *checker) check(tf truthFile, rep *Report) {
	fs := rep.FileStats[0]
	if tf.Engine != "vllm" {
		named := fs.Foreign(rep) && strings.HasPrefix(strings.ToLower(fs.Engine), strings.ToLower(tf.Engine))
		c.item(named, fs.Engine != "" || len(rep.Runs) > 0, "engine %q, got %q with %d vLLM runs", tf.Engine, fs.Engine, len(rep.Runs))
		if len(rep.Unreadable()) == 0 {
			c.t.Errorf("%s: another engine's log is not reported as unreadable", c.name)
		}
		return
	}
	if fs.Foreign(rep) {
		c.t.Errorf("%s: a vLLM log taken for %s", c.name, fs.Engine)
	}
	if len(rep.Runs) != len(tf.Runs) {
		c.t.Errorf("%s: wrong: %d server starts, want %d", c.name, len(rep.Runs), len(tf.Runs))
		return
	}
	c.sc.items++
	c.sc.read++ // the number of server starts
	for i, want := range tf.Runs {
		c.checkRun(i, want, rep.Runs[i])
	}
}

func (c *checker) checkRun(i int, want truthRun, r *Run) {
	c.item(r.Config.Generation == want.Generation, r.Config.Generation != "", "run %d: generation %q, want %q", i+1, r.Config.Generation, want.Generation)
	keys := make([]string, 0, len(want.Fields))
	for k := range want.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		read, known := fieldReaders[k]
		if !known {
			c.t.Fatalf("%s: unknown truth field %q", c.name, k)
		}
		got, present := read(r)
		c.item(present && same(k, want.Fields[k], got), present, "run %d: %s = %v, want %v", i+1, k, got, want.Fields[k])
	}
	var ids []string
	for _, d := range r.Diagnoses {
		ids = append(ids, d.ID)
		if len(d.Evidence) == 0 || d.Evidence[0].Line == 0 {
			c.t.Errorf("%s: diagnosis %s cites no line", c.name, d.ID)
		}
		if !slices.Contains(want.Findings, d.ID) {
			c.t.Errorf("%s: false finding in run %d: %s: %s", c.name, i+1, d.ID, d.Text)
		}
	}
	for _, f := range want.Findings {
		c.item(slices.Contains(ids, f), false, "run %d: finding %s not made (made: %v)", i+1, f, ids)
	}
	for _, w := range want.Warnings {
		var got *Finding
		for j := range r.Findings {
			if strings.Contains(r.Findings[j].Message, w.Contains) {
				got = &r.Findings[j]
			}
		}
		c.item(got != nil && got.Count == w.Count, got != nil, "run %d: warning %q ×%d, got %v", i+1, w.Contains, w.Count, got)
	}
}
