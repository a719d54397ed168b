package report

import (
	"fmt"

	"github.com/servebench/servebench/results"
)

// maxListed is how many duplicated or impossible records a warning lists
// by file and line before it only counts the rest.
const maxListed = 5

// recordCheck finds, as results files are read, the request records no
// run writes: a sequence number a file holds twice (a line copied, files
// concatenated), which are counted again, and impossible values
// (results.Result.Impossible), of which the aggregate skips what it
// cannot count (Aggregate.Add); warnings name them by file and line.
type recordCheck struct {
	paths []string
	step  []uint64 // by file: a shard's stride between its sequence numbers
	index []uint64 // by file: a shard's first sequence number
	seen  []seqSet // by file
	dups  []string
	bad   []string
	nDups int
	nBad  int
}

func newRecordCheck(paths []string, headers []*results.Header) *recordCheck {
	c := &recordCheck{paths: paths, step: make([]uint64, len(paths)), index: make([]uint64, len(paths)), seen: make([]seqSet, len(paths))}
	for i, h := range headers {
		c.step[i] = 1
		if h.Shard != nil && h.Shard.Count > 1 && h.Shard.Index >= 0 {
			c.step[i], c.index[i] = uint64(h.Shard.Count), uint64(h.Shard.Index)
		}
	}
	return c
}

// add checks one record.
func (c *recordCheck) add(rec results.FileRecord) {
	r := rec.Result
	if r == nil {
		return
	}
	at := fmt.Sprintf("%s:%d", c.paths[rec.File], rec.Line)
	// A shard's numbers are Index, Index+Count, …: their quotients are
	// dense and as distinct as the numbers. Any other number is kept as
	// itself, apart (its top bit set).
	key := r.Seq / c.step[rec.File]
	if r.Seq%c.step[rec.File] != c.index[rec.File]%c.step[rec.File] {
		key = r.Seq | 1<<63
	}
	if first, dup := c.seen[rec.File].add(key, rec.Line); dup {
		c.nDups++
		if len(c.dups) < maxListed {
			c.dups = append(c.dups, fmt.Sprintf("%s: request seq %d again (first at line %d)", at, r.Seq, first))
		}
	}
	if rec.Impossible != "" {
		c.nBad++
		if len(c.bad) < maxListed {
			c.bad = append(c.bad, fmt.Sprintf("%s: request seq %d: %s", at, r.Seq, rec.Impossible))
		}
	}
}

// warnings words what add found.
func (c *recordCheck) warnings() []string {
	var out []string
	list := func(n int, items []string, what string) {
		if n == 0 {
			return
		}
		w := fmt.Sprintf("%d %s (no run writes them: a file edited, copied into or joined by hand?): ", n, what)
		for i, it := range items {
			if i > 0 {
				w += "; "
			}
			w += it
		}
		if n > len(items) {
			w += fmt.Sprintf("; and %d more", n-len(items))
		}
		out = append(out, w)
	}
	list(c.nDups, c.dups, "request records repeat a sequence number of their file, and are counted again")
	list(c.nBad, c.bad, "request records hold impossible values")
	return out
}

// seqSet is a set of sequence numbers with the line each was first seen
// at: a slice of lines for the dense numbers a run writes (from 0), a map
// for any beyond.
type seqSet struct {
	lines []int32 // by seq, for seq < denseSeqs; 0: not seen
	far   map[uint64]int
}

// denseSeqs bounds the sequence numbers kept in seqSet's slice (16 MiB of
// lines at most); a file's numbers beyond it, which no run of a day
// reaches, go to the map.
const denseSeqs = 1 << 22

// add records seq at line and reports whether it was there already, and
// at which line.
func (s *seqSet) add(seq uint64, line int) (first int, dup bool) {
	if seq >= denseSeqs {
		if f, ok := s.far[seq]; ok {
			return f, true
		}
		if s.far == nil {
			s.far = map[uint64]int{}
		}
		s.far[seq] = line
		return 0, false
	}
	if seq >= uint64(len(s.lines)) {
		s.lines = append(s.lines, make([]int32, int(seq)+1-len(s.lines)+len(s.lines)/2)...)
	}
	if f := s.lines[seq]; f != 0 {
		return int(f), true
	}
	s.lines[seq] = int32(min(line, 1<<31-1))
	return 0, false
}
