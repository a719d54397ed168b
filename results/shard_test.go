package results

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestShards(t *testing.T) {
	t.Parallel()
	sh := func(i, n int, hash string) *Header {
		return &Header{Shard: &Shard{Index: i, Count: n, ScenarioHash: hash}}
	}
	whole := &Header{}
	for _, tc := range []struct {
		name    string
		headers []*Header
		present []int
		missing []int
		err     string
	}{
		{"whole runs", []*Header{whole, whole}, nil, nil, ""},
		{"complete", []*Header{sh(2, 3, "h"), sh(0, 3, "h"), sh(1, 3, "h")}, []int{0, 1, 2}, nil, ""},
		{"one of one", []*Header{sh(0, 1, "h")}, []int{0}, nil, ""},
		{"missing", []*Header{sh(2, 3, "h"), sh(0, 3, "h")}, []int{0, 2}, []int{1}, "incomplete shard set: shard 1 of 3 missing (have 0, 2)"},
		{"two missing", []*Header{sh(3, 4, "h"), sh(0, 4, "h")}, []int{0, 3}, []int{1, 2}, "shards 1, 2 of 4 missing"},
		{"other scenario", []*Header{sh(0, 2, "aaaaaaaaaaaaaaaa"), sh(1, 2, "bbbbbbbbbbbbbbbb")}, nil, nil, "f0 and f1 ran different scenarios (scenario hash aaaaaaaaaaaa vs bbbbbbbbbbbb)"},
		{"other count", []*Header{sh(0, 2, "h"), sh(1, 3, "h")}, nil, nil, "f0 is shard 0/2 and f1 shard 1/3"},
		{"twice", []*Header{sh(0, 2, "h"), sh(1, 2, "h"), sh(1, 2, "h")}, nil, nil, "f1 and f2 are both shard 1/2"},
		{"mixed with a whole run", []*Header{whole, sh(1, 2, "h")}, nil, nil, "f0 is a whole run and f1 is shard 1/2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			paths := make([]string, len(tc.headers))
			for i := range paths {
				paths[i] = "f" + string(rune('0'+i))
			}
			set, err := Shards(paths, tc.headers)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			if tc.missing != nil && !errors.Is(err, ErrIncompleteShards) {
				t.Errorf("a missing shard's error does not wrap ErrIncompleteShards: %v", err)
			}
			if tc.present == nil {
				if err == nil && set != nil {
					t.Errorf("set = %+v, want nil", set)
				}
				return
			}
			if !reflect.DeepEqual(set.Present, tc.present) || !reflect.DeepEqual(set.Missing, tc.missing) {
				t.Errorf("present %v missing %v, want %v and %v", set.Present, set.Missing, tc.present, tc.missing)
			}
		})
	}
}

func TestOrderShards(t *testing.T) {
	t.Parallel()
	hs := []*Header{{Shard: &Shard{Index: 2}}, {Shard: &Shard{Index: 0}}, {Shard: &Shard{Index: 1}}}
	paths, headers := OrderShards([]string{"c", "a", "b"}, hs)
	if !reflect.DeepEqual(paths, []string{"a", "b", "c"}) || headers[0] != hs[1] {
		t.Errorf("OrderShards = %v", paths)
	}
}

// TestExpandDirectoryOfRuns: a directory that holds no results file stands
// for its run subdirectories, as a sharded run's shards sit side by side.
func TestExpandDirectoryOfRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, sub := range []string{"shard-1", "shard-0", "merged", "shard-2"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		if sub == "merged" {
			continue // a merge's outputs hold no results file
		}
		name := "results.jsonl"
		if sub == "shard-2" {
			name = "results.jsonl.gz"
		}
		w, err := Create(filepath.Join(dir, sub, name))
		if err != nil {
			t.Fatal(err)
		}
		// Distinct runs: merging refuses two files of one run.
		if err := w.Write(HeaderRecord(&Header{Schema: Schema, RunID: sub, Scenario: json.RawMessage(`{"name":"x"}`)})); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Expand(dir, filepath.Join(dir, "shard-1"), "plain.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(dir, "shard-0", "results.jsonl"), filepath.Join(dir, "shard-1", "results.jsonl"),
		filepath.Join(dir, "shard-2", "results.jsonl.gz"), filepath.Join(dir, "shard-1", "results.jsonl"), "plain.jsonl",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Expand = %v\nwant %v", got, want)
	}
	if _, err := Expand(filepath.Join(dir, "merged")); err == nil || !strings.Contains(err.Error(), "holds no results file") {
		t.Errorf("an empty directory: %v", err)
	}
	f, err := OpenFiles(dir)
	if err != nil || len(f.Paths()) != 3 {
		t.Fatalf("OpenFiles(dir) = %v, %v", f, err)
	}
}

func TestShiftMovesBegan(t *testing.T) {
	t.Parallel()
	e := &End{At: 5 * time.Second, Began: time.Second}
	EndRecord(e).Shift(2 * time.Second)
	if e.At != 7*time.Second || e.Began != 3*time.Second {
		t.Errorf("shifted end = %+v", e)
	}
	never := &End{At: time.Second}
	EndRecord(never).Shift(time.Second)
	if never.Began != 0 {
		t.Errorf("a load that never began moved: %+v", never)
	}
}
