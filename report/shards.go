package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/servebench/servebench/results"
)

// MaxStartSkew is how far apart the shards of a sharded run may begin
// their load, or how late after the agreed start one may, before the
// summary warns: beyond it, the stages of the shards no longer line up on
// the merged timeline, whose windows are a second or more.
const MaxStartSkew = time.Second

// shardFile is what the aggregate knows of one shard's results file.
type shardFile struct {
	shard results.Shard
	began time.Duration // End.Began on the merged clock; 0 when unknown
}

// addShardHeader records a header; records up to the next header belong
// to its file (a results file is read header first, file after file).
func (a *Aggregate) addShardHeader(h *results.Header) {
	a.curShard = -1
	if h.Shard != nil {
		a.shardFiles = append(a.shardFiles, shardFile{shard: *h.Shard})
		a.curShard = len(a.shardFiles) - 1
	}
}

// addShardEnd records when the current file's load began.
func (a *Aggregate) addShardEnd(e *results.End) {
	if a.curShard >= 0 {
		a.shardFiles[a.curShard].began = e.Began
	}
}

// WholeLoad reports whether the records added hold a scenario's whole
// load: they are not shards, or every shard of the set is there. Budgets
// judge the whole load only, so a shard alone gets no verdict.
func (a *Aggregate) WholeLoad() bool {
	if len(a.shardFiles) == 0 {
		return true
	}
	return len(a.shardIndexes()) >= a.shardFiles[0].shard.Count
}

// shardIndexes returns the distinct shard indexes added, ascending.
func (a *Aggregate) shardIndexes() []int {
	var idx []int
	for _, f := range a.shardFiles {
		if !slices.Contains(idx, f.shard.Index) {
			idx = append(idx, f.shard.Index)
		}
	}
	slices.Sort(idx)
	return idx
}

// shardSummary describes the shard set, with the warnings it calls for: a
// partial set, shards given different starts, and shards whose load began
// late or far apart. Offsets are on the merged clock, whose epoch is
// a.meta.Started.
func (a *Aggregate) shardSummary() (*Shards, []string) {
	if len(a.shardFiles) == 0 {
		return nil, nil
	}
	first := a.shardFiles[0].shard
	out := &Shards{Count: first.Count, Merged: a.shardIndexes(), ScenarioHash: first.ScenarioHash, StartAt: first.StartAt}
	for i := range first.Count {
		if !slices.Contains(out.Merged, i) {
			out.Missing = append(out.Missing, i)
		}
	}
	var warn []string
	if len(out.Missing) > 0 {
		what := fmt.Sprintf("shard %d of %d", out.Merged[0], out.Count)
		if len(out.Merged) > 1 {
			what = fmt.Sprintf("shards %s of %d", ints(out.Merged), out.Count)
		}
		warn = append(warn, fmt.Sprintf("these results hold %s, a share of the scenario's load: merge every shard's results "+
			"(bench merge) for the run's figures; budgets are judged on the whole set", what))
	}
	var starts []string
	var first0, last time.Time
	firstIdx, lastIdx := -1, -1
	for _, f := range a.shardFiles {
		if !f.shard.StartAt.Equal(first.StartAt) {
			starts = append(starts, fmt.Sprintf("shard %d: %s", f.shard.Index, startText(f.shard.StartAt)))
		}
		if f.began == 0 {
			continue
		}
		at := a.meta.Started.Add(f.began)
		if firstIdx < 0 || at.Before(first0) {
			first0, firstIdx = at, f.shard.Index
		}
		if lastIdx < 0 || at.After(last) {
			last, lastIdx = at, f.shard.Index
		}
		if s := f.shard.StartAt; !s.IsZero() {
			late := at.Sub(s)
			out.MaxLate = max(out.MaxLate, round(late.Seconds(), 3))
			if late > MaxStartSkew {
				warn = append(warn, fmt.Sprintf("shard %d began its load %s after the agreed start (%s): it was not ready in time, "+
					"and its stages are shifted by as much on the merged timeline", f.shard.Index, late.Round(time.Millisecond), startText(s)))
			}
		}
	}
	if len(starts) > 0 {
		warn = append(warn, fmt.Sprintf("the shards were given different --start-at times (shard %d: %s; %s): "+
			"give every shard the same one", first.Index, startText(first.StartAt), strings.Join(starts, "; ")))
	}
	if firstIdx >= 0 {
		spread := last.Sub(first0)
		out.StartSpread = round(spread.Seconds(), 3)
		if spread > MaxStartSkew && out.MaxLate <= MaxStartSkew.Seconds() {
			warn = append(warn, fmt.Sprintf("the shards began their load up to %s apart (shard %d first, shard %d last): their stages "+
				"do not line up on the merged timeline; start them together with --start-at", spread.Round(time.Millisecond), firstIdx, lastIdx))
		}
	}
	return out, warn
}

func startText(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func ints(x []int) string {
	s := make([]string, len(x))
	for i, v := range x {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ", ")
}
