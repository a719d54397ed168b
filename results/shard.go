package results

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Shard is a header's record of one shard of a sharded run: one of Count
// load generators that each ran a share of the scenario's load (bench run
// --shard INDEX/COUNT), whose files merge into the run's results.
type Shard struct {
	Index int `json:"index"` // 0 ≤ Index < Count
	Count int `json:"count"`
	// ScenarioHash is the SHA-256, in hex, of the resolved scenario as the
	// shards were given it, before the run filled anything in (a detected
	// model, a random salt, scraping turned off on all but one shard):
	// shards with the same hash ran the same scenario.
	ScenarioHash string `json:"scenario_hash"`
	// StartAt is the wall-clock time the shards agreed to start their load
	// at (--start-at); zero when none was agreed. End.Began says when this
	// shard's load really began.
	StartAt time.Time `json:"start_at,omitzero"`
}

// ShardSet is what a set of results files holds of one sharded run.
type ShardSet struct {
	Count   int
	Hash    string // the scenario hash the files share
	Present []int  // the shard indexes present, ascending
	Missing []int  // those absent, ascending
}

// Complete reports whether every shard is present.
func (s *ShardSet) Complete() bool { return len(s.Missing) == 0 }

// ErrIncompleteShards is the error of Shards for a set of shard files that
// lacks some of the run's shards: merged, they hold part of the load. The
// ShardSet is returned with it, so a caller may go on knowingly.
var ErrIncompleteShards = errors.New("incomplete shard set")

// Shards checks that files (their paths and headers, in the same order)
// are shards of one sharded run, and returns which. It returns nil and no
// error when no file is a shard. It refuses files that mix shards with
// whole runs, shards of different counts or of different scenarios (by
// the scenario hash), and a shard given twice. A set that lacks shards is
// returned with an error wrapping ErrIncompleteShards.
func Shards(paths []string, headers []*Header) (*ShardSet, error) {
	first := -1
	for i, h := range headers {
		if h.Shard != nil {
			first = i
			break
		}
	}
	if first < 0 {
		return nil, nil
	}
	f := headers[first].Shard
	set := &ShardSet{Count: f.Count, Hash: f.ScenarioHash}
	if f.Count < 1 {
		return nil, fmt.Errorf("%s: shard %d/%d: the count must be at least 1", paths[first], f.Index, f.Count)
	}
	seen := make([]int, f.Count) // file index + 1 of each shard
	for i, h := range headers {
		s := h.Shard
		switch {
		case s == nil:
			return nil, fmt.Errorf("%s is a whole run and %s is shard %d/%d of a sharded one: merge the shards of one run "+
				"(compare separate runs with bench compare)", paths[i], paths[first], f.Index, f.Count)
		case s.Count != f.Count:
			return nil, fmt.Errorf("%s is shard %d/%d and %s shard %d/%d: they are not shards of one run", paths[first], f.Index, f.Count,
				paths[i], s.Index, s.Count)
		case s.ScenarioHash != f.ScenarioHash:
			return nil, fmt.Errorf("%s and %s ran different scenarios (scenario hash %s vs %s): shards merge only when they "+
				"ran the same scenario file with the same --set, --target and --header", paths[first], paths[i], short(f.ScenarioHash), short(s.ScenarioHash))
		case s.Index < 0 || s.Index >= s.Count:
			return nil, fmt.Errorf("%s: shard %d/%d: the index is out of range", paths[i], s.Index, s.Count)
		case seen[s.Index] != 0:
			return nil, fmt.Errorf("%s and %s are both shard %d/%d: give each shard once", paths[seen[s.Index]-1], paths[i], s.Index, s.Count)
		}
		seen[s.Index] = i + 1
	}
	for i, file := range seen {
		if file != 0 {
			set.Present = append(set.Present, i)
		} else {
			set.Missing = append(set.Missing, i)
		}
	}
	if !set.Complete() {
		return set, fmt.Errorf("%w: %s of %d missing (have %s)", ErrIncompleteShards, plural("shard", set.Missing), set.Count, list(set.Present))
	}
	return set, nil
}

// OrderShards returns the files of a shard set ordered by shard index, so
// that reading them in that order makes a report independent of the order
// they were given in; files that are not shards keep their order.
func OrderShards(paths []string, headers []*Header) ([]string, []*Header) {
	idx := make([]int, len(paths))
	for i := range idx {
		idx[i] = i
	}
	key := func(i int) int {
		if s := headers[i].Shard; s != nil {
			return s.Index
		}
		return -1
	}
	slices.SortStableFunc(idx, func(a, b int) int { return key(a) - key(b) })
	p, h := make([]string, len(idx)), make([]*Header, len(idx))
	for i, j := range idx {
		p[i], h[i] = paths[j], headers[j]
	}
	return p, h
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	if hash == "" {
		return "(none)"
	}
	return hash
}

// plural names the shards: "shard 1", "shards 1, 3".
func plural(what string, idx []int) string {
	if len(idx) == 1 {
		return fmt.Sprintf("%s %d", what, idx[0])
	}
	return what + "s " + list(idx)
}

// list formats shard indexes as "0, 2, 3".
func list(idx []int) string {
	s := make([]string, len(idx))
	for i, x := range idx {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
