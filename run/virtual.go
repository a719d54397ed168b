package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"time"

	"github.com/servebench/servebench/internal/tokenizer"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/scrape"
	"github.com/servebench/servebench/sim"
)

// Virtual time. A run against the simulator can skip HTTP altogether: the
// engine (sim.Engine) steps on a virtual clock, and requests are submitted
// to it at the instants the scheduler would have sent them. The stages
// keep the scheduler's semantics (closed-loop workers that send their next
// request when the previous one ends, open-loop arrivals from the same
// seeded schedule with max_concurrency drops, warmup, request and duration
// bounds, load.max_duration with its grace period), and every request ends
// as the same results.Result record a real run writes, so the summary,
// the verdict and the plots are computed by the same code. A ten-minute
// load takes as long as its engine steps take to compute, typically
// seconds.
//
// What virtual time leaves out: the HTTP server and the client (no
// network, no SSE encoding, no client-side overhead: a request is "sent"
// when the engine receives it and a token "arrives" when its step ends),
// and the real-time driver's sleep error. A closed-loop worker's next
// request reaches the engine just after the step that finished the
// previous one was followed by the next step's planning, as over HTTP.

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

// Simulate runs sc against the simulator configuration cfg in virtual time
// (see Run's Options.Virtual) and returns its summary, judged by the
// scenario's budgets when it has any. It writes nothing. sc must have
// passed Validate; its target is not read. observe, when not nil, is
// called with every record as it is produced (see Options.Observe).
func Simulate(ctx context.Context, sc *scenario.Scenario, cfg sim.Config, observe func(results.Record, int)) (*report.Summary, error) {
	agg := report.New()
	hdr, spec, err := virtualHeader(sc, time.Now())
	if err != nil {
		return nil, &ConfigError{err}
	}
	agg.AddHeader(hdr)
	v, err := newVirtualRun(ctx, sc, cfg, DefaultGrace, func(rec results.Record, inFlight int) {
		agg.AddRecord(rec)
		if observe != nil {
			observe(rec, inFlight)
		}
	})
	if err != nil {
		return nil, err
	}
	runErr := v.run(ctx)
	sum := agg.Summary()
	if spec != nil && spec.Budgets != nil {
		sum.Verdict = agg.Evaluate(sum, spec.Budgets, spec.SLO)
	}
	if runErr == nil {
		runErr = noSuccess(sum)
	}
	return sum, runErr
}

// virtualHeader is the results header of a virtual-time run of sc started
// (in wall-clock time) at started.
func virtualHeader(sc *scenario.Scenario, started time.Time) (*results.Header, *results.Spec, error) {
	resolved, err := sc.Resolved()
	if err != nil {
		return nil, nil, err
	}
	spec, err := results.DecodeSpec(resolved)
	if err != nil {
		return nil, nil, err
	}
	return &results.Header{Schema: results.Schema, Tool: "servebench", Version: Version(), Started: started,
		Target: sc.Target.URL, Model: sc.Target.Model, Scenario: resolved, Ends: true, Spec: spec, Virtual: true}, spec, nil
}

// runVirtual is Run for Options.Virtual: the same outputs, from a
// virtual-time run of the scenario's simulator target.
func runVirtual(ctx context.Context, sc *scenario.Scenario, opts Options) (*report.Summary, error) {
	cfg, err := sim.ConfigFromURL(sc.SimTarget())
	if err != nil {
		return nil, configErr("target.url %s: %w", sc.Target.URL, err)
	}
	if sc.Target.Model == "" {
		if err := sc.Set("target.model", cfg.ServedModelName); err != nil {
			return nil, &ConfigError{err}
		}
	}
	hdr, spec, err := virtualHeader(sc, time.Now())
	if err != nil {
		return nil, &ConfigError{err}
	}
	path := filepath.Join(opts.Dir, FileResults)
	w, err := results.Create(path)
	if err != nil {
		return nil, err
	}
	agg := report.New()
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "running %q against %s in virtual time (model %s); results → %s\n",
			sc.Name, sc.Target.URL, sc.Target.Model, path)
	}
	var werr error
	write := func(rec results.Record, inFlight int) {
		if werr == nil {
			werr = w.Write(rec)
		}
		if werr == nil {
			agg.AddRecord(rec)
		}
		if opts.Observe != nil {
			opts.Observe(rec, inFlight)
		}
	}
	write(results.HeaderRecord(hdr), 0)
	grace := opts.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	var runErr error
	if v, err := newVirtualRun(ctx, sc, cfg, grace, write); err != nil {
		runErr = err
	} else {
		runErr = v.run(ctx)
	}
	runErr = errors.Join(runErr, werr, w.Close())
	sum, err := finish(opts.Dir, agg, spec, !opts.NoPlots)
	if runErr == nil && sum != nil {
		runErr = noSuccess(sum)
	}
	return sum, errors.Join(runErr, err)
}

// virtualRun is one virtual-time run in progress. It is not safe for
// concurrent use: one goroutine drives it from start to end.
type virtualRun struct {
	sc      *scenario.Scenario
	cfg     sim.Config
	eng     *sim.Engine
	clk     *sim.VirtualClock
	t0      time.Time // the engine time of the run's epoch (offset 0)
	prompts *scenario.Prompts
	tok     *tokenizer.Tokenizer
	exact   bool // synthetic prompts are exact under the simulator's tokenizer
	grace   time.Duration
	emit    func(results.Record, int)

	api       string
	stream    bool
	ignoreEOS bool
	minTokens int
	usage     bool
	system    []uint32

	seq      uint64
	inflight map[*sim.Request]*vreq
	step     *sim.Batch
	timers   []timer // sorted by at, then by insertion

	stopAt  time.Duration // load.max_duration
	stopped bool
	cause   error // why the run stopped early
	graceAt time.Duration

	scrapeEvery time.Duration // 0: no scrapes
	nextScrape  time.Duration
	scrapes     uint64
	parser      *scrape.Parser
	page        bytes.Buffer
}

// vreq is a request in the engine.
type vreq struct {
	res    results.Result
	onDone func() // the closed-loop worker's next claim, or nil
}

// timer is an action due at a virtual offset: a closed-loop worker's next
// request, an open-loop arrival.
type timer struct {
	at time.Duration
	fn func()
}

func newVirtualRun(ctx context.Context, sc *scenario.Scenario, cfg sim.Config, grace time.Duration, emit func(results.Record, int)) (*virtualRun, error) {
	if err := sc.Validate(); err != nil {
		return nil, &ConfigError{fmt.Errorf("scenario runner: %w", err)}
	}
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := sim.NewVirtualClock(t0)
	eng, err := sim.NewEngine(cfg, clk, rand.New(rand.NewPCG(cfg.Seed, 0x5e7e)))
	if err != nil {
		return nil, &ConfigError{err}
	}
	prompts, err := scenario.NewPrompts(ctx, sc)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("scenario %s: %w", sc.Name, err)}
	}
	tok, err := tokenizer.Load("")
	if err != nil {
		return nil, err
	}
	v := &virtualRun{
		sc: sc, cfg: cfg, eng: eng, clk: clk, t0: t0, prompts: prompts, tok: tok, grace: grace, emit: emit,
		exact:     sc.Prompts.Dataset.Path == "" && prompts.Tokenizer().Name() == tok.Name(),
		api:       sc.Target.API,
		stream:    *sc.Target.Stream,
		ignoreEOS: *sc.Request.IgnoreEOS,
		minTokens: sc.Request.MinTokens,
		inflight:  map[*sim.Request]*vreq{},
		stopAt:    sc.Load.MaxDuration.D(),
		parser:    scrape.NewParser(),
	}
	v.usage = v.stream && *sc.Request.IncludeUsage
	if sc.Target.API == results.APIChat && sc.Request.System != "" {
		v.system = sim.PromptIDs(tok, sc.Request.System, -1)
	}
	if sc.Scrape.Enabled == nil || *sc.Scrape.Enabled {
		v.scrapeEvery = max(sc.Scrape.Interval.D(), 100*time.Millisecond)
	}
	return v, nil
}

func (v *virtualRun) now() time.Duration { return v.clk.Now().Sub(v.t0) }

func (v *virtualRun) set(at time.Duration) { v.clk.Set(v.t0.Add(at)) }

// run executes every stage in order and emits the end record. Its error
// is the scheduler's: nil when every stage ran to its bounds.
func (v *virtualRun) run(ctx context.Context) error {
	v.set(virtualStart)
	v.emit(results.WarningRecord(&results.Warning{At: v.now(), Source: "runner", Message: VirtualWarning}), 0)
	if v.scrapeEvery > 0 {
		v.scrape()
	}
	for i := range v.sc.Load.Stages {
		if v.stopped {
			break
		}
		st := &v.sc.Load.Stages[i]
		if st.Open() {
			v.open(i, st)
		} else {
			v.closed(i, st)
		}
		v.drain(ctx)
	}
	if v.scrapeEvery > 0 {
		v.scrape()
	}
	end := &results.End{At: v.now(), Completed: !v.stopped}
	if v.stopped {
		end.Reason = v.cause.Error()
	}
	v.emit(results.EndRecord(end), 0)
	switch {
	case !v.stopped:
		return nil
	case errors.Is(v.cause, ErrMaxDuration):
		return fmt.Errorf("scenario %s: stopped after %s: %w", v.sc.Name, v.sc.Load.MaxDuration, ErrMaxDuration)
	}
	return fmt.Errorf("scenario %s: stopped: %w", v.sc.Name, v.cause)
}

// closed starts a closed-loop stage: its workers each claim a request now,
// and the next one when the previous ends.
func (v *virtualRun) closed(idx int, st *scenario.Stage) {
	start := v.now()
	issued := 0
	var claim func()
	claim = func() {
		at := v.now()
		if v.stopped || (st.Requests > 0 && issued >= st.Requests) || (st.Duration > 0 && at-start >= st.Duration.D()) {
			return
		}
		warm := issued < st.Warmup.Requests || at-start < st.Warmup.Duration.D()
		issued++
		v.send(idx, warm, at, claim)
	}
	for range st.Concurrency {
		claim()
	}
}

// open starts an open-loop stage: each arrival, at the schedule's offset,
// is sent when fewer than max_concurrency requests are in flight and
// dropped otherwise; it schedules the next one.
func (v *virtualRun) open(idx int, st *scenario.Stage) {
	sched := scenario.NewSchedule(st, v.sc.ArrivalSeed(idx))
	start := v.now()
	var arrive func(n uint64)
	next := func(n uint64) {
		if _, done := sched.Next(0, n); done {
			return
		}
		v.after(start+sched.Offset(n), func() { arrive(n) })
	}
	arrive = func(n uint64) {
		if v.stopped {
			return
		}
		offset := sched.Offset(n)
		warm := n < uint64(max(st.Warmup.Requests, 0)) || offset < st.Warmup.Duration.D()
		if len(v.inflight) >= st.MaxConcurrency {
			v.drop(idx, warm, start+offset)
		} else {
			v.send(idx, warm, start+offset, nil)
		}
		next(n + 1)
	}
	next(0)
}

// after schedules fn at offset at (not before now).
func (v *virtualRun) after(at time.Duration, fn func()) {
	at = max(at, v.now())
	i, _ := slices.BinarySearchFunc(v.timers, at, func(t timer, at time.Duration) int {
		if t.at <= at { // after every timer due at the same time
			return -1
		}
		return 1
	})
	v.timers = slices.Insert(v.timers, i, timer{at, fn})
}

// send submits the next request of the scenario to the engine at offset at
// (now), or records it as failed when the engine refuses it.
func (v *virtualRun) send(stage int, warm bool, at time.Duration, onDone func()) {
	seq := v.seq
	v.seq++
	p := v.prompts.At(seq)
	res := results.Result{Seq: seq, Stage: stage, Warmup: warm, API: v.api, Stream: v.stream,
		Scheduled: at, Sent: at, InputTokens: p.InputTokens, MaxTokens: p.OutputTokens}
	count := -1
	if v.exact {
		count = p.InputTokens
	}
	ids := append(slices.Clone(v.system), sim.PromptIDs(v.tok, p.Text, count)...)
	if len(ids) == 0 {
		ids = []uint32{0}
	}
	r := &sim.Request{ID: fmt.Sprintf("virtual-%d", seq), Prompt: ids, MaxTokens: p.OutputTokens,
		MinTokens: v.minTokens, IgnoreEOS: v.ignoreEOS}
	var err error
	if v.minTokens > p.OutputTokens {
		err = &sim.APIError{Message: fmt.Sprintf("min_tokens must be less than or equal to max_tokens=%d, got %d.", p.OutputTokens, v.minTokens),
			Type: "BadRequestError", Param: "min_tokens", Code: 400}
	} else {
		err = v.eng.Submit(r)
	}
	if err != nil {
		res.Outcome = results.Failed
		res.ErrorClass = results.ErrHTTP4xx
		res.Status = 400
		res.Error = "400 Bad Request: " + err.Error()
		var api *sim.APIError
		if errors.As(err, &api) {
			res.Status = api.Code
			res.Error = fmt.Sprintf("%d %s: %s", api.Code, api.Type, api.Message)
			if api.Code >= 500 {
				res.ErrorClass = results.ErrHTTP5xx
			}
		}
		res.End = at + failedRequestTime
		v.emit(results.ResultRecord(&res), len(v.inflight))
		if onDone != nil {
			v.after(res.End, onDone)
		}
		return
	}
	res.PromptTokens = len(ids)
	v.inflight[r] = &vreq{res: res, onDone: onDone}
}

// drop records an open-loop arrival that found max_concurrency requests in
// flight.
func (v *virtualRun) drop(stage int, warm bool, at time.Duration) {
	seq := v.seq
	v.seq++
	p := v.prompts.At(seq)
	v.emit(results.ResultRecord(&results.Result{Seq: seq, Stage: stage, Warmup: warm, Outcome: results.Dropped,
		API: v.api, Stream: v.stream, Scheduled: at, InputTokens: p.InputTokens, MaxTokens: p.OutputTokens}), len(v.inflight))
}

// drain advances virtual time, event by event, until nothing is left to
// do: no step in flight, no timer due and no request in the engine.
// Scrapes, load.max_duration and the grace period fall between events.
func (v *virtualRun) drain(ctx context.Context) {
	const never = time.Duration(1<<63 - 1)
	for {
		if v.step == nil {
			v.plan()
		}
		if v.step == nil && len(v.timers) == 0 && len(v.inflight) == 0 {
			return
		}
		if err := ctx.Err(); err != nil && !v.stopped {
			v.stop(context.Cause(ctx))
		}
		tStep, tTimer, tStop, tGrace := never, never, never, never
		if v.step != nil {
			tStep = v.step.End.Sub(v.t0)
		}
		if len(v.timers) > 0 {
			tTimer = v.timers[0].at
		}
		if !v.stopped && v.stopAt > 0 {
			tStop = v.stopAt
		}
		if v.stopped && len(v.inflight) > 0 {
			tGrace = v.graceAt
		}
		t := min(tStep, tTimer, tStop, tGrace)
		if t == never {
			// Requests in the engine that no step will serve: cannot happen
			// with a valid configuration; end the run rather than loop.
			v.stop(errors.New("the simulator's engine stalled with requests waiting"))
			v.abortAll()
			return
		}
		for v.scrapeEvery > 0 && v.nextScrape <= t {
			v.set(v.nextScrape)
			v.scrape()
		}
		switch t {
		case tStep:
			v.complete()
		case tTimer:
			tm := v.timers[0]
			v.timers = v.timers[1:]
			v.set(tm.at)
			tm.fn()
		case tStop:
			v.set(tStop)
			v.stop(ErrMaxDuration)
		default:
			v.set(tGrace)
			v.abortAll()
		}
	}
}

// plan schedules the engine's next step, if it has work.
func (v *virtualRun) plan() {
	if v.eng.Idle() {
		return
	}
	b, err := v.eng.Schedule()
	if err != nil {
		v.stop(err)
		v.abortAll()
		return
	}
	v.step = b
}

// complete applies the step in flight at its end, plans the next one, and
// then records what the step produced: tokens, and the requests it
// finished (whose closed-loop workers send their next request now, to be
// served from the step after the one just planned, as over HTTP).
func (v *virtualRun) complete() {
	b := v.step
	v.step = nil
	v.clk.Set(b.End)
	outs, err := v.eng.Complete(b)
	if err != nil {
		v.stop(err)
		v.abortAll()
		return
	}
	v.plan()
	at := b.End.Sub(v.t0)
	for _, o := range outs {
		q := v.inflight[o.Req]
		if q == nil {
			continue
		}
		r := &q.res
		for range o.Tokens {
			if r.FirstToken == 0 {
				r.FirstToken, r.Headers = at, at
			}
			r.LastToken = at
			r.OutputTokens++
			if v.stream {
				r.ChunkTimes = append(r.ChunkTimes, at-r.Sent)
			}
		}
		if o.FinishReason == "" {
			continue
		}
		delete(v.inflight, o.Req)
		r.End = at
		r.Outcome = results.OK
		r.FinishReason = o.FinishReason
		if !v.stream {
			r.FirstToken, r.Headers, r.LastToken = 0, at, 0
		}
		if v.cfg.EnablePromptTokensDetails && (v.usage || !v.stream) {
			r.CachedTokens = o.Req.CachedTokens()
		}
		if v.stream && !v.usage {
			// Without usage the client counts the tokens it saw itself.
			r.Estimated = true
		}
		v.emit(results.ResultRecord(r), len(v.inflight))
		if q.onDone != nil {
			v.after(at, q.onDone)
		}
	}
}

// stop ends the load early: no new request; those in the engine get the
// grace period (negative: none).
func (v *virtualRun) stop(cause error) {
	if v.stopped {
		return
	}
	v.stopped, v.cause = true, cause
	v.graceAt = v.now() + max(v.grace, 0)
	if v.grace < 0 {
		v.abortAll()
	}
	// Arrivals and claims not yet made never will be.
	v.timers = nil
}

// abortAll cancels every request still in the engine, in sequence order.
func (v *virtualRun) abortAll() {
	reqs := make([]*sim.Request, 0, len(v.inflight))
	for r := range v.inflight {
		reqs = append(reqs, r)
	}
	slices.SortFunc(reqs, func(a, b *sim.Request) int {
		return int(v.inflight[a].res.Seq) - int(v.inflight[b].res.Seq)
	})
	at := v.now()
	cause := v.cause
	if cause == nil {
		cause = context.Canceled
	}
	for _, r := range reqs {
		q := v.inflight[r]
		delete(v.inflight, r)
		v.eng.Abort(r)
		q.res.End = at
		q.res.Outcome = results.Canceled
		q.res.ErrorClass = results.ErrCanceled
		q.res.Error = fmt.Sprintf("canceled: %v", cause)
		v.emit(results.ResultRecord(&q.res), len(v.inflight))
	}
	if v.step != nil {
		// Retire the step in flight (its requests are aborted, so it
		// produces nothing) and keep the engine ready to schedule.
		_, _ = v.eng.Complete(v.step)
		v.step = nil
	}
}

// scrape records the engine's /metrics page as the scraper would have read
// it now, through the vLLM profile.
func (v *virtualRun) scrape() {
	at := v.now()
	v.page.Reset()
	s := results.Sample{Index: v.scrapes, Target: v.sc.Target.URL + "/metrics", Start: at, At: at, OK: true, Status: 200}
	v.scrapes++
	if err := sim.WriteMetrics(&v.page, v.eng.Stats(), v.cfg); err != nil {
		s.OK, s.Status, s.Error = false, 0, err.Error()
	} else if rd, err := v.parser.Parse(&v.page, "vllm"); err != nil {
		s.OK, s.Error = false, err.Error()
	} else {
		s.Reading = rd
	}
	v.emit(results.SampleRecord(&s), len(v.inflight))
	v.nextScrape = at + v.scrapeEvery
}
