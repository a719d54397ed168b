package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
)

// shardFile writes shard idx of n as a results file: its share of a
// closed loop (seq idx, idx+n, …), one failed request with its own error
// message, scrapes of one server every 500 ms, and an end record whose
// load began at began (from the shard's own epoch, started).
func writeShardFile(t *testing.T, dir string, idx, n int, hash string, started, startAt time.Time, began time.Duration) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("shard-%d", idx), "results.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := results.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	hdr := &results.Header{Schema: results.Schema, Tool: "servebench", Version: "test", Started: started,
		Host: fmt.Sprintf("node-%d", idx), Target: "http://vllm:8000", Model: "m", Ends: true,
		Scenario: json.RawMessage(`{"name":"s","request":{"ignore_eos":true},"scrape":{"interval":"500ms"},"load":{"stages":[{"name":"c","concurrency":6}]}}`),
		Shard:    &results.Shard{Index: idx, Count: n, ScenarioHash: hash, StartAt: startAt}}
	recs := []results.Record{results.HeaderRecord(hdr)}
	for j := range 10 {
		r := okResult(uint64(idx+n*j), 0, began+time.Duration(j*200+idx*37)*msec, time.Duration(20+idx*5+j)*msec, 10*msec, 8)
		recs = append(recs, results.ResultRecord(&r))
	}
	recs = append(recs, results.ResultRecord(&results.Result{Seq: uint64(idx + n*10), Outcome: results.Failed,
		ErrorClass: results.ErrHTTP5xx, Error: fmt.Sprintf("shard %d's failure", idx), Scheduled: began + time.Second,
		Sent: began + time.Second, End: began + time.Second + msec}))
	for k := range 8 {
		at := began - 100*msec + time.Duration(k)*500*msec + time.Duration(idx)*13*msec
		recs = append(recs, results.SampleRecord(&results.Sample{Index: uint64(k), Target: "http://vllm:8000/metrics",
			Start: at - msec, At: at, OK: true, Reading: results.Reading{Profile: "vllm", Snapshot: results.Snapshot{
				Values: results.Values{results.KVUsage: 0.1 * float64(k), results.Running: 3, results.GenerationTokens: float64(200 * k)}}}}))
	}
	recs = append(recs, results.EndRecord(&results.End{At: began + 4*time.Second, Completed: true, Began: began}))
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func shardSummaryJSON(t *testing.T, s *Summary) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJSON(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestMergeShardsOrderIndependent merges three shards given in every
// order: the summaries are the same bytes (error messages, metadata and
// the kept scrape series included); counts add up; the scrapes of the one
// server are taken from shard 0 only.
func TestMergeShardsOrderIndependent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	start := t0.Add(10 * time.Second)
	var paths []string
	for i := range 3 {
		// Each machine started its process at a different time and began
		// its load at the agreed start.
		started := t0.Add(time.Duration(i) * time.Second)
		paths = append(paths, writeShardFile(t, dir, i, 3, "h", started, start, start.Sub(started)))
	}
	var want []byte
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 0, 2}, {2, 0, 1}} {
		ps := []string{paths[order[0]], paths[order[1]], paths[order[2]]}
		_, s, err := Rebuild(ps...)
		if err != nil {
			t.Fatal(err)
		}
		got := shardSummaryJSON(t, s)
		if want == nil {
			want = got
			if s.Overall.Requests.OK != 30 || s.Overall.Requests.Failed != 3 || s.Overall.Tokens.Output != 30*8 {
				t.Errorf("merged requests %+v tokens %+v", s.Overall.Requests, s.Overall.Tokens)
			}
			if s.Correlation == nil || s.Correlation.ScrapeOK != 8 {
				t.Errorf("scrapes kept: %+v, want shard 0's 8", s.Correlation)
			}
			if sh := s.Shards; sh == nil || sh.Count != 3 || len(sh.Merged) != 3 || sh.StartSpread != 0 || sh.MaxLate != 0 {
				t.Errorf("shards = %+v", sh)
			}
			if len(s.Warnings) != 0 {
				t.Errorf("warnings for a clean merge: %q", s.Warnings)
			}
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("order %v gives another summary:\n%s\nwant\n%s", order, got, want)
		}
	}
	// A directory of shards reads as the set.
	if _, s, err := Rebuild(dir); err != nil || !bytes.Equal(shardSummaryJSON(t, s), want) {
		t.Errorf("the shards' directory: %v", err)
	}
}

// TestMergeShardsRefused: a missing shard is refused unless Partial (then
// named in a warning, with no verdict); shards of another scenario are
// always refused.
func TestMergeShardsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	a := writeShardFile(t, dir, 0, 3, "h", t0, time.Time{}, time.Second)
	c := writeShardFile(t, dir, 2, 3, "h", t0, time.Time{}, time.Second)
	_, _, err := Rebuild(a, c)
	if !errors.Is(err, results.ErrIncompleteShards) || !strings.Contains(err.Error(), "shard 1 of 3 missing") || !strings.Contains(err.Error(), "--partial") {
		t.Errorf("a missing shard: %v", err)
	}
	_, s, err := Reader{Partial: true}.Rebuild(a, c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(s.Warnings, "\n"), "these results hold shards 0, 2 of 3") || s.Shards.Missing[0] != 1 {
		t.Errorf("partial merge: warnings %q, shards %+v", s.Warnings, s.Shards)
	}
	other := writeShardFile(t, t.TempDir(), 1, 3, "other", t0, time.Time{}, time.Second)
	if _, _, err := (Reader{Partial: true}).Rebuild(a, other, c); err == nil || !strings.Contains(err.Error(), "ran different scenarios") {
		t.Errorf("another scenario's shard: %v", err)
	}
}

// TestMergeShardsLateStart: a shard that began its load late, by its own
// clock, is named; without an agreed start, a spread of starts is.
func TestMergeShardsLateStart(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	start := t0.Add(10 * time.Second)
	dir := t.TempDir()
	a := writeShardFile(t, dir, 0, 2, "h", t0, start, 10*time.Second)
	b := writeShardFile(t, dir, 1, 2, "h", t0, start, 13*time.Second+500*msec)
	_, s, err := Rebuild(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(s.Warnings, "\n"); !strings.Contains(w, "shard 1 began its load 3.5s after the agreed start (2026-11-22T03:00:10Z)") {
		t.Errorf("warnings = %q", s.Warnings)
	}
	if s.Shards.MaxLate != 3.5 || s.Shards.StartSpread != 3.5 {
		t.Errorf("shards = %+v", s.Shards)
	}
	dir = t.TempDir()
	a = writeShardFile(t, dir, 0, 2, "h", t0, time.Time{}, 10*time.Second)
	b = writeShardFile(t, dir, 1, 2, "h", t0.Add(time.Second), time.Time{}, 11*time.Second)
	if _, s, err = Rebuild(a, b); err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(s.Warnings, "\n"); !strings.Contains(w, "the shards began their load up to 2s apart (shard 0 first, shard 1 last)") {
		t.Errorf("warnings = %q", s.Warnings)
	}
}
