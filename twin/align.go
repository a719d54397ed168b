package twin

import (
	"math"
	"slices"
	"sort"
	"time"
)

// Aligning tokens to steps. An engine step gives every running request
// one token, so a request's consecutive tokens come from consecutive
// steps, and all requests' tokens of one step are sent at the same
// instant. On the client they arrive spread out by the network, the
// server's writes and the client's reads, on a busy machine by more than
// a step, so that grouping arrivals by time alone splits and interleaves
// steps. Instead, each run of a request's tokens (its tokens between two
// pauses, normally all of them) is placed on the steps as a whole: at the
// offset where its arrival times best match the steps already placed
// (the median distance over the tokens they share), searching a few steps
// either side of the nearest one. A step's time is the earliest arrival
// placed on it: deliveries are only ever late.

// alignWindow is how many steps either side of the nearest one a run's
// offset is searched.
const alignWindow = 4

// pauseSteps is the gap, in typical steps per token, that ends a run of a
// request's tokens (a preemption, or a request left out of some steps).
const pauseSteps = 2.5

// align places every chunk of reqs on an engine step. It returns the
// steps' times (increasing), the step of each chunk of each request
// (the step of the chunk's last token), and the median time per token.
func align(reqs []*request) (stepT []time.Duration, stepOf [][]int, perToken time.Duration) {
	var gaps []float64
	for _, q := range reqs {
		for c := 1; c < len(q.chunks); c++ {
			if q.ntok[c] > 0 {
				gaps = append(gaps, float64(q.chunks[c]-q.chunks[c-1])/float64(q.ntok[c]))
			}
		}
	}
	perToken = time.Millisecond
	if len(gaps) > 0 {
		slices.Sort(gaps)
		perToken = time.Duration(max(gaps[len(gaps)/2], 1))
	}
	// Runs: (request, first chunk, last chunk), cut at pauses.
	type tokRun struct{ req, from, to int }
	var runs []tokRun
	for i, q := range reqs {
		start := 0
		for c := 1; c < len(q.chunks); c++ {
			k := max(q.ntok[c], 1)
			if float64(q.chunks[c]-q.chunks[c-1]) > pauseSteps*float64(k)*float64(perToken) {
				runs = append(runs, tokRun{i, start, c - 1})
				start = c
			}
		}
		runs = append(runs, tokRun{i, start, len(q.chunks) - 1})
	}
	slices.SortStableFunc(runs, func(a, b tokRun) int {
		return int(reqs[a.req].chunks[a.from] - reqs[b.req].chunks[b.from])
	})

	stepOf = make([][]int, len(reqs))
	for i, q := range reqs {
		stepOf[i] = make([]int, len(q.chunks))
	}
	// tmin[s] is the earliest arrival placed on step s; it stays
	// increasing because runs are placed in order of their start.
	var tmin []time.Duration
	for _, r := range runs {
		q := reqs[r.req]
		// Token index (of each chunk's last token) from the run's start.
		idx := make([]int, r.to-r.from+1)
		n := 0
		for c := r.from; c <= r.to; c++ {
			n += max(q.ntok[c], 1)
			idx[c-r.from] = n - 1
		}
		t0 := q.chunks[r.from]
		f := len(tmin)
		if len(tmin) > 0 && t0 <= tmin[len(tmin)-1]+perToken/2 {
			near := sort.Search(len(tmin), func(s int) bool { return tmin[s] >= t0 })
			best, bestCost := -1, math.Inf(1)
			for cand := near - alignWindow; cand <= near+alignWindow; cand++ {
				if cand < 0 || cand > len(tmin) {
					continue
				}
				var d []float64
				for j, k := range idx {
					if s := cand + k; s < len(tmin) {
						d = append(d, math.Abs(float64(q.chunks[r.from+j]-tmin[s])))
					}
				}
				cost := float64(perToken) // a new step after the last
				if len(d) > 0 {
					slices.Sort(d)
					cost = d[len(d)/2]
				}
				if cost < bestCost {
					best, bestCost = cand, cost
				}
			}
			f = best
		}
		for j, k := range idx {
			s := f + k
			t := q.chunks[r.from+j]
			for s >= len(tmin) {
				tmin = append(tmin, t)
			}
			tmin[s] = min(tmin[s], t)
			stepOf[r.req][r.from+j] = s
		}
	}
	// Keep the times increasing (a late run can lower an early step's
	// minimum below its predecessor's only through noise).
	for s := 1; s < len(tmin); s++ {
		tmin[s] = max(tmin[s], tmin[s-1])
	}
	return tmin, stepOf, perToken
}
