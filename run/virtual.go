package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/servebench/servebench/internal/tokenizer"
	"github.com/servebench/servebench/load"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/scrape"
	"github.com/servebench/servebench/sim"
)

// Virtual time. A run against the simulator can skip HTTP altogether: the
// engine (sim.Engine) steps on a virtual clock, and the load model (package
// load, the same one the wall-clock driver runs) submits each request to
// it at the instant it would have been sent. Every stage kind keeps its
// meaning (closed-loop workers, open-loop arrivals with max_concurrency
// drops, trace replays, conversations whose turns carry the replies,
// embeddings batches, warmup, bounds, load.max_duration with its grace
// period), and every request ends as the same results.Result record a
// real run writes, so the summary, the verdict and the plots are computed
// by the same code. A ten-minute load takes as long as its engine steps
// take to compute, typically seconds.
//
// What virtual time leaves out: the HTTP server and the client (no
// network, no SSE encoding, no client-side overhead: a request is "sent"
// when the engine receives it and a token "arrives" when its step ends),
// and the real-time driver's sleep error. A request's content becomes
// token IDs exactly as the simulator's HTTP server makes them (the chat
// messages' texts in order); a reply's text is the words of its content
// tokens, as the server streams them. A closed-loop worker's next request
// reaches the engine just after the step that finished the previous one
// was followed by the next step's planning, as over HTTP.

// VirtualWarning is the warning every virtual-time run records, so that
// every report of it says how it was made.
const VirtualWarning = "virtual time: the simulator's engine ran on a virtual clock without HTTP or a client; " +
	"the figures are its step timings, with no network or client overhead"

// virtualStart is the offset, from the run's epoch, at which a virtual
// run's load begins: a zero offset means "did not happen" in a results
// file, so nothing may happen at the epoch itself (a real run, too, sends
// its first request a little after its epoch).
const virtualStart = time.Millisecond

// failedRequestTime is how long a request the engine refuses (a prompt too
// long for max_model_len) takes in virtual time: an HTTP round trip's
// worth, so that a closed-loop worker does not spin at one instant.
const failedRequestTime = time.Millisecond

// never is a time no event reaches.
const never = time.Duration(1<<63 - 1)

// virtualClock is the virtual-time driver of a load: the simulator's
// engine on a virtual clock. It is not safe for concurrent use: one
// goroutine drives it from start to end.
type virtualClock struct {
	sc  *scenario.Scenario
	cfg sim.Config
	eng *sim.Engine
	clk *sim.VirtualClock
	t0  time.Time // the engine time of the run's epoch (offset 0)
	l   *load.Load
	tok *tokenizer.Tokenizer
	// exact: the scenario's synthetic prompts are exact under the
	// simulator's tokenizer, so their IDs need no counting.
	exact bool
	put   func(rec results.Record, inFlight int)

	tmpl   virtualTemplate
	live   map[*load.Request]*vreq // requests in flight
	parts  map[*sim.Request]*vreq  // their engine requests
	failed []*vreq                 // refused requests, ending failedRequestTime after they were sent
	step   *sim.Batch

	scrapeEvery time.Duration // 0: no scrapes
	nextScrape  time.Duration
	scrapes     uint64
	parser      *scrape.Parser
	page        bytes.Buffer
	gpuParser   *scrape.Parser // nil: no GPU page (the power model is off)
	meter       sim.GPUMeter
}

// virtualTemplate is what every request of the scenario shares.
type virtualTemplate struct {
	api       string
	chat      bool
	embed     bool
	stream    bool
	usage     bool
	perChunk  bool // continuous usage: each chunk's token count is known
	ignoreEOS bool
	minTokens int
	system    string // request.system (chat)
	tool      bool   // request.tools with a tool_choice that makes the model call one
}

// vreq is a request in the engine (an embeddings batch is one engine
// request per input).
type vreq struct {
	r      *load.Request
	res    results.Result
	parts  int      // engine requests not yet finished
	reply  []uint32 // the output tokens, when the stage wants the reply
	endsAt time.Duration
}

// newVirtualClock prepares a virtual-time run of sc (validated) against
// the simulator configuration cfg; put receives every record.
func newVirtualClock(ctx context.Context, sc *scenario.Scenario, cfg sim.Config, grace time.Duration, put func(results.Record, int)) (*virtualClock, error) {
	if err := sc.Validate(); err != nil {
		return nil, &ConfigError{fmt.Errorf("scenario runner: %w", err)}
	}
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := sim.NewVirtualClock(t0)
	eng, err := sim.NewEngine(cfg, clk, rand.New(rand.NewPCG(cfg.Seed, 0x5e7e)))
	if err != nil {
		return nil, &ConfigError{err}
	}
	tok, err := tokenizer.Load("")
	if err != nil {
		return nil, err
	}
	prompts, err := virtualPrompts(ctx, sc, tok)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("scenario %s: %w", sc.Name, err)}
	}
	v := &virtualClock{sc: sc, cfg: cfg, eng: eng, clk: clk, t0: t0, tok: tok, put: put,
		exact:  prompts.Tokenizer() == nil || prompts.Tokenizer().Name() == tok.Name(),
		tmpl:   newVirtualTemplate(sc),
		live:   map[*load.Request]*vreq{},
		parts:  map[*sim.Request]*vreq{},
		parser: scrape.NewParser(),
	}
	v.l, err = load.New(sc, load.Options{Prompts: prompts, Grace: grace, Caps: load.Caps{Virtual: true, Replies: true},
		Emit: func(r results.Result) { v.put(results.ResultRecord(&r), len(v.live)) }})
	if err != nil {
		return nil, &ConfigError{err}
	}
	if sc.Scrape.Enabled == nil || *sc.Scrape.Enabled {
		v.scrapeEvery = max(sc.Scrape.Interval.D(), 100*time.Millisecond)
		if cfg.PowerModel() && sc.Scrape.GPU == nil {
			v.gpuParser = scrape.NewParser()
		}
	}
	return v, nil
}

// virtualPrompts builds sc's prompts for a virtual run: with
// prompts.tokenizer server, the server is the simulator, whose tokenizer
// calibrates them.
func virtualPrompts(ctx context.Context, sc *scenario.Scenario, tok *tokenizer.Tokenizer) (*scenario.Prompts, error) {
	if sc.Prompts.Tokenizer != tokenizer.Server {
		return scenario.NewPrompts(ctx, sc)
	}
	overhead := 0
	if sc.Target.API == results.APIChat && sc.Request.System != "" {
		overhead = tok.Count(sc.Request.System)
	}
	return scenario.NewServerPrompts(ctx, sc, scenario.Shard{}, tok.Words(), overhead)
}

func newVirtualTemplate(sc *scenario.Scenario) virtualTemplate {
	t := virtualTemplate{
		api:       sc.Target.API,
		chat:      sc.Target.API == results.APIChat,
		embed:     sc.Target.API == results.APIEmbeddings,
		stream:    *sc.Target.Stream && sc.Target.API != results.APIEmbeddings,
		ignoreEOS: *sc.Request.IgnoreEOS,
		minTokens: sc.Request.MinTokens,
	}
	t.usage = t.stream && *sc.Request.IncludeUsage
	t.perChunk = t.usage && sc.Request.ContinuousUsage
	if t.chat {
		t.system = sc.Request.System
		t.tool = len(sc.Request.Tools) > 0 && forcesTool(sc.Request.Extra["tool_choice"])
	}
	return t
}

// forcesTool reports whether a tool_choice makes the model call a tool:
// "required", or a named function.
func forcesTool(choice any) bool {
	switch c := choice.(type) {
	case string:
		return c == "required"
	case map[string]any:
		return c["function"] != nil
	}
	return false
}

func (v *virtualClock) now() time.Duration { return v.clk.Now().Sub(v.t0) }

func (v *virtualClock) set(at time.Duration) { v.clk.Set(v.t0.Add(at)) }

// run executes the load and emits the end record. Its error is the
// load's: nil when every stage ran to its bounds.
func (v *virtualClock) run(ctx context.Context) error {
	v.set(virtualStart)
	v.put(results.WarningRecord(&results.Warning{At: v.now(), Source: "runner", Message: VirtualWarning}), 0)
	if v.scrapeEvery > 0 {
		v.scrape()
	}
	v.l.Start(v.now(), v)
	v.drain(ctx)
	if v.scrapeEvery > 0 {
		v.scrape()
	}
	err := v.l.Err()
	end := &results.End{At: v.now(), Completed: err == nil, Until: v.l.Until()}
	if err != nil {
		end.Reason = err.Error()
	}
	v.put(results.EndRecord(end), 0)
	return err
}

// drain advances virtual time, event by event (an engine step's end, a
// load timer, a refused request's end), until the load is finished.
// Scrapes fall between events.
func (v *virtualClock) drain(ctx context.Context) {
	stopped := false
	for !v.l.Finished() {
		if v.step == nil {
			v.plan()
		}
		if err := ctx.Err(); err != nil && !stopped {
			stopped = true
			v.l.Stop(v.now(), context.Cause(ctx))
			continue
		}
		tStep, tTimer, tFail := never, never, never
		if v.step != nil {
			tStep = v.step.End.Sub(v.t0)
		}
		if t, ok := v.l.Next(); ok {
			tTimer = t
		}
		if len(v.failed) > 0 {
			tFail = v.failed[0].endsAt
		}
		t := min(tStep, tTimer, tFail)
		if t == never {
			// Requests in the engine that no step will serve: cannot
			// happen with a valid configuration; end the run rather
			// than loop.
			v.l.Stop(v.now(), errors.New("the simulator's engine stalled with requests waiting"))
			v.Cancel(errors.New("the simulator's engine stalled"))
			continue
		}
		for v.scrapeEvery > 0 && v.nextScrape <= t {
			v.set(v.nextScrape)
			v.scrape()
		}
		switch t {
		case tFail:
			q := v.failed[0]
			v.failed = v.failed[1:]
			v.set(t)
			v.end(q)
		case tStep:
			v.complete()
		default:
			v.set(t)
			v.l.Fire(t)
		}
	}
}

// end hands a finished request's record to the writer and its end to the
// load.
func (v *virtualClock) end(q *vreq) {
	delete(v.live, q.r)
	q.r.Fill(&q.res)
	var reply load.Reply
	if q.r.WantsReply() {
		reply = v.l.Reply(v.replyText(q.reply), &q.res)
	}
	v.put(results.ResultRecord(&q.res), len(v.live))
	v.l.Done(v.now(), q.r, &q.res, reply)
}

// plan schedules the engine's next step, if it has work.
func (v *virtualClock) plan() {
	if v.eng.Idle() {
		return
	}
	b, err := v.eng.Schedule()
	if err != nil {
		v.l.Stop(v.now(), err)
		v.Cancel(err)
		return
	}
	v.step = b
}

// Cancel implements load.Driver: every request in the engine ends now,
// canceled, in sequence order.
func (v *virtualClock) Cancel(cause error) {
	qs := make([]*vreq, 0, len(v.live))
	for _, q := range v.live {
		if q.parts > 0 {
			qs = append(qs, q)
		}
	}
	slices.SortFunc(qs, func(a, b *vreq) int { return int(a.r.Seq) - int(b.r.Seq) })
	for r, q := range v.parts {
		if q.parts > 0 {
			v.eng.Abort(r)
		}
		delete(v.parts, r)
	}
	if v.step != nil {
		// Retire the step in flight (its requests are aborted, so it
		// produces nothing) and keep the engine ready to schedule.
		_, _ = v.eng.Complete(v.step)
		v.step = nil
	}
	at := v.now()
	for _, q := range qs {
		q.parts = 0
		q.res.End = at
		q.res.Outcome = results.Canceled
		q.res.ErrorClass = results.ErrCanceled
		q.res.Error = fmt.Sprintf("canceled: %v", cause)
		v.end(q)
	}
}
