package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Finish reasons, as vLLM reports them in finish_reason and in the
// finished_reason label of vllm:request_success_total.
const (
	FinishStop   = "stop"   // the model emitted EOS (after min_tokens)
	FinishLength = "length" // max_tokens or max_model_len reached
	FinishAbort  = "abort"  // the client went away
)

// maxStepLag is how far a busy engine may fall behind its previous step's
// deadline and still chain the next step to that deadline, so that sleep
// overshoot and CPU contention on a loaded machine do not slow the
// simulated GPU down: a late driver runs the next steps back to back until
// it has caught up. Beyond it (a stall: the process was stopped, or the
// machine is starved), the lost time is given up and the next step starts
// now, rather than bursting seconds of tokens at once.
const maxStepLag = 250 * time.Millisecond

// ErrEngineBusy is returned by Schedule while a step is in flight.
var ErrEngineBusy = errors.New("sim: a step is already in flight")

// Request is one generation request inside the engine. Fill the exported
// fields and Submit it; the engine owns it afterwards and reports on it
// through Outputs. Its token IDs are opaque integers: equal IDs at equal
// positions share prefix-cache blocks.
type Request struct {
	// ID identifies the request in logs.
	ID string
	// Prompt holds the prompt's token IDs (at least one).
	Prompt []uint32
	// MaxTokens is the output cap (> 0); prompt + MaxTokens must not exceed
	// max_model_len.
	MaxTokens int
	// MinTokens is the number of outputs before EOS may end the request.
	MinTokens int
	// IgnoreEOS disables natural stops: the request ends at MaxTokens.
	IgnoreEOS bool
	// Pooling makes it an embedding request, as vLLM runs a pooling
	// model's: it ends when its prompt is prefilled, with FinishStop and
	// no output token (MaxTokens must still be at least 1).
	Pooling bool

	outputs  []uint32
	computed int // tokens whose KV is in the cache
	stopAt   int // natural (EOS) output length; 0: none
	running  bool
	done     bool
	reason   string
	admitted bool // admitted at least once (later lookups are "preempted" lookups)
	cached   int  // prefix-cache hit tokens at first admission

	arrival, firstScheduled, firstToken, lastToken time.Time
	numPreemptions                                 int

	kv   kvState
	sink *stream // the HTTP handler waiting for this request's tokens, if any
}

func (r *Request) numTokens() int { return len(r.Prompt) + len(r.outputs) }

// token returns the ID of the i-th known token (prompt, then outputs).
func (r *Request) token(i int) uint32 {
	if i < len(r.Prompt) {
		return r.Prompt[i]
	}
	return r.outputs[i-len(r.Prompt)]
}

// OutputTokens is the number of tokens generated so far.
func (r *Request) OutputTokens() int { return len(r.outputs) }

// CachedTokens is the number of prompt tokens served from the prefix cache
// when the request was first admitted.
func (r *Request) CachedTokens() int { return r.cached }

// Preemptions is how many times the request was preempted.
func (r *Request) Preemptions() int { return r.numPreemptions }

// Output is what one step produced for one request.
type Output struct {
	Req *Request
	// Tokens are the new output token IDs (one per step, none when the
	// request was aborted).
	Tokens []uint32
	// FinishReason is FinishStop, FinishLength or FinishAbort when the
	// request ended with this output, else "".
	FinishReason string
	// Time is the step's end (engine time).
	Time time.Time
}

// Batch is one planned engine step: what runs and how long it takes.
type Batch struct {
	// Start and End are the step's engine times; End is an absolute
	// deadline the real-time driver sleeps until.
	Start, End time.Time
	// Reqs and Tokens are the scheduled requests and their token grants.
	Reqs   []*Request
	Tokens []int
	// PrefillTokens and DecodeTokens split the scheduled tokens.
	PrefillTokens, DecodeTokens int
	// KVReadTokens is the context read by attention this step, in tokens
	// weighted by the share of layers that read them.
	KVReadTokens float64
	// Preempted counts the preemptions made while planning this step.
	Preempted int
	// Drafted holds, per scheduled request, the draft tokens it proposes
	// this step (speculative decoding; 0 for prefills), and DraftTokens
	// their sum.
	Drafted     []int
	DraftTokens int
}

// Duration is End − Start.
func (b *Batch) Duration() time.Duration { return b.End.Sub(b.Start) }

// NumTokens is the step's total scheduled tokens.
func (b *Batch) NumTokens() int { return b.PrefillTokens + b.DecodeTokens }

// Engine is the simulated vLLM V1 engine core: a waiting queue, a running
// list, a paged KV cache with prefix caching, and a scheduler that plans
// one step at a time. It never sleeps and has no goroutines; drive it with
// Schedule and Complete. Not safe for concurrent use.
type Engine struct {
	cfg      Config
	capacity Capacity
	clock    Clock
	rng      *rand.Rand
	kv       *kvManager

	waiting  []*Request // front is next
	running  []*Request // admission order
	inflight *Batch
	lastEnd  time.Time
	pwrT     time.Time // energy is booked up to here

	stats Stats
}

// NewEngine returns an idle engine for cfg reading time from clock and
// drawing jitter and output tokens from rng (seed it for repeatable runs).
func NewEngine(cfg Config, clock Clock, rng *rand.Rand) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sim engine: %w", err)
	}
	k, err := cfg.Capacity()
	if err != nil {
		return nil, fmt.Errorf("sim engine: %w", err)
	}
	e := &Engine{cfg: cfg, capacity: k, clock: clock, rng: rng,
		kv: newKVManager(k, cfg.BlockSize, cfg.EnablePrefixCaching), pwrT: clock.Now()}
	e.stats.init(cfg.MaxModelLen)
	e.stats.SpecAcceptedPerPos = make([]int64, cfg.NumSpeculativeTokens)
	return e, nil
}

// Config returns the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// Capacity returns the engine's KV-cache geometry.
func (e *Engine) Capacity() Capacity { return e.capacity }

// Validate checks a request against the engine's limits before Submit; its
// messages are vLLM's (see ValidationError).
func (e *Engine) Validate(promptTokens, maxTokens int) error {
	return validateLengths(e.cfg.MaxModelLen, promptTokens, maxTokens)
}

// Submit queues r at the back of the waiting queue, stamped with the
// clock's time.
func (e *Engine) Submit(r *Request) error {
	if len(r.Prompt) == 0 {
		return fmt.Errorf("sim request %s: empty prompt", r.ID)
	}
	if err := e.Validate(len(r.Prompt), r.MaxTokens); err != nil {
		return err
	}
	if r.MaxTokens < 1 {
		return fmt.Errorf("sim request %s: max_tokens must be at least 1", r.ID)
	}
	r.arrival = e.clock.Now()
	if !r.IgnoreEOS && e.cfg.MeanOutputTokens > 0 {
		// Geometric answer length with the configured mean, at least one token.
		p := 1 / float64(e.cfg.MeanOutputTokens)
		r.stopAt = 1 + int(math.Floor(math.Log(1-e.rng.Float64())/math.Log(1-p+1e-12)))
		r.stopAt = max(r.stopAt, r.MinTokens)
	}
	e.waiting = append(e.waiting, r)
	return nil
}

// Abort ends r now with FinishAbort and frees its blocks. It returns false
// if r had already finished. An aborted request in the in-flight step is
// skipped when the step completes.
func (e *Engine) Abort(r *Request) bool {
	if r.done {
		return false
	}
	if i := slices.Index(e.waiting, r); i >= 0 {
		e.waiting = slices.Delete(e.waiting, i, i+1)
	}
	if i := slices.Index(e.running, r); i >= 0 {
		e.running = slices.Delete(e.running, i, i+1)
	}
	e.kv.free(r)
	e.finish(r, FinishAbort, e.clock.Now())
	return true
}

// Idle reports whether the engine has no request at all.
func (e *Engine) Idle() bool { return len(e.waiting) == 0 && len(e.running) == 0 }

// NumRunning and NumWaiting are the queue lengths.
func (e *Engine) NumRunning() int { return len(e.running) }

// NumWaiting is the number of queued (including preempted) requests.
func (e *Engine) NumWaiting() int { return len(e.waiting) }

// KVUsage is vLLM's kv_cache_usage_perc, in [0, 1].
func (e *Engine) KVUsage() float64 { return e.kv.usage() }

// Schedule plans the next step the way vLLM's V1 scheduler does and
// returns it, or nil when there is nothing to run. Running requests are
// served first in admission order (a decode takes one token, a partial
// prefill its next chunk), preempting the most recently admitted request
// when blocks run out; then, if nobody was preempted, waiting requests are
// admitted from the head of the queue within the remaining token budget
// and max_num_seqs, reusing prefix-cache hits. Blocks are allocated now;
// tokens appear when Complete applies the step.
func (e *Engine) Schedule() (*Batch, error) {
	if e.inflight != nil {
		return nil, ErrEngineBusy
	}
	if e.Idle() {
		e.lastEnd = time.Time{} // the next busy period starts when work arrives
		return nil, nil
	}
	now := e.clock.Now()
	start := now
	if !e.lastEnd.IsZero() && !now.Before(e.lastEnd) && now.Sub(e.lastEnd) <= maxStepLag {
		start = e.lastEnd
	}
	b := &Batch{}
	var admitted []*Request
	budget := e.cfg.MaxNumBatchedTokens
	preempted := false

	// Pass 1: running requests.
	for i := 0; i < len(e.running) && budget > 0; i++ {
		r := e.running[i]
		n := e.grant(r, budget)
		if n <= 0 {
			continue
		}
		scheduled := true
		for !e.kv.allocate(r, r.computed, r.computed+n, nil) {
			victim := e.running[len(e.running)-1]
			e.running = e.running[:len(e.running)-1]
			e.preempt(victim)
			b.Preempted++
			preempted = true
			if victim == r {
				scheduled = false
				break
			}
		}
		if !scheduled {
			break
		}
		e.add(b, r, n)
		budget -= n
	}

	// Pass 2: waiting requests, only if nobody was preempted.
	for !preempted && budget > 0 && len(e.waiting) > 0 && len(e.running) < e.cfg.MaxNumSeqs {
		r := e.waiting[0]
		hitTokens, hit := 0, [][]int32(nil)
		if r.computed == 0 {
			hitTokens, hit = e.kv.lookup(r)
		}
		n := r.numTokens() - hitTokens
		if t := e.cfg.LongPrefillTokenThreshold; t > 0 {
			n = min(n, t)
		}
		if !e.cfg.EnableChunkedPrefill && n > budget {
			break
		}
		n = min(n, budget)
		if !e.kv.allocate(r, hitTokens, hitTokens+n, hit) {
			break // head-of-line blocking, as vLLM
		}
		e.waiting = e.waiting[1:]
		if !r.admitted {
			r.admitted = true
			r.cached = hitTokens
			e.stats.prefixLookup(r.numTokens(), hitTokens)
			admitted = append(admitted, r)
		}
		r.computed = hitTokens
		r.running = true
		e.running = append(e.running, r)
		e.add(b, r, n)
		budget -= n
	}
	if len(b.Reqs) == 0 {
		// Every running request was preempted by itself (cannot happen when
		// the config validates, since one request always fits); report the
		// preemptions without advancing time.
		e.stats.Preemptions += b.Preempted
		return nil, nil
	}
	// A step never starts before the requests it admits arrived (a chained
	// start can precede a late driver's latest arrivals).
	for _, r := range admitted {
		if r.arrival.After(start) {
			start = r.arrival
		}
	}
	for _, r := range admitted {
		r.firstScheduled = start
		e.stats.recordQueue(start.Sub(r.arrival))
	}
	b.Start = start
	e.accountIdle(start)
	b.End = b.Start.Add(e.stepTime(b))
	e.inflight = b
	return b, nil
}

// grant is the number of tokens running request r may take this step.
func (e *Engine) grant(r *Request, budget int) int {
	n := r.numTokens() - r.computed
	if t := e.cfg.LongPrefillTokenThreshold; t > 0 {
		n = min(n, t)
	}
	n = min(n, budget, e.cfg.MaxModelLen-1-r.computed)
	return n
}

func (e *Engine) add(b *Batch, r *Request, n int) {
	b.Reqs = append(b.Reqs, r)
	b.Tokens = append(b.Tokens, n)
	drafted := 0
	if n == 1 && r.computed == r.numTokens()-1 && len(r.outputs) > 0 {
		b.DecodeTokens++
		// A draft never proposes past max_tokens or the context.
		drafted = max(0, min(e.cfg.NumSpeculativeTokens, r.MaxTokens-len(r.outputs)-1, e.cfg.MaxModelLen-r.numTokens()-1))
	} else {
		b.PrefillTokens += n
	}
	b.Drafted = append(b.Drafted, drafted)
	b.DraftTokens += drafted
	ctx := r.computed + n
	for _, g := range e.capacity.Groups {
		read := ctx
		if g.SlidingWindow > 0 {
			read = min(ctx, g.SlidingWindow)
		}
		b.KVReadTokens += float64(read) * float64(g.Layers) / float64(e.cfg.NumLayers)
	}
}

// preempt returns r to the front of the waiting queue with its KV freed
// (vLLM V1 always preempts by recompute).
func (e *Engine) preempt(r *Request) {
	e.kv.free(r)
	r.computed = 0
	r.running = false
	r.numPreemptions++
	e.waiting = slices.Insert(e.waiting, 0, r)
}

// stepTime is the cost model: a fixed step cost, a per-sequence cost, a
// per-KV-token cost for the context attention reads, and a per-token
// prefill cost, times seeded noise.
func (e *Engine) stepTime(b *Batch) time.Duration {
	us := e.cfg.StepOverheadUS +
		e.cfg.PerSeqUS*float64(len(b.Reqs)) +
		e.cfg.PerKVTokenNS*b.KVReadTokens/1000 +
		e.cfg.PerPrefillTokenUS*float64(b.PrefillTokens) +
		e.cfg.PerDraftTokenUS*float64(b.DraftTokens)
	if j := e.cfg.JitterFrac; j > 0 {
		us *= max(0.5, 1+j*e.rng.NormFloat64())
	}
	return time.Duration(us * float64(time.Microsecond))
}

// Complete applies the in-flight step at its end time and returns the
// outputs it produced, in schedule order. The caller advances its clock to
// b.End (or sleeps until then) before calling it.
func (e *Engine) Complete(b *Batch) ([]Output, error) {
	if b == nil || b != e.inflight {
		return nil, fmt.Errorf("sim: Complete of a step that is not in flight")
	}
	e.inflight = nil
	e.lastEnd = b.End
	e.accountStep(b)
	e.stats.Steps++
	e.stats.Preemptions += b.Preempted
	var outs []Output
	iterTokens := 0
	for i, r := range b.Reqs {
		if r.done || !r.running {
			continue // aborted while the step ran
		}
		r.computed += b.Tokens[i]
		if r.computed < r.numTokens() {
			continue // partial prefill: no output
		}
		if r.Pooling {
			iterTokens += len(r.Prompt)
			e.kv.free(r)
			if j := slices.Index(e.running, r); j >= 0 {
				e.running = slices.Delete(e.running, j, j+1)
			}
			e.finish(r, FinishStop, b.End)
			outs = append(outs, Output{Req: r, FinishReason: FinishStop, Time: b.End})
			continue
		}
		first := len(r.outputs)
		r.outputs = append(r.outputs, e.rng.Uint32())
		if accepted := e.speculate(r, b.Drafted[i]); accepted > 0 {
			for range accepted {
				r.outputs = append(r.outputs, e.rng.Uint32())
			}
			r.computed += accepted // verified with the step: their KV is computed
		}
		gained := len(r.outputs) - first
		iterTokens += gained
		if first == 0 {
			r.firstToken = b.End
			e.stats.recordFirstToken(b.End.Sub(r.arrival), len(r.Prompt))
			iterTokens += len(r.Prompt)
		} else {
			e.stats.recordITL(b.End.Sub(r.lastToken))
		}
		r.lastToken = b.End
		e.stats.GenerationTokens += int64(gained)
		out := Output{Req: r, Tokens: r.outputs[first:len(r.outputs):len(r.outputs)], Time: b.End}
		switch n := len(r.outputs); {
		case n >= r.MinTokens && r.stopAt > 0 && n >= r.stopAt:
			out.FinishReason = FinishStop
		case n >= r.MaxTokens || r.numTokens() >= e.cfg.MaxModelLen:
			out.FinishReason = FinishLength
		}
		if out.FinishReason != "" {
			e.kv.free(r)
			if j := slices.Index(e.running, r); j >= 0 {
				e.running = slices.Delete(e.running, j, j+1)
			}
			e.finish(r, out.FinishReason, b.End)
		}
		outs = append(outs, out)
	}
	if iterTokens > 0 {
		e.stats.IterationTokens.observe(float64(iterTokens))
	}
	return outs, nil
}

// speculate decides how many of the drafted tokens of r's decode step
// are accepted: each position in turn, with its acceptance chance, until
// one is rejected; never past r's natural end (EOS) or max_tokens, whose
// token the step's own one may already be. It counts the draft as vLLM's
// spec_decode counters do.
func (e *Engine) speculate(r *Request, drafted int) int {
	if drafted <= 0 {
		return 0
	}
	accepted := 0
	for accepted < drafted && e.rng.Float64() < e.cfg.acceptance(accepted) {
		accepted++
	}
	limit := r.MaxTokens
	if r.stopAt > 0 && r.stopAt >= r.MinTokens {
		limit = min(limit, r.stopAt)
	}
	accepted = max(0, min(accepted, limit-len(r.outputs)))
	e.stats.SpecDrafts++
	e.stats.SpecDraftTokens += int64(drafted)
	e.stats.SpecAccepted += int64(accepted)
	for p := range accepted {
		e.stats.SpecAcceptedPerPos[p]++
	}
	return accepted
}

func (e *Engine) finish(r *Request, reason string, at time.Time) {
	r.done = true
	r.running = false
	r.reason = reason
	e.stats.recordFinish(r, reason, at)
}

// Stats returns a copy of the engine's counters, gauges and histograms.
func (e *Engine) Stats() Stats {
	s := e.stats.clone()
	s.Running = len(e.running)
	s.Waiting = len(e.waiting)
	s.KVUsage = e.kv.usage()
	return s
}

// checkInvariants verifies the engine's bookkeeping: the step budget and
// max_num_seqs are respected by b (if not nil), and every block is either
// free (unreferenced) or referenced exactly as often as running requests
// hold it, so allocated + free = total. Tests call it after every step.
func (e *Engine) checkInvariants(b *Batch) error {
	if b != nil && b.NumTokens() > e.cfg.MaxNumBatchedTokens {
		return fmt.Errorf("step schedules %d tokens, budget %d", b.NumTokens(), e.cfg.MaxNumBatchedTokens)
	}
	if len(e.running) > e.cfg.MaxNumSeqs {
		return fmt.Errorf("%d running, max_num_seqs %d", len(e.running), e.cfg.MaxNumSeqs)
	}
	p := e.kv.pool
	refs := make([]int32, len(p.ref))
	for _, r := range e.running {
		for _, t := range r.kv.tables {
			for _, blk := range t {
				if blk != nullBlock {
					refs[blk]++
				}
			}
		}
	}
	for _, r := range e.waiting {
		if e.kv.held(r) != 0 {
			return fmt.Errorf("waiting request %s holds %d blocks", r.ID, e.kv.held(r))
		}
	}
	free, used := 0, 0
	for blk := 1; blk < len(p.ref); blk++ {
		if p.ref[blk] != refs[blk] {
			return fmt.Errorf("block %d: ref %d, held %d times", blk, p.ref[blk], refs[blk])
		}
		if p.inFree[blk] != (p.ref[blk] == 0) {
			return fmt.Errorf("block %d: ref %d but inFree %v", blk, p.ref[blk], p.inFree[blk])
		}
		if p.inFree[blk] {
			free++
		} else {
			used++
		}
	}
	if free != p.numFree || used+free != p.usable() {
		return fmt.Errorf("blocks: %d used + %d free (counter %d) != %d usable", used, free, p.numFree, p.usable())
	}
	n := 0
	for blk := p.head; blk >= 0; blk = p.next[blk] {
		n++
	}
	if n != free {
		return fmt.Errorf("free queue holds %d blocks, %d free", n, free)
	}
	return nil
}
