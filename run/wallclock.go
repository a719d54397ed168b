package run

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/load"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// Doer sends one request and returns its record. client.Client implements
// it. Do must be safe for concurrent use, must never panic, and must return
// (with Outcome Canceled) soon after ctx is canceled.
type Doer interface {
	Do(ctx context.Context, req *client.Request) results.Result
}

// replier is the capability a conversation needs of its Doer: the reply's
// text as received, for the session's next turn.
type replier interface {
	DoReply(ctx context.Context, req *client.Request) (results.Result, string)
}

var _ replier = (*client.Client)(nil)

// option configures a wallClock.
type option func(*wallClock)

// withEpoch sets the run's epoch: Scheduled offsets count from it. Give the
// same time.Now() value as client.Config.Epoch. The default is the time
// newWallClock was called.
func withEpoch(t time.Time) option { return func(w *wallClock) { w.epoch = t } }

// withGrace sets how long in-flight requests may finish after a stop
// before they are canceled (default load.DefaultGrace; negative cancels at
// once).
func withGrace(d time.Duration) option { return func(w *wallClock) { w.grace = d } }

// withShard makes the driver run one shard's share of every stage (see
// scenario.Shard). The default is the whole load.
func withShard(sh scenario.Shard) option { return func(w *wallClock) { w.shard = sh } }

// withAbort makes a close of ch cancel the requests in flight at once,
// without waiting for the grace period (a second Ctrl-C).
func withAbort(ch <-chan struct{}) option { return func(w *wallClock) { w.abort = ch } }

// withPrompts supplies prebuilt prompts; by default newWallClock builds
// them.
func withPrompts(p *scenario.Prompts) option { return func(w *wallClock) { w.prompts = p } }

// wallClock is the real-time driver of a load (package load decides what
// is sent when): its timers run on the wall clock and its requests go over
// HTTP through a Doer, each in its own goroutine. One goroutine, Run's,
// calls the load; a request's goroutine builds its content, sends it,
// fills and emits its record, and hands its end to that loop.
type wallClock struct {
	sc      *scenario.Scenario
	d       Doer
	rep     replier // d's, when it returns replies
	prompts *scenario.Prompts
	epoch   time.Time
	grace   time.Duration
	shard   scenario.Shard
	abort   <-chan struct{}
	tmpl    client.Request // the fields every request shares
	l       *load.Load
	started atomic.Bool

	emit   func(results.Result)
	ends   chan ended
	reqCtx context.Context
	cancel context.CancelCauseFunc
}

// ended is a request's end, handed from its goroutine to the loop.
type ended struct {
	r     *load.Request
	res   results.Result
	reply load.Reply
}

// newWallClock prepares a real-time run of sc (which must have passed
// Validate) against d: it builds the prompts unless withPrompts supplies
// them. It reads the scenario now: later changes to sc do not affect it.
func newWallClock(sc *scenario.Scenario, d Doer, opts ...option) (*wallClock, error) {
	if sc == nil || d == nil {
		return nil, errors.New("scenario runner: nil scenario or Doer")
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("scenario runner: %w", err)
	}
	w := &wallClock{sc: sc.Clone(), d: d, epoch: time.Now()}
	w.rep, _ = d.(replier)
	for _, o := range opts {
		o(w)
	}
	if w.prompts == nil {
		p, err := scenario.NewShardPrompts(context.Background(), w.sc, w.shard, nil) // run.Run passes its prompts, built under its context
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		w.prompts = p
	}
	l, err := load.New(w.sc, load.Options{Prompts: w.prompts, Shard: w.shard, Grace: w.grace,
		Emit: func(r results.Result) { w.emit(r) }, Caps: load.Caps{Replies: w.rep != nil}})
	if err != nil {
		return nil, fmt.Errorf("scenario runner: %w", err)
	}
	w.l = l
	w.tmpl = requestTemplate(w.sc, w.prompts)
	return w, nil
}

// requestTemplate is what every request of sc shares.
func requestTemplate(sc *scenario.Scenario, p *scenario.Prompts) client.Request {
	t, q := &sc.Target, &sc.Request
	stream := *t.Stream
	return client.Request{
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
		PromptOverhead:  p.Overhead(),
		Tools:           q.Tools,
	}
}

// counters returns the load's live counters. Safe for concurrent use.
func (w *wallClock) counters() counters {
	return counters{Counters: w.l.Counters(), Elapsed: time.Since(w.epoch)}
}

// now is the offset of the wall clock from the epoch.
func (w *wallClock) now() time.Duration { return time.Since(w.epoch) }

// Run runs the load and calls emit once per scheduled request with its
// record, from many goroutines at once (emit must be safe for concurrent
// use; a slow emit slows the run but loses nothing). It returns when every
// request it started has been emitted.
//
// Canceling ctx, or reaching load.max_duration, stops new arrivals; the
// requests in flight get the grace period, then are canceled and recorded
// as Canceled. Run then returns an error wrapping the cause (load.Err); it
// returns nil when all stages completed.
func (w *wallClock) Run(ctx context.Context, emit func(results.Result)) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("scenario runner: Run called twice")
	}
	w.emit = emit
	w.ends = make(chan ended, 256)
	// Requests outlive a stop by the grace period: their context is
	// detached from ctx and canceled by the load (Cancel).
	w.reqCtx, w.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	defer w.cancel(nil)
	w.l.Start(w.now(), w)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	done, abort := ctx.Done(), w.abort
	for !w.l.Finished() {
		var due <-chan time.Time
		if t, ok := w.l.Next(); ok {
			if wait := t - w.now(); wait <= 0 {
				w.l.Fire(w.now())
				continue
			} else {
				timer.Reset(wait)
				due = timer.C
			}
		}
		select {
		case e := <-w.ends:
			w.l.Done(w.now(), e.r, &e.res, e.reply)
		case <-due:
			w.l.Fire(w.now())
		case <-done:
			done = nil
			w.l.Stop(w.now(), context.Cause(ctx))
		case <-abort:
			abort = nil
			w.l.Stop(w.now(), load.ErrAborted)
			w.Cancel(load.ErrAborted)
		}
	}
	return w.l.Err()
}

// Send implements load.Driver: r goes out in a goroutine of its own.
func (w *wallClock) Send(r *load.Request) {
	go func() {
		c := r.Content()
		req := w.tmpl
		req.Prompt, req.Inputs, req.InputTokens, req.MaxTokens = c.Prompt, c.Inputs, c.InputTokens, c.MaxTokens
		if c.System != "" {
			req.System = c.System
		}
		if len(c.History) > 0 {
			req.History = make([]client.Message, len(c.History))
			for i, m := range c.History {
				req.History[i] = client.Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
				for _, tc := range m.ToolCalls {
					req.History[i].ToolCalls = append(req.History[i].ToolCalls, client.ToolCall(tc))
				}
			}
		}
		var e ended
		if r.WantsReply() {
			var text string
			e.res, text = w.rep.DoReply(w.reqCtx, &req)
			e.reply = w.l.Reply(text, &e.res)
		} else {
			e.res = w.d.Do(w.reqCtx, &req)
		}
		r.Fill(&e.res)
		e.r = r
		w.emit(e.res)
		w.ends <- e
	}()
}

// Cancel implements load.Driver: every request in flight is canceled.
func (w *wallClock) Cancel(cause error) { w.cancel(cause) }
