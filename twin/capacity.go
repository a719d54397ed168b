package twin

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/servebench/servebench/results"
)

// kvPoint is one scrape that can be explained: the usage gauge and the
// blocks the requests in flight held then.
type kvPoint struct {
	usage  float64
	blocks float64
}

// kvPoints pairs every scrape of a run with the blocks its requests held
// (context over the block size, rounded up), when every request then in
// flight was either decoding (its context known) or waiting in the queue
// (holding nothing): a prefill in progress holds an unknown part of its
// prompt.
func kvPoints(rd *runData, blockSize int) []kvPoint {
	var out []kvPoint
	bs := float64(blockSize)
	for _, s := range rd.samples {
		u, ok := s.Values[results.KVUsage]
		if !ok || u <= 0.02 || u > 1 {
			continue
		}
		t := s.At
		var blocks float64
		prefilling := 0
		for _, q := range rd.reqs {
			if q.sent >= t || q.chunks[len(q.chunks)-1] <= t {
				continue
			}
			i := sort.Search(len(q.chunks), func(i int) bool { return q.chunks[i] > t })
			if i == 0 {
				prefilling++
				continue
			}
			tokens := 0
			for _, k := range q.ntok[:i] {
				tokens += k
			}
			// The step in flight (scheduled when the last one ended) holds
			// slots for the prompt and every token so far: the newest one
			// is computed by that step.
			blocks += math.Ceil(float64(q.prompt+tokens) / bs)
		}
		if prefilling > 0 && float64(prefilling) != s.Values[results.Waiting] {
			continue
		}
		out = append(out, kvPoint{usage: u, blocks: blocks})
	}
	return out
}

// fitBlocks estimates the usable KV blocks: blocks = usable · usage
// through the origin, by least squares; stderr from the scatter.
func fitBlocks(pts []kvPoint) (usable, stderr float64, ok bool) {
	if len(pts) < 3 {
		return 0, 0, false
	}
	var suu, sub float64
	for _, p := range pts {
		suu += p.usage * p.usage
		sub += p.usage * p.blocks
	}
	usable = sub / suu
	var sse float64
	for _, p := range pts {
		e := p.blocks - usable*p.usage
		sse += e * e
	}
	stderr = math.Sqrt(sse / float64(len(pts)-1) / suu)
	return usable, stderr, usable > 0
}

// batchLimit reads max_num_seqs off the scrapes. Running never exceeds
// the limit, so when more requests were in the server (running + waiting)
// than ever ran at once, with KV cache to spare, the most that ever ran
// is the limit. (A request that has just arrived waits for the next step
// even below the limit; it never makes running + waiting exceed the peak
// of running.) seen is that peak, a lower bound when the limit was never
// reached.
func batchLimit(runs []*runData) (limit int, reached bool, seen int) {
	for _, rd := range runs {
		for _, s := range rd.samples {
			if running, ok := s.Values[results.Running]; ok {
				seen = max(seen, int(running))
			}
		}
	}
	for _, rd := range runs {
		for _, s := range rd.samples {
			running, ok := s.Values[results.Running]
			if !ok {
				continue
			}
			if w := s.Values[results.Waiting]; w >= 1 && int(running+w) > seen && s.Values[results.KVUsage] < 0.85 {
				return seen, true, seen
			}
		}
	}
	return 0, false, seen
}

// peakContext is the most context tokens in flight at any chunk arrival of
// the runs (prompt plus tokens so far, summed over requests).
func peakContext(runs []*runData) float64 {
	peak := 0.0
	for _, rd := range runs {
		type ev struct {
			t     time.Duration
			delta float64
		}
		var evs []ev
		for _, q := range rd.reqs {
			total := float64(q.prompt)
			for _, k := range q.ntok {
				total += float64(k)
			}
			evs = append(evs, ev{q.chunks[0], total}, ev{q.chunks[len(q.chunks)-1], -total})
		}
		slices.SortFunc(evs, func(a, b ev) int { return int(a.t - b.t) })
		cur := 0.0
		for _, e := range evs {
			cur += e.delta
			peak = max(peak, cur)
		}
	}
	return peak
}
