package twin

import (
	"math"
	"slices"
	"sort"
	"time"
)

// segment is one observation of the cost model: k consecutive engine
// steps, how long they took together, and what they computed. The
// simulator's step cost summed over the steps is
//
//	a·k + b·seqs + c·ctx/1000 + p·prefill
//
// with a, b, c, p its step_overhead_us, per_seq_us, per_kv_token_ns and
// per_prefill_token_us.
type segment struct {
	durUS    float64       // microseconds
	k        float64       // steps
	seqs     float64       // Σ requests scheduled per step
	ctx      float64       // Σ context tokens read (prompt + tokens so far, per request and step)
	prefill  float64       // prompt tokens computed
	from, to time.Duration // when its first step started and its last ended
	chained  bool          // it started when the step before it ended (not an idle engine woken)
	decode   bool          // no prefill in it
	batch    int           // decoding requests in its first step
}

// stepStats describes what the step reconstruction found in a run.
type stepStats struct {
	steps, segments, merged int
	decodeSteps             int           // single-step segments without prefill
	prefillOne              int           // prompts prefilled in a single step
	prefillMany             int           // prompts whose prefill took several steps (chunked or queued)
	prefillLow              int           // prompts prefilled in one step beside at most one decoding request (low load)
	tolerance               time.Duration // the median time per token
	minBatch, maxBatch      int
	maxStepTokens           int   // the most tokens a single-step segment computed (a lower bound of the budget)
	decodeBatches           []int // the batch of each decode-only step
}

// reconstruct clusters a run's chunk arrivals into engine steps and cuts
// the steps into segments (see the package doc). budget is the token
// budget per step when known (0: unknown; a prompt is then taken to have
// been prefilled in its last step).
func reconstruct(rd *runData, budget int) ([]segment, stepStats) {
	var st stepStats
	reqs := rd.reqs
	if len(reqs) == 0 {
		return nil, st
	}
	stepT, stepOf, perToken := align(reqs)
	st.tolerance = perToken
	st.steps = len(stepT)
	tb := newStepTable(stepT)
	lastStep := tb.addDecodes(reqs, stepOf)
	busy := busyAt(reqs, stepT, lastStep)
	tb.addPrefills(reqs, stepOf, busy, perToken*35/100, budget, &st)
	segs := tb.segments(busy, &st)
	segs = coalesce(segs)
	st.segments = len(segs)
	return segs, st
}

// stepTable is what reconstruct knows of each step of a run, indexed by
// step.
type stepTable struct {
	t                  []time.Duration // when the step ended (its first arrival)
	seqs, ctx, prefill []float64       // requests scheduled, context tokens read, prompt tokens computed
	hidden             []float64       // steps no token marks (an idle engine's chunked prefill)
	decoding           []int           // requests decoding
	join               []bool          // join[k]: step k belongs to step k-1's segment
	idleStart          []time.Duration // when an idle engine was woken for the step (0: not)
}

func newStepTable(stepT []time.Duration) *stepTable {
	n := len(stepT)
	return &stepTable{t: stepT, seqs: make([]float64, n), ctx: make([]float64, n), prefill: make([]float64, n),
		hidden: make([]float64, n), decoding: make([]int, n), join: make([]bool, n), idleStart: make([]time.Duration, n)}
}

// mergeRange joins steps from+1 … to to the segment of step from.
func (tb *stepTable) mergeRange(from, to int) {
	for k := max(from+1, 1); k <= to && k < len(tb.join); k++ {
		tb.join[k] = true
	}
}

// addDecodes counts, per step, the requests that decoded in it and the
// context they read, and returns each request's last step.
func (tb *stepTable) addDecodes(reqs []*request, stepOf [][]int) []int {
	lastStep := make([]int, len(reqs))
	for i, q := range reqs {
		cum := 0 // tokens before this chunk
		lastStep[i] = stepOf[i][len(q.chunks)-1]
		for c := range q.chunks {
			s := stepOf[i][c]
			k := q.ntok[c]
			if c == 0 {
				// The first token: counted with the prefill; a first
				// chunk with more tokens also decoded k-1 more.
				for j := 1; j < k; j++ {
					tb.seqs[s]++
					tb.ctx[s] += float64(q.prompt + j)
				}
				if k > 1 {
					tb.mergeRange(s-k+1, s)
				}
				cum += k
				continue
			}
			tb.addChunk(q, s, stepOf[i][c-1], k, cum)
			cum += k
		}
	}
	return lastStep
}

// addChunk counts a chunk of k tokens (after cum) of request q that
// arrived at step s, its previous one at step prev.
func (tb *stepTable) addChunk(q *request, s, prev, k, cum int) {
	switch {
	case k == 0:
		// A chunk without tokens (a usage-only or empty delta).
	case k == 1 && s == prev+1:
		tb.seqs[s]++
		tb.ctx[s] += float64(q.prompt + cum)
		tb.decoding[s]++
	case s-prev == k:
		// Several tokens in one chunk: one from each step.
		for j := range k {
			tb.seqs[s-k+1+j]++
			tb.ctx[s-k+1+j] += float64(q.prompt + cum + j)
			tb.decoding[s-k+1+j]++
		}
	default:
		// Steps without this request (a preemption and its recompute, or
		// an alignment it did not fit): it ran k steps somewhere in
		// (prev, s].
		tb.mergeRange(prev+1, s)
		for j := range k {
			tb.seqs[s]++
			tb.ctx[s] += float64(q.prompt + cum + j)
		}
		if k == 1 && s-prev >= 3 {
			// Preempted: recomputed its prompt and outputs.
			tb.prefill[s] += float64(q.prompt + cum - 1)
		}
	}
}

// busyAt reports whether the engine was busy at t: a request sent before
// t had its last token after it.
func busyAt(reqs []*request, stepT []time.Duration, lastStep []int) func(time.Duration) bool {
	sents := make([]time.Duration, len(reqs))
	lasts := make([]time.Duration, len(reqs))
	for i, q := range reqs {
		sents[i] = q.sent
		lasts[i] = stepT[lastStep[i]]
	}
	slices.Sort(sents)
	slices.Sort(lasts)
	return func(t time.Duration) bool {
		before := sort.Search(len(sents), func(i int) bool { return sents[i] >= t })
		done := sort.Search(len(lasts), func(i int) bool { return lasts[i] > t })
		return before-done > 0
	}
}

// addPrefills places each request's prefill: it arrived while step a was
// running (the first to end after it) and got its first token from step
// f; the steps between are its wait, one segment.
func (tb *stepTable) addPrefills(reqs []*request, stepOf [][]int, busy func(time.Duration) bool, tol time.Duration, budget int, st *stepStats) {
	n := len(tb.t)
	for i, q := range reqs {
		f := stepOf[i][0]
		a := sort.Search(n, func(k int) bool { return tb.t[k] > q.sent })
		from := a + 1
		if a >= f {
			if !busy(q.sent) {
				// An idle engine started the step when the request came.
				from = f
				if tb.idleStart[f] == 0 || q.sent < tb.idleStart[f] {
					tb.idleStart[f] = q.sent
				}
			} else {
				from = f - 1 // timing ambiguity at a step boundary
			}
		}
		from = min(max(from, 0), f)
		steps := f - from + 1
		boundary := a < n && tb.t[a]-q.sent < tol // sent as step a ended: a+1 or a+2
		switch {
		case steps == 1, steps == 2 && boundary:
			tb.mergeRange(from, f)
			st.prefillOne++
			if tb.decoding[f] <= 1 {
				st.prefillLow++
			}
		default:
			tb.mergeRange(from, f)
			st.prefillMany++
		}
		l := float64(q.prompt - min(q.cached, q.prompt-1))
		kk := 1
		if budget > 0 {
			kk = max(int(math.Ceil(l/float64(max(budget-tb.decoding[f], 1)))), 1)
			if tb.idleStart[f] != 0 && tb.decoding[f] == 0 && kk > steps {
				// Nobody decoded to mark the chunks' steps.
				tb.hidden[f] = max(tb.hidden[f], float64(kk-steps))
			} else {
				kk = min(kk, steps)
			}
		}
		tb.seqs[f] += float64(kk)
		tb.ctx[f] += float64(q.prompt) * float64(kk+1) / 2
		tb.prefill[f] += l
	}
}

// segments cuts the steps into maximal runs of joined steps, each timed
// from the end of the step before it, or from the arrival that woke an
// idle engine.
func (tb *stepTable) segments(busy func(time.Duration) bool, st *stepStats) []segment {
	n := len(tb.t)
	var segs []segment
	st.minBatch = math.MaxInt
	for k := 0; k < n; {
		e := k + 1
		for e < n && tb.join[e] {
			e++
		}
		var start time.Duration
		switch {
		case tb.idleStart[k] != 0 && (k == 0 || !busy(tb.t[k-1])):
			start = tb.idleStart[k]
		case k > 0 && busy(tb.t[k-1]):
			start = tb.t[k-1]
		default:
			k = e
			continue // nothing says when it started
		}
		sg := segment{durUS: float64(tb.t[e-1]-start) / float64(time.Microsecond), k: float64(e - k), from: start, to: tb.t[e-1],
			chained: tb.idleStart[k] == 0, batch: tb.decoding[k]}
		for j := k; j < e; j++ {
			sg.k += tb.hidden[j]
			sg.seqs += tb.seqs[j]
			sg.ctx += tb.ctx[j]
			sg.prefill += tb.prefill[j]
		}
		sg.decode = sg.prefill == 0
		if e-k == 1 {
			st.maxStepTokens = max(st.maxStepTokens, int(sg.prefill)+tb.decoding[k])
			if sg.decode {
				st.decodeSteps++
				st.decodeBatches = append(st.decodeBatches, tb.decoding[k])
			}
		} else {
			st.merged += e - k
		}
		if sg.durUS > 0 && sg.seqs > 0 {
			segs = append(segs, sg)
			st.minBatch = min(st.minBatch, tb.decoding[k])
			st.maxBatch = max(st.maxBatch, tb.decoding[k])
		}
		k = e
	}
	if st.minBatch == math.MaxInt {
		st.minBatch = 0
	}
	return segs
}

// blockSteps is how many consecutive steps a fitted observation spans.
// One step's duration is the difference of two arrival times, and a busy
// client (or a server catching up after a late wake-up) delivers a few
// steps' tokens in one burst: the burst's steps look instantaneous and the
// one before it long, while their sum is right. Fitting blocks of steps
// keeps that sum and averages the noise; the features still vary from
// block to block (batch sizes, contexts, prompts), which is all the fit
// needs.
const blockSteps = 8

// coalesce joins consecutive chained segments (each starting where the
// previous ended) into blocks of at least blockSteps steps.
func coalesce(segs []segment) []segment {
	var out []segment
	for _, s := range segs {
		n := len(out)
		if n > 0 && s.chained && s.from == out[n-1].to && out[n-1].k < blockSteps {
			b := &out[n-1]
			b.durUS += s.durUS
			b.k += s.k
			b.seqs += s.seqs
			b.ctx += s.ctx
			b.prefill += s.prefill
			b.decode = b.decode && s.decode
			b.to = s.to
			continue
		}
		out = append(out, s)
	}
	return out
}
