package load

import (
	"fmt"
	"strings"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// Kind is one stage's load model: what it sends and when. The Load calls
// start when the stage begins and done when one of its requests ends; a
// stage is over when it is exhausted and none of its requests is in
// flight.
type Kind interface {
	// Name says what kind of stage it is: "closed loop", "open loop",
	// "trace replay", "conversation", "sessions", "sessions trace replay"
	// or "prime".
	Name() string
	// Describe says, in one line, what the stage sends (this shard's share).
	Describe() string
	// Validate reports, as *scenario.FieldError, what the stage needs that
	// a driver with caps cannot do.
	Validate(caps Caps) error

	start(s *stageRun)
	done(s *stageRun, now time.Duration, r *Request, res *results.Result, reply Reply)
	exhausted() bool // sends nothing more unless a request of its ends
	template() *template
	observe(res *results.Result) // a finished request of the stage, for its precision goal
	goal() *precision            // the stage's precision goal; nil without one
	abandon(l *Load, cause error)
}

// newKind returns the load model of stage i of sc.
func newKind(sc *scenario.Scenario, i int, t *template) Kind {
	whole := &sc.Load.Stages[i]
	b := base{sc: sc, idx: i, whole: whole, st: t.shard.Stage(whole), t: t}
	if whole.Until != nil {
		b.prec = newPrecision(i, whole.Until)
	}
	switch {
	case whole.Prime:
		return &Prime{base: b}
	case whole.Session != nil && whole.Session.Trace != nil:
		return &SessionReplay{base: b}
	case whole.Session != nil:
		return &Sessions{base: b, spec: whole.Session, open: whole.Open()}
	case whole.Trace != nil:
		return &TraceReplay{arrivals: arrivals{base: b}}
	case whole.Open():
		return withShapes(&OpenLoop{arrivals: arrivals{base: b}}, t, whole.Warmup.Shapes)
	case sc.Prompts.Conversation != nil:
		return &Conversation{workers: workers{base: b}, think: sc.Prompts.Conversation.ThinkTime.D()}
	}
	return withShapes(&ClosedLoop{workers: workers{base: b}}, t, whole.Warmup.Shapes)
}

// base is what every stage kind holds.
type base struct {
	sc    *scenario.Scenario
	idx   int
	whole *scenario.Stage // as the scenario gives it
	st    scenario.Stage  // this shard's share
	t     *template
	prec  *precision // load.stages[].until; nil without one
}

func (b *base) template() *template { return b.t }

func (b *base) goal() *precision { return b.prec }

func (b *base) observe(res *results.Result) {
	if b.prec != nil {
		b.prec.add(res)
	}
}

// satisfied reports whether the stage's precision goal is reached: it
// sends nothing more.
func (b *base) satisfied() bool { return b.prec != nil && b.prec.reached }

func (b *base) abandon(*Load, error) {}

// overflow describes an open loop's overflow policy when it queues.
func (a *arrivals) overflow() string {
	if a.st.Overflow == scenario.OverflowQueue {
		return " (more wait client-side, oldest first)"
	}
	return ""
}

// bounds describes the stage's request and duration bounds, and its
// precision goal.
func (b *base) bounds() string {
	var parts []string
	if b.whole.Requests > 0 {
		// An open loop's shard sends the arrivals k ≡ Index (mod Count)
		// below the bound: Share of them.
		parts = append(parts, fmt.Sprintf("%d requests", b.t.shard.Share(b.whole.Requests)))
	}
	if b.whole.Duration > 0 {
		parts = append(parts, "for "+b.whole.Duration.String())
	}
	if u := b.whole.Until; u != nil {
		parts = append(parts, fmt.Sprintf("or until %s is known to ±%.3g %% (%.3g %% confidence)", u.Metric, 100*float64(u.Margin), 100*float64(u.Confidence)))
	}
	return strings.Join(parts, ", ")
}

// workers is a closed loop's state: workers that each send their next
// request when the previous one ended, within the stage's bounds.
type workers struct {
	base
	began  time.Duration
	issued int
	active int // workers not yet retired
}

// claim returns the next request of the stage at now, or false when the
// stage's bounds are reached.
func (w *workers) claim(s *stageRun, now time.Duration) (*Request, bool) {
	st := &w.st
	if w.satisfied() || (st.Requests > 0 && w.issued >= st.Requests) || (st.Duration > 0 && now-w.began >= st.Duration.D()) {
		return nil, false
	}
	warm := w.issued < st.Warmup.Requests || now-w.began < st.Warmup.Duration.D()
	w.issued++
	return &Request{Seq: s.l.claim(), Stage: w.idx, Warmup: warm, Scheduled: now}, true
}

func (w *workers) exhausted() bool { return w.active == 0 }

// ClosedLoop is a closed-loop stage: stage.concurrency workers, each
// sending its next request as soon as its previous one ended, until the
// stage's request count or duration is reached (a shard runs its share of
// the workers and requests).
type ClosedLoop struct{ workers }

// Name implements Kind.
func (*ClosedLoop) Name() string { return "closed loop" }

// Describe implements Kind.
func (k *ClosedLoop) Describe() string {
	return fmt.Sprintf("closed loop, %d workers, %s", k.st.Concurrency, k.bounds())
}

// Validate implements Kind: a closed loop runs under every driver.
func (*ClosedLoop) Validate(Caps) error { return nil }

func (k *ClosedLoop) start(s *stageRun) {
	k.began, k.active = s.start, k.st.Concurrency
	for range k.st.Concurrency {
		k.next(s, s.start)
	}
}

// next sends a worker's next request, or retires the worker.
func (k *ClosedLoop) next(s *stageRun, now time.Duration) {
	r, ok := k.claim(s, now)
	if !ok {
		k.active--
		return
	}
	seq := r.Seq
	r.build = func() Content { return k.t.plain(seq) }
	s.l.send(r)
}

func (k *ClosedLoop) done(s *stageRun, now time.Duration, _ *Request, _ *results.Result, _ Reply) {
	k.next(s, now)
}

// schedule is an open-loop stage's arrival times: scenario.Schedule (at a
// rate) or scenario.TraceSchedule (a trace's timestamps).
type schedule interface {
	Next(elapsed time.Duration, sent uint64) (wait time.Duration, stop bool)
	Offset(i uint64) time.Duration
}

var (
	_ schedule = (*scenario.Schedule)(nil)
	_ schedule = (*scenario.TraceSchedule)(nil)
)

// arrivals is an open loop's state: arrivals at a schedule's offsets, each
// sent if fewer than max_concurrency of the stage's requests are in
// flight, else dropped (recorded, never sent). A shard computes the stage's
// whole schedule and sends its own arrivals (k ≡ Index mod Count) within
// its share of the slots.
type arrivals struct {
	base
	sched   schedule
	began   time.Duration
	pending bool       // an arrival's timer is set
	queue   []*Request // arrivals waiting client-side for a slot (overflow: queue), oldest first
	content func(seq, n uint64) Content
}

func (a *arrivals) exhausted() bool { return !a.pending && len(a.queue) == 0 }

// begin sets the first arrival of the stage.
func (a *arrivals) begin(s *stageRun) {
	a.began = s.start
	a.schedule(s, uint64(a.t.shard.Index))
}

// schedule sets arrival n's timer, unless the stage's bounds end before it.
func (a *arrivals) schedule(s *stageRun, n uint64) {
	if _, stop := a.sched.Next(0, n); stop || a.satisfied() {
		a.pending = false
		return
	}
	a.pending = true
	offset := a.sched.Offset(n)
	s.at(a.began+offset, func(time.Duration) { a.arrive(s, n, offset) })
}

// arrive sends arrival n, or, with every slot taken, drops it or queues
// it (load.stages[].overflow); then it sets the next one.
func (a *arrivals) arrive(s *stageRun, n uint64, offset time.Duration) {
	if a.satisfied() {
		a.pending = false
		return
	}
	st := &a.st
	warm := n < uint64(max(st.Warmup.Requests, 0)) || offset < st.Warmup.Duration.D()
	r := &Request{Seq: s.l.claim(), Stage: a.idx, Warmup: warm, Scheduled: a.began + offset}
	seq := r.Seq
	r.build = func() Content { return a.content(seq, n) }
	switch {
	case s.inFlight() < st.MaxConcurrency && len(a.queue) == 0:
		s.l.send(r)
	case st.Overflow == scenario.OverflowQueue:
		a.queue = append(a.queue, r)
	default:
		s.l.drop(r)
	}
	a.schedule(s, n+a.t.step)
}

// done sends the oldest queued arrival into the slot a request freed.
func (a *arrivals) done(s *stageRun, _ time.Duration, _ *Request, _ *results.Result, _ Reply) {
	for len(a.queue) > 0 && s.inFlight() < a.st.MaxConcurrency {
		r := a.queue[0]
		a.queue[0] = nil
		a.queue = a.queue[1:]
		s.l.send(r)
	}
}

// abandon records the queued arrivals of a stopped load as canceled: they
// were scheduled and never sent.
func (a *arrivals) abandon(l *Load, cause error) {
	for _, r := range a.queue {
		res := results.Result{Outcome: results.Canceled, ErrorClass: results.ErrCanceled,
			Error: "canceled in the client-side queue, never sent: " + cause.Error()}
		r.fill(&res, a.t)
		l.c.canceled.Add(1)
		l.c.done.Add(1)
		l.opts.Emit(res)
	}
	a.queue = nil
}

// OpenLoop is an open-loop stage: arrivals at stage.rate from a seeded
// constant, Poisson or gamma process, never waiting for a response; an
// arrival that finds max_concurrency of the stage's requests in flight is
// dropped and recorded.
type OpenLoop struct{ arrivals }

// Name implements Kind.
func (*OpenLoop) Name() string { return "open loop" }

// Describe implements Kind.
func (k *OpenLoop) Describe() string {
	return fmt.Sprintf("open loop, %s arrivals at %g req/s, at most %d in flight%s, %s",
		k.st.Arrival, k.st.RatePerSec, k.st.MaxConcurrency, k.overflow(), k.bounds())
}

// Validate implements Kind: an open loop runs under every driver.
func (*OpenLoop) Validate(Caps) error { return nil }

func (k *OpenLoop) start(s *stageRun) {
	k.sched = scenario.NewSchedule(k.whole, k.sc.ArrivalSeed(k.idx))
	k.content = func(seq, _ uint64) Content { return k.t.plain(seq) }
	k.begin(s)
}

// TraceReplay is a trace stage: the trace's records sent at their
// timestamps divided by the speed-up, each with the record's lengths and
// hash-id blocks, until the trace (or the stage's bounds) ends; the cap on
// requests in flight is an open loop's.
type TraceReplay struct{ arrivals }

// Name implements Kind.
func (*TraceReplay) Name() string { return "trace replay" }

// Describe implements Kind.
func (k *TraceReplay) Describe() string {
	b := k.bounds()
	if b == "" || strings.HasPrefix(b, "or until") {
		b = strings.TrimSuffix("to the end of the trace, "+b, ", ")
	}
	return fmt.Sprintf("trace replay of %s at %g× speed, at most %d in flight%s, %s",
		k.whole.Trace.Path, k.whole.Trace.Speedup, k.st.MaxConcurrency, k.overflow(), b)
}

// Validate implements Kind: a trace replay runs under every driver.
func (*TraceReplay) Validate(Caps) error { return nil }

func (k *TraceReplay) start(s *stageRun) {
	// A trace's arrival n is its record n: the prompt follows the record,
	// whatever the sequence number.
	recs := k.t.p.Trace(k.idx)
	k.sched = scenario.NewTraceSchedule(k.whole, recs)
	k.content = func(seq, n uint64) Content {
		p := k.t.p.TraceAt(&recs[n], seq)
		return Content{Prompt: p.Text, InputTokens: p.InputTokens, MaxTokens: p.OutputTokens, Exact: true}
	}
	k.begin(s)
}

// Describe says, one line per stage, what each stage of sc sends (for a
// shard, its share), without building any prompt: what a plan shows
// before a run.
func Describe(sc *scenario.Scenario, sh scenario.Shard) []string {
	t := &template{shard: sh, step: uint64(max(sh.Count, 1))}
	out := make([]string, len(sc.Load.Stages))
	for i := range sc.Load.Stages {
		out[i] = newKind(sc, i, t).Describe()
	}
	return out
}

// DescribeBreaker says how the circuit breaker of sc is set.
func DescribeBreaker(sc *scenario.Scenario) string {
	b := newBreaker(sc.Load.CircuitBreaker)
	return b.state().String()
}
