package load

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// Sessions is a session stage (load.stages[].session): agent-like
// sessions, each a program drawn from the spec for its session number
// (scenario.Prompts.SessionTurn), held open at a count (concurrency: each
// slot starts its next session when one ends) or started at a rate
// (an open loop whose max_concurrency caps the sessions in flight).
//
// A session's requests carry its whole history: the system message, each
// user message, every reply actually received, the assistant's tool calls
// (the session's own: ids call_S_A_R_K, the tool "tool" or, for a
// sub-agent, "task", arguments "{}") with the reply's text as the calling
// message's content, and each tool's result. A sub-agent starts from its
// parent's history up to the calling message and its last reply comes
// back as that call's result; the parent waits for all of them. A request
// that does not complete ok ends its session: nothing more of it is sent
// (its sub-agents in flight still finish). InputTokens counts the
// messages' texts, tool-call arguments included, under the scenario's
// tokenizer (a reply's under the server's count when there is none), and
// the system message when the session sets it.
//
// Records: Session numbers the session from 1, Agent is 0 for the
// session's own requests and k for its k-th sub-agent's, Turn counts the
// agent's requests from 1 (user turns, tool rounds, fan-outs and
// compactions alike), and the session's last request is flagged
// SessionEnd.
type Sessions struct {
	base
	spec   *scenario.SessionSpec
	open   bool
	system string // the shared system message; "" leaves request.system
	args   int    // tokens of a tool call's arguments

	began   time.Duration
	started int // sessions started by this shard
	slots   int // closed: slots that may start another session
	live    int // sessions in flight

	sched   schedule // open loop
	pending bool
	queue   []*session // open loop, overflow queue: arrivals waiting for a slot
}

// session is one session in flight.
type session struct {
	key       uint64        // its number from 0 (strided by the shard count)
	arrived   time.Duration // when it arrived (its first request's Scheduled)
	warm      bool
	main      *agent
	holds     int // requests in flight and timers set
	failed    bool
	subagents int // sub-agents started so far
}

// agent is the session itself (id 0) or one of its sub-agents.
type agent struct {
	s        *session
	id       int
	parent   *agent
	slot     int // a sub-agent's place among its parent's calls
	turns    int
	turn     int // the current user turn, from 0
	plan     scenario.SessionTurn
	round    int // the turn's next request: a tool round, the fan-out, then the final reply
	compact  bool
	history  []Message
	tokens   int // the history's tokens
	reqs     int
	children int      // sub-agents still working
	results  []Reply  // their last replies, by slot
	last     Reply    // the agent's last final reply
	calls    []string // the ids of the calls of the last calling message
}

// Name implements Kind.
func (*Sessions) Name() string { return "sessions" }

// Describe implements Kind.
func (k *Sessions) Describe() string {
	s := k.spec
	var b strings.Builder
	if k.open {
		fmt.Fprintf(&b, "sessions, %s arrivals at %g sessions/s, at most %d in flight", k.st.Arrival, k.st.RatePerSec, k.st.MaxConcurrency)
		if k.st.Overflow == scenario.OverflowQueue {
			b.WriteString(" (more wait client-side, oldest first)")
		}
	} else {
		fmt.Fprintf(&b, "sessions, %d held open at once", k.st.Concurrency)
	}
	fmt.Fprintf(&b, ", %s turns of %s-token messages and %s-token replies", s.Turns, s.UserTokens, s.ReplyTokens)
	if t := s.Tools; t != nil {
		mode := "sequential"
		if t.Parallel {
			mode = "parallel"
		}
		fmt.Fprintf(&b, ", %s %s tool calls per turn with %s-token results", t.Calls, mode, t.ResultTokens)
	}
	if a := s.Subagents; a != nil {
		fmt.Fprintf(&b, ", %s sub-agents every %d turns", a.Count, a.Every)
	}
	if c := s.Compaction; c != nil {
		fmt.Fprintf(&b, ", compacted to %d tokens past %d", c.SummaryTokens, c.ThresholdTokens)
	}
	if s.ThinkTime > 0 {
		fmt.Fprintf(&b, ", thinking %s between turns", s.ThinkTime)
	}
	var bounds []string
	if n := k.st.Session.Sessions; n > 0 {
		bounds = append(bounds, fmt.Sprintf("%d sessions", n))
	}
	if k.whole.Duration > 0 {
		bounds = append(bounds, "starting for "+k.whole.Duration.String())
	}
	return b.String() + ", " + strings.Join(bounds, ", ")
}

// Validate implements Kind: a session needs each reply's text.
func (k *Sessions) Validate(caps Caps) error {
	if !caps.Replies {
		return k.sc.FieldError(fmt.Sprintf("load.stages[%d].session", k.idx), "needs the replies' text, which this driver does not return")
	}
	return nil
}

func (k *Sessions) exhausted() bool {
	if k.open {
		return !k.pending && len(k.queue) == 0 && k.live == 0
	}
	return k.slots == 0
}

func (k *Sessions) start(s *stageRun) {
	k.began = s.start
	if n := k.spec.SystemTokens; n > 0 {
		k.system = k.t.p.Text(scenario.TextID(scenario.TextSystem), n)
	}
	k.args = 1
	if tok := k.t.p.Tokenizer(); tok != nil {
		k.args = tok.Count(toolArguments)
	}
	if !k.open {
		k.slots = k.st.Concurrency
		for range k.st.Concurrency {
			k.next(s, s.start)
		}
		return
	}
	st := *k.whole
	st.Requests = k.spec.Sessions // the schedule counts sessions
	if k.whole.Session.Sessions == 0 {
		st.Requests = 0
	}
	k.sched = scenario.NewSchedule(&st, k.sc.ArrivalSeed(k.idx))
	k.schedule(s, uint64(k.t.shard.Index))
}

// bounded reports whether the stage may start no more sessions at now.
func (k *Sessions) bounded(now time.Duration) bool {
	n := k.st.Session.Sessions
	return (n > 0 && k.started >= n) || (k.whole.Duration > 0 && now-k.began >= k.whole.Duration.D())
}

// next starts a closed-loop slot's next session, or retires the slot.
func (k *Sessions) next(s *stageRun, now time.Duration) {
	if k.bounded(now) {
		k.slots--
		return
	}
	k.begin(s, now, k.newSession(s, now))
}

// newSession numbers a new session at now.
func (k *Sessions) newSession(s *stageRun, now time.Duration) *session {
	ss := &session{key: s.l.session, arrived: now, warm: now-k.began < k.whole.Warmup.Duration.D()}
	s.l.session += s.l.step
	k.started++
	return ss
}

// begin starts session ss at now.
func (k *Sessions) begin(s *stageRun, now time.Duration, ss *session) {
	k.live++
	ss.main = &agent{s: ss, turns: k.t.p.SessionTurns(k.spec, ss.key)}
	k.startTurn(s, now, ss.main)
}

// schedule sets the open loop's arrival n, unless the stage's bounds end
// before it.
func (k *Sessions) schedule(s *stageRun, n uint64) {
	if _, stop := k.sched.Next(0, n); stop {
		k.pending = false
		return
	}
	k.pending = true
	at := k.began + k.sched.Offset(n)
	s.at(at, func(now time.Duration) { k.arrive(s, n, at) })
}

// arrive starts arrival n's session, or queues or drops it when
// max_concurrency sessions are in flight.
func (k *Sessions) arrive(s *stageRun, n uint64, at time.Duration) {
	ss := k.newSession(s, at)
	switch {
	case k.live < k.st.MaxConcurrency && len(k.queue) == 0:
		k.begin(s, at, ss)
	case k.st.Overflow == scenario.OverflowQueue:
		k.queue = append(k.queue, ss)
	default:
		r := &Request{Seq: s.l.claim(), Stage: k.idx, Warmup: ss.warm, Scheduled: at, Session: ss.key + 1, Turn: 1}
		s.l.drop(r)
	}
	k.schedule(s, n+k.t.step)
}

// startTurn begins agent a's next user turn at now (compacting the
// session's history first when it has grown past the threshold).
func (k *Sessions) startTurn(s *stageRun, now time.Duration, a *agent) {
	if c := k.spec.Compaction; c != nil && a.id == 0 && a.turn > 0 && !a.compact && a.tokens >= c.ThresholdTokens {
		a.compact = true
		a.history = append(slices.Clip(a.history), Message{Role: "user", Content: k.t.p.Text(scenario.TextID(scenario.TextCompaction), scenario.CompactionTokens)})
		a.tokens += scenario.CompactionTokens
		k.send(s, now, a, c.SummaryTokens, false)
		return
	}
	a.compact = false
	a.plan = k.t.p.SessionTurn(k.spec, a.s.key, a.id, a.turn)
	a.round = 0
	a.history = append(a.history, Message{Role: "user", Content: k.t.p.Text(scenario.TextID(scenario.TextUser, a.s.key, uint64(a.id), uint64(a.turn)), a.plan.UserTokens)})
	a.tokens += a.plan.UserTokens
	k.step(s, now, a)
}

// step sends agent a's next request of its turn: a tool round, the
// fan-out, or the final reply.
func (k *Sessions) step(s *stageRun, now time.Duration, a *agent) {
	p := &a.plan
	switch {
	case a.round < len(p.Rounds) || (a.round == len(p.Rounds) && p.Subagents > 0):
		k.send(s, now, a, p.CallTokens[a.round], false)
	default:
		k.send(s, now, a, p.ReplyTokens, a.id == 0 && a.turn == a.turns-1)
	}
}

// send sends agent a's history as a request asking maxTokens of output.
func (k *Sessions) send(s *stageRun, now time.Duration, a *agent, maxTokens int, last bool) {
	a.reqs++
	ss := a.s
	if a.id == 0 && a.reqs == 1 {
		now = ss.arrived // a queued session's wait is its first request's lag
	}
	r := &Request{Seq: s.l.claim(), Stage: k.idx, Warmup: ss.warm, Scheduled: now, Session: ss.key + 1, Turn: a.reqs,
		Agent: a.id, SessionEnd: last, reply: true, agent: a}
	history, tokens, system := a.history, a.tokens, k.system
	if system != "" {
		tokens += k.spec.SystemTokens
	}
	r.build = func() Content {
		return Content{System: system, History: history, InputTokens: tokens, MaxTokens: maxTokens}
	}
	ss.holds++
	s.l.send(r)
}

func (k *Sessions) done(s *stageRun, now time.Duration, r *Request, res *results.Result, reply Reply) {
	a := r.agent
	ss := a.s
	if res.Outcome != results.OK {
		ss.failed = true
	}
	if !ss.failed {
		k.answered(s, now, a, reply)
	}
	k.release(s, now, ss)
}

// answered goes on with agent a after the reply to its last request.
func (k *Sessions) answered(s *stageRun, now time.Duration, a *agent, reply Reply) {
	if a.compact {
		a.history = []Message{a.history[len(a.history)-1], {Role: "assistant", Content: reply.Text}}
		a.tokens = scenario.CompactionTokens + reply.Tokens
		k.startTurn(s, now, a)
		return
	}
	p := &a.plan
	switch {
	case a.round < len(p.Rounds):
		n := p.Rounds[a.round]
		k.call(a, reply, n, "tool")
		lens, req := p.ResultTokens[a.round], uint64(a.reqs)
		a.round++
		k.after(s, now+k.spec.Tools.Latency.D(), a.s, func(now time.Duration) {
			for i, id := range a.calls {
				text := k.t.p.Text(scenario.TextID(scenario.TextResult, a.s.key, uint64(a.id), req, uint64(i)), lens[i])
				a.history = append(a.history, Message{Role: "tool", Content: text, ToolCallID: id})
				a.tokens += lens[i]
			}
			k.step(s, now, a)
		})
	case a.round == len(p.Rounds) && p.Subagents > 0:
		k.call(a, reply, p.Subagents, "task")
		a.round++
		k.fanOut(s, now, a)
	default:
		a.history = append(a.history, Message{Role: "assistant", Content: reply.Text})
		a.tokens += reply.Tokens
		a.last = reply
		a.turn++
		k.turnDone(s, now, a)
	}
}

// call appends agent a's calling message: the reply's text and n calls
// of tool name.
func (k *Sessions) call(a *agent, reply Reply, n int, name string) {
	m := Message{Role: "assistant", Content: reply.Text, ToolCalls: make([]ToolCall, n)}
	a.calls = a.calls[:0]
	for i := range n {
		id := fmt.Sprintf("call_%d_%d_%d_%d", a.s.key+1, a.id, a.reqs, i)
		m.ToolCalls[i] = ToolCall{ID: id, Name: name, Arguments: toolArguments}
		a.calls = append(a.calls, id)
	}
	a.history = append(a.history, m)
	a.tokens += reply.Tokens + n*k.args
}

// toolArguments are the arguments of every tool call a session makes.
const toolArguments = "{}"

// fanOut starts the sub-agents of agent a's turn at now.
func (k *Sessions) fanOut(s *stageRun, now time.Duration, a *agent) {
	p := &a.plan
	a.children = p.Subagents
	a.results = make([]Reply, p.Subagents)
	for i := range p.Subagents {
		a.s.subagents++
		c := &agent{s: a.s, id: a.s.subagents, parent: a, slot: i, turns: p.SubagentTurns[i],
			history: slices.Clip(a.history), tokens: a.tokens}
		k.startTurn(s, now, c)
	}
}

// turnDone goes on after agent a's turn ended with its reply at now: its
// next turn (after the think time, for the session itself), or the end
// of a sub-agent (its parent goes on once all answered) or of the
// session.
func (k *Sessions) turnDone(s *stageRun, now time.Duration, a *agent) {
	if a.turn < a.turns {
		if a.id > 0 || k.spec.ThinkTime <= 0 {
			k.startTurn(s, now, a)
			return
		}
		k.after(s, now+k.spec.ThinkTime.D(), a.s, func(now time.Duration) { k.startTurn(s, now, a) })
		return
	}
	p := a.parent
	if p == nil {
		return // the session ends when its holds are released
	}
	p.results[a.slot] = a.last
	if p.children--; p.children > 0 {
		return
	}
	for i, id := range p.calls {
		p.history = append(p.history, Message{Role: "tool", Content: p.results[i].Text, ToolCallID: id})
		p.tokens += p.results[i].Tokens
	}
	k.step(s, now, p)
}

// after runs fn at t for session ss, holding the session open until then.
func (k *Sessions) after(s *stageRun, t time.Duration, ss *session, fn func(now time.Duration)) {
	ss.holds++
	s.at(t, func(now time.Duration) {
		if !ss.failed {
			fn(now)
		}
		k.release(s, now, ss)
	})
}

// release drops one hold of session ss; the session ends when none is
// left, and its slot starts the next one (or takes a queued arrival).
func (k *Sessions) release(s *stageRun, now time.Duration, ss *session) {
	if ss.holds--; ss.holds > 0 {
		return
	}
	k.live--
	if !k.open {
		k.next(s, now)
		return
	}
	for len(k.queue) > 0 && k.live < k.st.MaxConcurrency {
		q := k.queue[0]
		k.queue[0] = nil
		k.queue = k.queue[1:]
		k.begin(s, now, q)
	}
}

// abandon records the sessions queued by a stopped open loop as
// canceled: they were never started.
func (k *Sessions) abandon(l *Load, cause error) {
	for _, ss := range k.queue {
		l.cancelQueued(&Request{Seq: l.claim(), Stage: k.idx, Warmup: ss.warm, Scheduled: ss.arrived, Session: ss.key + 1, Turn: 1}, k.t, cause)
	}
	k.queue = nil
}

// cancelQueued records r, the first turn of a session still queued on the
// client when the load stopped, as canceled: it was never started.
func (l *Load) cancelQueued(r *Request, t *template, cause error) {
	res := results.Result{Outcome: results.Canceled, ErrorClass: results.ErrCanceled,
		Error: "session canceled in the client-side queue, never started: " + cause.Error()}
	r.fill(&res, t)
	l.c.canceled.Add(1)
	l.c.done.Add(1)
	l.opts.Emit(res)
}
