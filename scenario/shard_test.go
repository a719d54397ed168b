package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseShard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Shard
		err  string
	}{
		{"0/4", Shard{0, 4}, ""},
		{" 3/4 ", Shard{3, 4}, ""},
		{"0/1", Shard{0, 1}, ""},
		{"4/4", Shard{}, "counts from 0"},
		{"-1/4", Shard{}, "counts from 0"},
		{"0/0", Shard{}, "want 1 to"},
		{"0/100000", Shard{}, "want 1 to"},
		{"1", Shard{}, "INDEX/COUNT"},
		{"a/b", Shard{}, "INDEX/COUNT"},
		{"$(JOB_COMPLETION_INDEX)/4", Shard{}, "INDEX/COUNT"}, // an unexpanded Kubernetes variable
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseShard(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseShard(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseShard(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			if got.String() != strings.TrimSpace(tc.in) {
				t.Errorf("String() = %q", got.String())
			}
		})
	}
}

// TestShareSumsToTotal: the shards' parts of any total add up to it and
// differ by at most one.
func TestShareSumsToTotal(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 9; n++ {
		for total := 0; total <= 40; total++ {
			sum, lo, hi := 0, total, 0
			for i := range n {
				s := Shard{i, n}.Share(total)
				sum += s
				lo, hi = min(lo, s), max(hi, s)
			}
			if sum != total || hi-lo > 1 {
				t.Fatalf("%d over %d shards: parts sum to %d, spread %d..%d", total, n, sum, lo, hi)
			}
		}
	}
	if got := (Shard{}).Share(7); got != 7 {
		t.Errorf("the zero Shard's share of 7 = %d, want the whole", got)
	}
}

func TestShardStage(t *testing.T) {
	t.Parallel()
	closed := Stage{Concurrency: 10, Requests: 101, Warmup: Warmup{Requests: 5}, Duration: Duration(60e9)}
	got := Shard{2, 3}.Stage(&closed)
	if got.Concurrency != 3 || got.Requests != 33 || got.Warmup.Requests != 1 || got.Duration != closed.Duration {
		t.Errorf("closed stage, shard 2/3: %+v", got)
	}
	open := Stage{RatePerSec: 30, Arrival: ArrivalGamma, Burstiness: 0.5, MaxConcurrency: 100, Requests: 300, Warmup: Warmup{Requests: 7}}
	got = Shard{0, 3}.Stage(&open)
	if got.RatePerSec != 10 || got.MaxConcurrency != 34 || got.Requests != 300 || got.Warmup.Requests != 7 || got.Burstiness != 0.5 {
		t.Errorf("open stage, shard 0/3: %+v (the request and warmup counts stay the schedule's)", got)
	}
}

func TestShardCheck(t *testing.T) {
	t.Parallel()
	sc, err := Parse("s.yaml", []byte(`name: s
load:
  stages:
    - {name: few-workers, concurrency: 2, requests: 100}
    - {name: few-requests, concurrency: 8, requests: 3}
    - {name: all-warmup, concurrency: 8, requests: 9, warmup: {requests: 8}}
    - {name: open-few-slots, rate: 5, max_concurrency: 3, duration: 10s}
    - {name: open-few-arrivals, rate: 5, requests: 6, warmup: {requests: 3}}
    - {name: fine, concurrency: 4, duration: 10s}
`))
	if err != nil {
		t.Fatal(err)
	}
	err = Shard{1, 4}.Check(sc)
	if err == nil {
		t.Fatal("Check accepted stages that cannot be split over 4 shards")
	}
	for _, want := range []string{
		"s.yaml:4: load.stages[0].concurrency: 2 workers cannot be split over 4 shards",
		"s.yaml:5: load.stages[1].requests: 3 requests (0 of them warmup) cannot be split over 4 shards: shard 3 would have no measured request",
		"s.yaml:6: load.stages[2].requests: 9 requests (8 of them warmup)",
		"s.yaml:7: load.stages[3].max_concurrency: 3 cannot be split over 4 shards",
		"s.yaml:8: load.stages[4].requests: 6 arrivals (3 of them warmup)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check's error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "stages[5]") {
		t.Errorf("Check refused the stage that splits: %v", err)
	}
	// Every shard of a set gives the same answer.
	for i := range 4 {
		if e := (Shard{i, 4}).Check(sc); e == nil || e.Error() != err.Error() {
			t.Errorf("shard %d/4 answers differently: %v", i, e)
		}
	}
	for _, sh := range []Shard{{}, {0, 1}} {
		if err := sh.Check(sc); err != nil {
			t.Errorf("%v: the whole load needs no split: %v", sh, err)
		}
	}
	// Over two shards, only the stage of 9 requests with 8 warmup ones
	// fails: shard 1 would send 4, all warmup.
	if err := (Shard{0, 2}).Check(sc); err == nil || strings.Count(err.Error(), "\n") != 0 || !strings.Contains(err.Error(), "stages[2]") {
		t.Errorf("two shards: %v", err)
	}
}

// TestShardPromptsDisjoint: strided sequence numbers give every shard its
// own synthetic prompts, and a dataset is partitioned: each shard cycles
// through its own entries, which together are the whole dataset.
func TestShardPromptsDisjoint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := filepath.Join(dir, "d.jsonl")
	var b strings.Builder
	for i := range 10 {
		fmt.Fprintf(&b, "{\"prompt\": \"question number %d\", \"output_tokens\": %d}\n", i, i+1)
	}
	if err := os.WriteFile(data, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, prompts string }{
		{"synthetic", "{seed: 5, input_tokens: {dist: uniform, min: 20, max: 40}}"},
		{"dataset", fmt.Sprintf("{dataset: {path: %q}}", data)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc, err := Parse(filepath.Join(dir, "p.yaml"), []byte("name: p\nprompts: "+tc.prompts+"\n"+stages))
			if err != nil {
				t.Fatal(err)
			}
			const n = 3
			owner := map[string]int{}
			for i := range n {
				p, err := NewShardPrompts(t.Context(), sc, Shard{i, n}, nil)
				if err != nil {
					t.Fatal(err)
				}
				// The shard's own requests: seq i, i+n, …, two passes over
				// its part of the dataset.
				mine := map[string]bool{}
				for k := range uint64(8) {
					text := p.At(uint64(i) + k*n).Text
					if o, ok := owner[text]; ok && o != i {
						t.Fatalf("shard %d sends %q, as shard %d does", i, text, o)
					}
					owner[text] = i
					mine[text] = true
				}
				if tc.name == "dataset" && len(mine) != (Shard{i, n}).Share(10) {
					t.Errorf("shard %d cycled through %d entries, want its %d", i, len(mine), Shard{i, n}.Share(10))
				}
			}
			if tc.name == "dataset" && len(owner) != 10 {
				t.Errorf("the shards' parts hold %d entries, want the whole dataset of 10", len(owner))
			}
		})
	}
	sc, err := Parse(filepath.Join(dir, "p.yaml"), []byte(fmt.Sprintf("name: p\nprompts: {dataset: {path: %q}}\n", data)+stages))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewShardPrompts(t.Context(), sc, Shard{0, 11}, nil); err == nil || !strings.Contains(err.Error(), "10 usable prompts cannot be split over 11 shards") {
		t.Errorf("a dataset smaller than the shard count: %v", err)
	}
}

func TestHash(t *testing.T) {
	t.Parallel()
	doc := []byte("name: h\nload: {stages: [{concurrency: 4, requests: 8}]}\n")
	a, _ := Parse("a/h.yaml", doc)
	b, _ := Parse("b/other-name.yaml", doc)
	ha, err := a.Hash()
	if err != nil {
		t.Fatal(err)
	}
	if hb, _ := b.Hash(); hb != ha || len(ha) != 64 {
		t.Errorf("one scenario in two places hashes differently: %s, %s", ha, hb)
	}
	if err := b.Set("load.stages[0].concurrency", "5"); err != nil {
		t.Fatal(err)
	}
	if hb, _ := b.Hash(); hb == ha {
		t.Error("a --set did not change the hash")
	}
}
