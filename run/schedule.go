package run

import (
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"

	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/servebench/servebench/client"
)

// Doer sends one request and returns its record. client.Client implements
// it. Do must be safe for concurrent use, must never panic, and must return
// (with Outcome Canceled) soon after ctx is canceled.
type Doer interface {
	Do(ctx context.Context, req *client.Request) results.Result
}

// DefaultGrace is how long in-flight requests may still finish after the run
// is stopped (its context canceled or max_duration reached) before they are
// canceled.
const DefaultGrace = 5 * time.Second

// ErrAborted is the cause of the requests canceled by an abort
// (Options.Abort): they were not given the grace period.
var ErrAborted = errors.New("aborted")

// ErrMaxDuration is the cause returned by Run when load.max_duration ended
// the run.
var ErrMaxDuration = errors.New("load.max_duration reached")

// ErrCircuitOpen is the cause returned by Run when the circuit breaker
// stopped the run: nearly every recent request failed.
var ErrCircuitOpen = errors.New("circuit breaker open")

// option configures a scheduler.
type option func(*scheduler)

// withEpoch sets the run's epoch: Scheduled offsets count from it. Give the
// same time.Now() value as client.Config.Epoch. The default is the time
// newScheduler was called.
func withEpoch(t time.Time) option { return func(r *scheduler) { r.epoch = t } }

// withGrace sets how long in-flight requests may finish after a stop
// before they are canceled (default DefaultGrace; 0 cancels at once).
func withGrace(d time.Duration) option { return func(r *scheduler) { r.grace = max(d, 0) } }

// withShard makes the scheduler run one shard's share of every stage (see
// scenario.Shard): its part of the closed loops' workers and requests,
// its arrivals of the open loops' schedules, and sequence numbers strided
// by the shard count. The default is the whole load.
func withShard(sh scenario.Shard) option { return func(r *scheduler) { r.shard = sh } }

// withAbort makes a close of ch cancel the requests in flight at once,
// without waiting for the grace period (a second Ctrl-C).
func withAbort(ch <-chan struct{}) option { return func(r *scheduler) { r.abort = ch } }

// withPrompts supplies prebuilt prompts (for example to share them between
// runs of one scenario); by default newScheduler builds them.
func withPrompts(p *scenario.Prompts) option { return func(r *scheduler) { r.prompts = p } }

// scheduler executes a scenario's stages against a Doer. Create it with
// newScheduler, call Run once, and read counters from any goroutine meanwhile.
type scheduler struct {
	sc      *scenario.Scenario
	d       Doer
	prompts *scenario.Prompts
	epoch   time.Time
	grace   time.Duration
	abort   <-chan struct{} // closed: cancel the requests in flight now (nil: never)
	tmpl    client.Request  // the fields every request shares
	started atomic.Bool
	shard   scenario.Shard
	step    uint64 // the sequence-number stride: the shard count, or 1

	mu  sync.Mutex // makes (Seq, Scheduled) pairs increase together
	seq uint64

	// A conversation scenario's: the Doer's reply capability, and the next
	// session number (strided like seq, guarded by mu).
	replier replier
	session uint64

	// The circuit breaker: the outcomes of the last finished requests
	// (true: failed), a ring of load.circuit_breaker.window.
	breakMu  sync.Mutex
	recent   []bool
	next     int
	failures int
	trip     context.CancelCauseFunc

	stage                                  atomic.Int64
	stageAt                                atomic.Int64  // the running stage's start, ns since the epoch
	stageSched                             atomic.Uint64 // requests scheduled before the running stage
	scheduled, done                        atomic.Uint64
	ok, failed, canceled, dropped, outToks atomic.Uint64
	inFlight                               atomic.Int64
}

// counters is a snapshot of a run's live counters.
type counters struct {
	Stage        int           // index of the running stage: -1 before Run, the number of stages once it ended
	StageStarted time.Duration // the running stage's start, since the epoch
	StageBefore  uint64        // requests scheduled before the running stage
	Elapsed      time.Duration // since the epoch
	Scheduled    uint64        // requests scheduled so far, dropped arrivals included
	InFlight     int64         // requests handed to the Doer whose record is not yet emitted
	Done         uint64        // records emitted (OK + Failed + Canceled + Dropped)
	OK           uint64
	Failed       uint64
	Canceled     uint64
	Dropped      uint64 // open-loop arrivals that found max_concurrency requests in flight
	OutputTokens uint64 // sum of OutputTokens over OK records
}

// newScheduler prepares a run of sc (which must have passed Validate) against
// d: it builds the prompts unless withPrompts supplies them. It reads the
// scenario now: later changes to sc do not affect the runner.
func newScheduler(sc *scenario.Scenario, d Doer, opts ...option) (*scheduler, error) {
	if sc == nil || d == nil {
		return nil, errors.New("scenario runner: nil scenario or Doer")
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("scenario runner: %w", err)
	}
	r := &scheduler{sc: sc.Clone(), d: d, epoch: time.Now(), grace: DefaultGrace}
	for _, o := range opts {
		o(r)
	}
	if err := r.shard.Check(r.sc); err != nil {
		return nil, fmt.Errorf("scenario runner: shard %s: %w", r.shard, err)
	}
	r.step = uint64(max(r.shard.Count, 1))
	r.seq = uint64(r.shard.Index)
	r.session = uint64(r.shard.Index)
	if r.sc.Prompts.Conversation != nil {
		rep, ok := d.(replier)
		if !ok {
			return nil, errors.New("scenario runner: a conversation needs a Doer that returns the replies (DoReply)")
		}
		r.replier = rep
	}
	if r.prompts == nil {
		p, err := scenario.NewShardPrompts(context.Background(), r.sc, r.shard, nil) // run.Run passes its prompts, built under its context
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		r.prompts = p
	}
	t, q := &r.sc.Target, &r.sc.Request
	stream := *t.Stream
	r.tmpl = client.Request{
		API:             t.API,
		Model:           t.Model,
		System:          q.System,
		MinTokens:       q.MinTokens,
		IgnoreEOS:       *q.IgnoreEOS,
		Temperature:     q.Temperature,
		Stream:          stream,
		IncludeUsage:    stream && *q.IncludeUsage,
		ContinuousUsage: stream && q.ContinuousUsage,
		Extra:           q.Extra,
		PromptOverhead:  r.prompts.Overhead(),
		Tools:           q.Tools,
	}
	r.stage.Store(-1)
	return r, nil
}

// counters returns the live counters. It is safe to call concurrently with
// Run; the fields are read one by one, so they may be a few requests
// apart.
func (r *scheduler) counters() counters {
	return counters{
		Stage:        int(r.stage.Load()),
		StageStarted: time.Duration(r.stageAt.Load()),
		StageBefore:  r.stageSched.Load(),
		Elapsed:      time.Since(r.epoch),
		Scheduled:    r.scheduled.Load(),
		InFlight:     r.inFlight.Load(),
		Done:         r.done.Load(),
		OK:           r.ok.Load(),
		Failed:       r.failed.Load(),
		Canceled:     r.canceled.Load(),
		Dropped:      r.dropped.Load(),
		OutputTokens: r.outToks.Load(),
	}
}

// Run executes the stages in order and calls emit once per scheduled
// request with its record, from many goroutines at once (emit must be safe
// for concurrent use; a slow emit slows the run but loses nothing). It
// returns when every request it started has been emitted.
//
// Canceling ctx, or reaching load.max_duration, stops new arrivals; the
// requests in flight get the grace period to finish, then their context is
// canceled and the Doer returns them as Canceled records. Arrivals that were
// never started are not emitted. Run then returns an error wrapping
// ctx's cause or ErrMaxDuration; it returns nil when all stages completed.
func (r *scheduler) Run(ctx context.Context, emit func(results.Result)) error {
	if !r.started.CompareAndSwap(false, true) {
		return errors.New("scenario runner: Run called twice")
	}
	bounded, cancelBound := context.WithTimeoutCause(ctx, r.sc.Load.MaxDuration.D(), ErrMaxDuration)
	defer cancelBound()
	stop, trip := context.WithCancelCause(bounded)
	defer trip(nil)
	r.trip = trip
	// Requests outlive stop by the grace period: their context is detached
	// from ctx and canceled by the watcher below.
	reqCtx, cancelReqs := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelReqs(nil)
	finished := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Go(func() {
		select {
		case <-finished:
			return
		case <-stop.Done():
		case <-r.abort:
			trip(ErrAborted)
			cancelReqs(ErrAborted)
			return
		}
		grace := time.NewTimer(r.grace)
		defer grace.Stop()
		select {
		case <-finished:
		case <-grace.C:
			cancelReqs(context.Cause(stop))
		case <-r.abort:
			cancelReqs(ErrAborted)
		}
	})

	completed := true
	for i := range r.sc.Load.Stages {
		if stop.Err() != nil {
			completed = false
			break
		}
		r.stageAt.Store(int64(time.Since(r.epoch)))
		r.stageSched.Store(r.scheduled.Load())
		r.stage.Store(int64(i))
		st := &r.sc.Load.Stages[i]
		if st.Open() {
			completed = r.open(stop, reqCtx, i, st, emit) && completed
		} else {
			completed = r.closed(stop, reqCtx, i, st, emit) && completed
		}
	}
	r.stage.Store(int64(len(r.sc.Load.Stages)))
	close(finished)
	watcher.Wait()

	if completed {
		return nil
	}
	switch cause := context.Cause(stop); {
	case ctx.Err() != nil:
		return fmt.Errorf("scenario %s: stopped: %w", r.sc.Name, context.Cause(ctx))
	case errors.Is(cause, ErrCircuitOpen):
		return fmt.Errorf("scenario %s: %w", r.sc.Name, cause)
	}
	return fmt.Errorf("scenario %s: stopped after %s: %w", r.sc.Name, r.sc.Load.MaxDuration, ErrMaxDuration)
}

// since is the offset of now from the epoch.
func (r *scheduler) since() time.Duration { return time.Since(r.epoch) }

// closed runs a closed-loop stage: st.Concurrency workers, each sending its
// next request as soon as its previous one finished (a shard runs its
// share of the workers and requests). It reports whether the stage ended
// by its own bounds (not by stop).
func (r *scheduler) closed(stop, reqCtx context.Context, idx int, whole *scenario.Stage, emit func(results.Result)) bool {
	share := r.shard.Stage(whole)
	st := &share
	start := r.since()
	var issued int // guarded by r.mu
	claim := func() (seq uint64, at time.Duration, warm, ok bool) {
		r.mu.Lock()
		defer r.mu.Unlock()
		at = r.since()
		if (st.Requests > 0 && issued >= st.Requests) || (st.Duration > 0 && at-start >= st.Duration.D()) {
			return 0, 0, false, false
		}
		warm = issued < st.Warmup.Requests || at-start < st.Warmup.Duration.D()
		seq = r.seq
		r.seq += r.step
		issued++
		return seq, at, warm, true
	}
	var wg sync.WaitGroup
	for range st.Concurrency {
		wg.Go(func() {
			if r.replier != nil {
				r.sessions(stop, reqCtx, idx, claim, emit)
				return
			}
			for stop.Err() == nil {
				seq, at, warm, ok := claim()
				if !ok {
					return
				}
				r.scheduled.Add(1)
				r.inFlight.Add(1)
				r.send(reqCtx, seq, idx, warm, at, emit)
			}
		})
	}
	wg.Wait()
	return stop.Err() == nil
}

// open runs an open-loop stage: arrivals at the schedule's offsets, each
// sent in its own goroutine if fewer than st.MaxConcurrency requests are in
// flight, else recorded as dropped. The scheduler never waits for a
// response. A shard computes the stage's whole schedule and sends its own
// arrivals (scenario.Shard.Owns) within its share of the slots. It reports
// whether the stage ended by its own bounds.
func (r *scheduler) open(stop, reqCtx context.Context, idx int, st *scenario.Stage, emit func(results.Result)) bool {
	var sched arrivals = scenario.NewSchedule(st, r.sc.ArrivalSeed(idx))
	build := r.request
	if st.Trace != nil {
		// A trace's arrival n is its record n: the prompt follows the
		// record, whatever the sequence number.
		recs := r.prompts.Trace(idx)
		sched = scenario.NewTraceSchedule(st, recs)
		build = func(seq, n uint64) client.Request {
			p := r.prompts.TraceAt(&recs[n], seq)
			req := r.tmpl
			req.Prompt, req.InputTokens, req.MaxTokens = p.Text, p.InputTokens, p.OutputTokens
			return req
		}
	}
	start := r.since()
	slots := make(chan struct{}, r.shard.Stage(st).MaxConcurrency)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	// n counts the stage's arrivals, every shard's: this shard's are
	// Index, Index+Count, …
	for n := uint64(r.shard.Index); ; n += r.step {
		wait, done := sched.Next(r.since()-start, n)
		if done {
			return true
		}
		if wait > 0 {
			timer.Reset(wait)
			select {
			case <-stop.Done():
				return false
			case <-timer.C:
			}
		} else if stop.Err() != nil {
			return false
		}
		offset := sched.Offset(n)
		at := start + offset
		warm := n < uint64(max(st.Warmup.Requests, 0)) || offset < st.Warmup.Duration.D()
		r.mu.Lock()
		seq := r.seq
		r.seq += r.step
		r.mu.Unlock()
		r.scheduled.Add(1)
		select {
		case slots <- struct{}{}:
			r.inFlight.Add(1)
			wg.Go(func() {
				defer func() { <-slots }()
				req := build(seq, n)
				r.finish(r.d.Do(reqCtx, &req), seq, idx, warm, at, emit)
			})
		default:
			r.drop(seq, idx, warm, at, emit)
		}
	}
}

// arrivals is an open-loop stage's arrival schedule: scenario.Schedule
// (at a rate) or scenario.TraceSchedule (a trace's timestamps).
type arrivals interface {
	Next(elapsed time.Duration, sent uint64) (wait time.Duration, stop bool)
	Offset(i uint64) time.Duration
}

var (
	_ arrivals = (*scenario.Schedule)(nil)
	_ arrivals = (*scenario.TraceSchedule)(nil)
)

// request builds the request of seq (arrival n of its stage, which only a
// trace stage's builder uses). An embeddings request of batch b
// embeds the prompts of b keys of its own, so that no two requests share
// a text: for the shard's own request number k (seq = Index + k·Count),
// the keys (k·b + j)·Count + Index, j < b, which keep the shard's residue
// (a shard's dataset part is the entries of its residue). An embeddings
// request asks for no output, whatever a dataset says.
func (r *scheduler) request(seq, _ uint64) client.Request {
	req := r.tmpl
	if r.tmpl.API != results.APIEmbeddings {
		p := r.prompts.At(seq)
		req.Prompt, req.InputTokens, req.MaxTokens = p.Text, p.InputTokens, p.OutputTokens
		return req
	}
	b := uint64(max(r.sc.Request.Batch, 1))
	if b == 1 {
		p := r.prompts.At(seq)
		req.Prompt, req.InputTokens = p.Text, p.InputTokens
		return req
	}
	index := uint64(r.shard.Index)
	own := (seq - index) / r.step
	req.Inputs = make([]string, b)
	for j := range b {
		p := r.prompts.At((own*b+j)*r.step + index)
		req.Inputs[j] = p.Text
		req.InputTokens += p.InputTokens
	}
	return req
}

// send runs one request and emits its record; the caller has counted it in
// flight.
func (r *scheduler) send(ctx context.Context, seq uint64, stage int, warm bool, at time.Duration, emit func(results.Result)) {
	req := r.request(seq, 0)
	r.finish(r.d.Do(ctx, &req), seq, stage, warm, at, emit)
}

// finish counts and emits the record of a request that was sent.
func (r *scheduler) finish(res results.Result, seq uint64, stage int, warm bool, at time.Duration, emit func(results.Result)) {
	// The runner owns the scheduling fields, whatever the Doer returned.
	res.Seq, res.Stage, res.Warmup, res.Scheduled = seq, stage, warm, at
	switch res.Outcome {
	case results.OK:
		r.ok.Add(1)
		r.outToks.Add(uint64(max(res.OutputTokens, 0)))
		r.breaker(false, &res)
	case results.Canceled:
		r.canceled.Add(1)
	default:
		r.failed.Add(1)
		r.breaker(true, &res)
	}
	emit(res)
	r.done.Add(1)
	r.inFlight.Add(-1)
}

// breaker records a finished request and stops the run when, of the last
// window requests, the configured share failed.
func (r *scheduler) breaker(failed bool, res *results.Result) {
	cb := r.sc.Load.CircuitBreaker
	if cb.Enabled == nil || !*cb.Enabled || cb.Window < 1 {
		return
	}
	r.breakMu.Lock()
	defer r.breakMu.Unlock()
	if len(r.recent) < cb.Window {
		r.recent = append(r.recent, failed)
	} else {
		if r.recent[r.next] {
			r.failures--
		}
		r.recent[r.next] = failed
		r.next = (r.next + 1) % cb.Window
	}
	if failed {
		r.failures++
	}
	if len(r.recent) == cb.Window && float64(r.failures) >= cb.Failures*float64(cb.Window) && r.trip != nil {
		r.trip(fmt.Errorf("%w: %d of the last %d requests failed (the last: %s: %s); the rest of the load was not sent",
			ErrCircuitOpen, r.failures, cb.Window, res.ErrorClass, res.Error))
		r.trip = nil
	}
}

// drop emits the record of an arrival that found no free slot.
//
// It runs on the scheduler's goroutine, so it builds no prompt: a dataset
// prompt may need tokenizing, which would hold back the next arrivals of an
// overloaded stage. The record carries no token lengths.
func (r *scheduler) drop(seq uint64, stage int, warm bool, at time.Duration, emit func(results.Result)) {
	r.dropped.Add(1)
	emit(results.Result{
		Seq: seq, Stage: stage, Warmup: warm, Outcome: results.Dropped,
		API: r.tmpl.API, Stream: r.tmpl.Stream, Scheduled: at,
	})
	r.done.Add(1)
}
