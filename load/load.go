package load

import (
	"errors"
	"fmt"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// DefaultGrace is how long in-flight requests may still finish after the
// load is stopped (interrupted, load.max_duration reached, the circuit
// breaker tripped) before they are canceled.
const DefaultGrace = 5 * time.Second

// ErrMaxDuration is the cause of a load that load.max_duration stopped.
var ErrMaxDuration = errors.New("load.max_duration reached")

// ErrCircuitOpen is the cause of a load that the circuit breaker stopped:
// the server looked gone (nearly every recent request failed to connect
// or timed out).
var ErrCircuitOpen = errors.New("circuit breaker open")

// ErrAborted is the cause of the requests canceled by an abort (a second
// Ctrl-C): they were not given the grace period.
var ErrAborted = errors.New("aborted")

// Driver supplies the sending to a Load; the Load decides what to send and
// when. The driver calls the Load's methods from one goroutine, with the
// driver's time as an offset from the run's epoch.
type Driver interface {
	// Send starts r now. When it ends, the driver fills the record with
	// r.Fill, writes it, and calls Load.Done on its loop.
	Send(r *Request)
	// Cancel ends every request in flight at once: each still ends (as
	// Canceled) and is given to Load.Done.
	Cancel(cause error)
}

// Caps is what a driver can do, for the stage kinds' Validate.
type Caps struct {
	Virtual bool // a virtual clock (the simulator's engine), not HTTP
	Replies bool // it returns each reply's text (Done's Reply)
}

// Options configure a Load.
type Options struct {
	// Prompts builds every request's content. Required.
	Prompts *scenario.Prompts
	// Shard makes the load one shard's share of every stage (see
	// scenario.Shard). The zero value is the whole load.
	Shard scenario.Shard
	// Grace is how long in-flight requests may finish after a stop
	// (DefaultGrace when zero; negative cancels them at once).
	Grace time.Duration
	// Emit receives the records the Load makes itself: arrivals it drops.
	// Required.
	Emit func(results.Result)
	// Caps is what the driver can do; a stage kind that needs more is
	// refused by New.
	Caps Caps
}

// Load runs a scenario's stages in order under a driver. Create it with
// New, then Start it once; see the package doc for the calling rules.
type Load struct {
	sc      *scenario.Scenario
	opts    Options
	kinds   []Kind
	step    uint64 // the sequence-number stride: the shard count, or 1
	seq     uint64 // the next sequence number
	session uint64 // a conversation's next session key (strided like seq)
	timers  timers
	d       Driver
	start   time.Duration // when Start was called

	cur      int // the running stage; len(kinds) once all ended
	stageAt  time.Duration
	inflight []int // requests in flight by stage
	stopped  bool
	cause    error
	breaker  breaker
	started  bool

	c counters
}

// New prepares the load of sc (which must have passed Validate): one Kind
// per stage, each validated against the driver's capabilities.
func New(sc *scenario.Scenario, opts Options) (*Load, error) {
	if sc == nil || opts.Prompts == nil || opts.Emit == nil {
		return nil, errors.New("load: a scenario, its prompts and an emit function are required")
	}
	if err := opts.Shard.Check(sc); err != nil {
		return nil, fmt.Errorf("load: shard %s: %w", opts.Shard, err)
	}
	if opts.Grace == 0 {
		opts.Grace = DefaultGrace
	}
	l := &Load{sc: sc.Clone(), opts: opts, step: uint64(max(opts.Shard.Count, 1))}
	l.seq = uint64(opts.Shard.Index)
	l.session = uint64(opts.Shard.Index)
	l.breaker = newBreaker(l.sc.Load.CircuitBreaker)
	tmpl := newTemplate(l.sc, opts.Prompts, opts.Shard)
	var errs []error
	for i := range l.sc.Load.Stages {
		k := newKind(l.sc, i, tmpl)
		if err := k.Validate(opts.Caps); err != nil {
			errs = append(errs, err)
		}
		l.kinds = append(l.kinds, k)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	l.inflight = make([]int, len(l.kinds))
	l.c.stage.Store(-1)
	return l, nil
}

// Kinds returns the stage kinds, one per stage.
func (l *Load) Kinds() []Kind { return l.kinds }

// Start begins the load at now: the first stage starts, and
// load.max_duration counts from here.
func (l *Load) Start(now time.Duration, d Driver) {
	if l.started {
		panic("load: Start called twice")
	}
	l.started, l.d, l.start = true, d, now
	l.c.epoch = now
	l.timers.add(now+l.sc.Load.MaxDuration.D(), func(now time.Duration) { l.Stop(now, ErrMaxDuration) })
	l.cur = -1
	l.next(now)
}

// next starts the stages after the current one until one has work.
func (l *Load) next(now time.Duration) {
	for {
		if l.stopped {
			return
		}
		if l.cur >= 0 && l.cur < len(l.kinds) && (!l.kinds[l.cur].exhausted() || l.inflight[l.cur] > 0) {
			return
		}
		l.cur++
		if l.cur >= len(l.kinds) {
			l.c.stage.Store(int64(len(l.kinds)))
			return
		}
		l.stageAt = now
		l.c.stageAt.Store(int64(now))
		l.c.stageSched.Store(l.c.scheduled.Load())
		l.c.stage.Store(int64(l.cur))
		l.kinds[l.cur].start(&stageRun{l: l, idx: l.cur, start: now})
	}
}

// Next returns the time of the earliest timer, if any: the driver calls
// Fire at or after it.
func (l *Load) Next() (time.Duration, bool) { return l.timers.next() }

// Fire runs every timer due at now, in the order they were set.
func (l *Load) Fire(now time.Duration) {
	for {
		t, ok := l.timers.next()
		if !ok || t > now {
			return
		}
		l.timers.pop()(now)
		l.next(now)
	}
}

// Done takes the end of request r at now: res is its record (filled by
// r.Fill and written by the driver), reply its text when the stage asked
// for it (WantsReply). It counts the outcome, feeds the circuit breaker
// and lets r's stage go on.
func (l *Load) Done(now time.Duration, r *Request, res *results.Result, reply Reply) {
	l.inflight[r.Stage]--
	l.c.inFlight.Add(-1)
	switch res.Outcome {
	case results.OK:
		l.c.ok.Add(1)
		l.c.outToks.Add(uint64(max(res.OutputTokens, 0)))
	case results.Canceled:
		l.c.canceled.Add(1)
	default:
		l.c.failed.Add(1)
	}
	l.c.done.Add(1)
	l.kinds[r.Stage].observe(res)
	if res.Outcome != results.Canceled {
		if why := l.breaker.add(res); why != "" && !l.stopped {
			l.Stop(now, fmt.Errorf("%w: %s; the rest of the load was not sent", ErrCircuitOpen, why))
		}
	}
	if !l.stopped && r.Stage == l.cur {
		l.kinds[r.Stage].done(&stageRun{l: l, idx: r.Stage, start: l.stageAt}, now, r, res, reply)
	}
	l.next(now)
}

// Stop ends the load early at now: no new request is sent, and the
// requests in flight get the grace period, then are canceled. A second
// Stop changes nothing.
func (l *Load) Stop(now time.Duration, cause error) {
	if l.stopped {
		return
	}
	l.stopped, l.cause = true, cause
	l.timers = timers{}
	if l.cur >= 0 && l.cur < len(l.kinds) {
		l.kinds[l.cur].abandon(l, cause)
	}
	if l.c.inFlight.Load() == 0 {
		return
	}
	if l.opts.Grace < 0 {
		l.d.Cancel(cause)
		return
	}
	l.timers.add(now+l.opts.Grace, func(time.Duration) { l.d.Cancel(cause) })
}

// Finished reports whether the load is over: every stage ended, or the
// load was stopped, and no request is in flight.
func (l *Load) Finished() bool {
	return (l.stopped || l.cur >= len(l.kinds)) && l.c.inFlight.Load() == 0
}

// Err says how the load ended: nil when every stage ran to its bounds,
// else an error wrapping the cause of the stop (ErrMaxDuration,
// ErrCircuitOpen, ErrAborted or the driver's context's cause).
func (l *Load) Err() error {
	switch {
	case !l.stopped:
		return nil
	case errors.Is(l.cause, ErrMaxDuration):
		return fmt.Errorf("scenario %s: stopped after %s: %w", l.sc.Name, l.sc.Load.MaxDuration, l.cause)
	case errors.Is(l.cause, ErrCircuitOpen):
		return fmt.Errorf("scenario %s: %w", l.sc.Name, l.cause)
	}
	return fmt.Errorf("scenario %s: stopped: %w", l.sc.Name, l.cause)
}

// Until says how each stage with a precision goal ended (those that ran).
func (l *Load) Until() []results.Until {
	var out []results.Until
	for i, k := range l.kinds {
		if p := k.goal(); p != nil && i <= l.cur {
			out = append(out, p.result())
		}
	}
	return out
}

// Breaker returns what the circuit breaker saw: its setting and, when it
// tripped, why.
func (l *Load) Breaker() BreakerState { return l.breaker.state() }

// claim returns the next sequence number.
func (l *Load) claim() uint64 {
	s := l.seq
	l.seq += l.step
	l.c.scheduled.Add(1)
	return s
}

// send hands r to the driver.
func (l *Load) send(r *Request) {
	l.inflight[r.Stage]++
	l.c.inFlight.Add(1)
	l.d.Send(r)
}

// drop records r as an arrival that found no free slot: never sent.
func (l *Load) drop(r *Request) {
	l.c.dropped.Add(1)
	l.c.done.Add(1)
	res := results.Result{Outcome: results.Dropped}
	r.fill(&res, l.kinds[r.Stage].template())
	l.opts.Emit(res)
}

// stageRun is a stage kind's view of the Load while its stage runs.
type stageRun struct {
	l     *Load
	idx   int
	start time.Duration
}

// at runs fn at time t (now or later), unless the load stops first.
func (s *stageRun) at(t time.Duration, fn func(now time.Duration)) {
	s.l.timers.add(t, fn)
}

// inFlight is the number of the stage's requests in flight.
func (s *stageRun) inFlight() int { return s.l.inflight[s.idx] }
