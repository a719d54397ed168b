package scenario

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/servebench/servebench/results"
)

// SessionSpec makes a stage's load agent-like sessions (Stage.Session):
// each session is a program drawn from this spec, a pure function of the
// prompt seed and the session's number. A session runs its user turns in
// order; a turn is the user's message, the tool rounds the spec draws
// for it (the assistant calls tools, the results come back), an optional
// fan-out of sub-agents, and the assistant's final reply. Every request
// carries the session's whole history as the server would see it from an
// agent: its system message, the user's messages, the replies actually
// received, the assistant's tool calls and the tools' results.
//
// A closed-loop session stage (concurrency) holds that many sessions open
// at once, each slot starting its next session when one ends; an
// open-loop one (rate) starts sessions at the rate, and max_concurrency
// caps the sessions in flight. Sessions and duration bound it: no session
// starts after either is reached, and the sessions started run to their
// end (within load.max_duration).
type SessionSpec struct {
	// Sessions is how many sessions the stage starts; 0 leaves it to the
	// stage's duration.
	Sessions int `yaml:"sessions" json:"sessions,omitempty"`
	// Turns is the number of user turns of a session (required).
	Turns *Dist `yaml:"turns" json:"turns"`
	// SystemTokens is the length of the system message every session
	// starts with: the same text in every session (an agent's
	// instructions and tool definitions), so a server's prefix cache can
	// share it. 0 sends request.system, if any.
	SystemTokens int `yaml:"system_tokens" json:"system_tokens,omitempty"`
	// UserTokens is the length of each user message (required).
	UserTokens *Dist `yaml:"user_tokens" json:"user_tokens"`
	// ReplyTokens is the length of each final reply of a turn, asked as
	// max_tokens (exact with request.ignore_eos; required).
	ReplyTokens *Dist `yaml:"reply_tokens" json:"reply_tokens"`
	// ThinkTime is the user's pause between a reply and their next
	// message (0: none).
	ThinkTime Duration `yaml:"think_time" json:"think_time,omitzero"`
	// Tools, when set, makes turns call tools before they answer.
	Tools *SessionTools `yaml:"tools" json:"tools,omitempty"`
	// Subagents, when set, makes some turns fan out to sub-agents.
	Subagents *Subagents `yaml:"subagents" json:"subagents,omitempty"`
	// Compaction, when set, replaces a long history with a summary.
	Compaction *Compaction `yaml:"compaction" json:"compaction,omitempty"`
	// Trace, when set, replays a sessions trace (see TraceSession for its
	// format) instead of drawing sessions: each session starts at its
	// first turn's timestamp divided by the speed-up, and each later turn
	// at its own, or once the reply to the turn before it ended if that is
	// later. The fields above do not apply; the stage is an open loop
	// whose max_concurrency caps the sessions in flight.
	Trace *TraceSpec `yaml:"trace" json:"trace,omitempty"`
}

// SessionTools are the tool calls of a session's turns. A tool round is a
// request whose reply is an assistant message calling tools (its content
// is the reply received, its tool calls the session's own); the tools'
// results follow it as tool messages, after Latency, and the next request
// carries them.
type SessionTools struct {
	// Calls is the number of tool calls per turn (0 allowed).
	Calls *Dist `yaml:"calls" json:"calls"`
	// Parallel puts all of a turn's calls in one assistant message (one
	// round); false calls them one after another (a round each).
	Parallel bool `yaml:"parallel" json:"parallel,omitempty"`
	// CallTokens is the length of a calling reply, asked as max_tokens
	// (default 16).
	CallTokens *Dist `yaml:"call_tokens" json:"call_tokens,omitempty"`
	// ResultTokens is the length of each tool result (required).
	ResultTokens *Dist `yaml:"result_tokens" json:"result_tokens"`
	// Latency is how long a round's tools run before their results come
	// back (0: at once).
	Latency Duration `yaml:"latency" json:"latency,omitzero"`
}

// Subagents fan a turn out: after its tool rounds, the assistant calls
// Count sub-agents at once (one "task" tool call each). Each sub-agent
// is a session of its own turns (with the turn's tools, without
// sub-agents or compaction) whose history starts with its parent's,
// up to and including that calling message: it shares the parent's
// prefix. The parent goes on once every sub-agent answered, with each
// sub-agent's last reply as the result of its call.
type Subagents struct {
	// Every fans out every Every-th user turn (1: every turn).
	Every int `yaml:"every" json:"every"`
	// Count is the number of sub-agents per fan-out (required).
	Count *Dist `yaml:"count" json:"count"`
	// Turns is the number of user turns of a sub-agent (default 1).
	Turns *Dist `yaml:"turns" json:"turns,omitempty"`
}

// Compaction replaces a session's history with a summary once it grows
// past a threshold, as coding agents do: before a user turn whose history
// holds ThresholdTokens or more, the session sends its history and a
// fixed request to summarize it, asking SummaryTokens of output; the
// history then becomes that request and its reply.
type Compaction struct {
	ThresholdTokens int `yaml:"threshold_tokens" json:"threshold_tokens"`
	SummaryTokens   int `yaml:"summary_tokens" json:"summary_tokens"`
}

// Limits of a session program (typos rather than needs).
const (
	maxSessionCalls = 64  // tool calls per turn, sub-agents per fan-out
	maxSessions     = 1e7 // sessions per stage
)

// DefaultCallTokens is the length of a tool-calling reply when
// session.tools.call_tokens is unset.
const DefaultCallTokens = 16

// CompactionTokens is the length of the fixed message that asks for a
// summary (the same words in every session).
const CompactionTokens = 24

// sessionDefaults fills a session spec's unset fields.
func (s *SessionSpec) defaults() {
	if s == nil {
		return
	}
	for _, d := range []*Dist{s.Turns, s.UserTokens, s.ReplyTokens} {
		d.defaults()
	}
	if t := s.Tools; t != nil {
		if t.CallTokens == nil {
			t.CallTokens = &Dist{Dist: DistFixed, Value: DefaultCallTokens}
		}
		t.Calls.defaults()
		t.CallTokens.defaults()
		t.ResultTokens.defaults()
	}
	if tr := s.Trace; tr != nil && tr.Speedup == 0 {
		tr.Speedup = 1
	}
	if a := s.Subagents; a != nil {
		if a.Turns == nil {
			a.Turns = &Dist{Dist: DistFixed, Value: 1}
		}
		if a.Every == 0 {
			a.Every = 1
		}
		a.Count.defaults()
		a.Turns.defaults()
	}
}

// sessionStage checks a session stage: its load (concurrency or rate),
// its bounds and its program.
func (v *validator) sessionStage(sc *Scenario, i int) {
	st := &sc.Load.Stages[i]
	f := fmt.Sprintf("load.stages[%d]", i)
	s := st.Session
	if sc.Target.API != results.APIChat {
		v.add(f+".session", "applies to the chat API only: a session's requests carry its messages (target.api is %s)", sc.Target.API)
	}
	if sc.Prompts.Conversation != nil {
		v.add(f+".session", "a session stage draws its own turns: it cannot run with prompts.conversation")
	}
	if sc.Prompts.Dataset.Path != "" {
		v.add(f+".session", "builds its messages from the spec's lengths: it cannot use prompts.dataset")
	}
	if st.Trace != nil {
		v.add(f+".trace", "does not apply to a session stage: its sessions are drawn from session")
	}
	if st.Requests != 0 {
		v.add(f+".requests", "does not bound a session stage (it would cut sessions short): use session.sessions or duration")
	}
	if st.Warmup.Requests != 0 {
		v.add(f+".warmup.requests", "does not apply to a session stage: use warmup.duration (the sessions started within it are warmup)")
	}
	if st.Until != nil {
		v.add(f+".until", "does not apply to a session stage")
	}
	if s.Sessions < 0 || s.Sessions > maxSessions {
		v.add(f+".session.sessions", "want 0 to %d sessions, got %d", int(maxSessions), s.Sessions)
	}
	if s.Trace != nil {
		v.sessionTrace(sc, i)
		return
	}
	if s.Sessions == 0 && st.Duration == 0 {
		v.add(f, "needs a bound: session.sessions, duration or both")
	}
	v.sessionProgram(sc, f+".session", s)
}

// sessionProgram checks the program of a drawn session.
func (v *validator) sessionProgram(sc *Scenario, f string, s *SessionSpec) {
	for _, d := range []struct {
		field string
		d     *Dist
	}{{"turns", s.Turns}, {"user_tokens", s.UserTokens}, {"reply_tokens", s.ReplyTokens}} {
		if d.d == nil {
			v.add(f+"."+d.field, "is required")
			continue
		}
		if d.field == "turns" {
			v.distIn(f+".turns", d.d, 1, maxTurns, "turns")
			continue
		}
		v.dist(f+"."+d.field, d.d)
	}
	if s.SystemTokens < 0 || s.SystemTokens > maxTokens {
		v.add(f+".system_tokens", "want 0 to %d tokens, got %d", maxTokens, s.SystemTokens)
	}
	if s.SystemTokens > 0 && sc.Request.System != "" {
		v.add(f+".system_tokens", "and request.system both give the system message: keep one")
	}
	if s.ThinkTime < 0 {
		v.add(f+".think_time", "must be ≥ 0, got %s", s.ThinkTime)
	}
	if t := s.Tools; t != nil {
		switch {
		case t.Calls == nil:
			v.add(f+".tools.calls", "is required: the tool calls per turn, like 2 or {dist: uniform, min: 0, max: 4}")
		default:
			v.distIn(f+".tools.calls", t.Calls, 0, maxSessionCalls, "calls")
		}
		if t.ResultTokens == nil {
			v.add(f+".tools.result_tokens", "is required: the length of each tool result")
		} else {
			v.dist(f+".tools.result_tokens", t.ResultTokens)
		}
		if t.CallTokens != nil {
			v.dist(f+".tools.call_tokens", t.CallTokens)
		}
		if t.Latency < 0 {
			v.add(f+".tools.latency", "must be ≥ 0, got %s", t.Latency)
		}
	}
	if a := s.Subagents; a != nil {
		if a.Every < 1 || a.Every > maxTurns {
			v.add(f+".subagents.every", "want 1 to %d (1 fans out every turn), got %d", maxTurns, a.Every)
		}
		if a.Count == nil {
			v.add(f+".subagents.count", "is required: the sub-agents per fan-out")
		} else {
			v.distIn(f+".subagents.count", a.Count, 1, maxSessionCalls, "sub-agents")
		}
		if a.Turns != nil {
			v.distIn(f+".subagents.turns", a.Turns, 1, maxTurns, "turns")
		}
	}
	if c := s.Compaction; c != nil {
		if c.SummaryTokens < 1 || c.SummaryTokens > maxTokens {
			v.add(f+".compaction.summary_tokens", "want 1 to %d tokens, got %d", maxTokens, c.SummaryTokens)
		}
		if c.ThresholdTokens <= c.SummaryTokens+CompactionTokens {
			v.add(f+".compaction.threshold_tokens", "want more than the summary and its request (%d tokens), got %d: the history would be compacted before every turn",
				c.SummaryTokens+CompactionTokens, c.ThresholdTokens)
		}
	}
}

// drawN returns a count from d that may be 0 (tool calls per turn):
// Dist.draw's, without its floor of 1.
func (d *Dist) drawN(r *rand.Rand) int {
	switch d.Dist {
	case DistUniform:
		return d.Min + r.IntN(d.Max-d.Min+1)
	case DistNormal:
		x := math.Round(d.Mean + d.Stddev*r.NormFloat64())
		return int(max(float64(max(d.Min, 0)), min(float64(d.Max), x)))
	default:
		return max(d.Value, 0)
	}
}

// SessionTurn is one user turn of a session program, as SessionTurn draws it.
type SessionTurn struct {
	UserTokens  int
	ReplyTokens int
	// Rounds are the turn's tool rounds in order: each the number of
	// calls its assistant message makes.
	Rounds       []int
	CallTokens   []int // each round's reply length
	ResultTokens [][]int
	// Subagents is the number of sub-agents the turn fans out to after
	// its rounds (0: none); SubagentTurns their user turns each.
	Subagents     int
	SubagentTurns []int
}

// SessionTurns draws the number of user turns of session key.
func (p *Prompts) SessionTurns(s *SessionSpec, key uint64) int {
	return s.Turns.draw(p.sessionRand(key, 0, 0, 0xa11))
}

// SessionTurn draws turn t (from 0) of agent agent (0: the session's own;
// k ≥ 1: its k-th sub-agent, counted over the session's fan-outs in
// order) of session key: a pure function of the seed and these numbers.
// A sub-agent's turns make no fan-out.
func (p *Prompts) SessionTurn(s *SessionSpec, key uint64, agent, t int) SessionTurn {
	r := p.sessionRand(key, uint64(agent), uint64(t), 0x7a1)
	out := SessionTurn{UserTokens: s.UserTokens.draw(r), ReplyTokens: s.ReplyTokens.draw(r)}
	if tl := s.Tools; tl != nil {
		calls := tl.Calls.drawN(r)
		if tl.Parallel && calls > 0 {
			out.Rounds = []int{calls}
		} else {
			for range calls {
				out.Rounds = append(out.Rounds, 1)
			}
		}
		for _, n := range out.Rounds {
			out.CallTokens = append(out.CallTokens, tl.CallTokens.draw(r))
			res := make([]int, n)
			for i := range res {
				res[i] = tl.ResultTokens.draw(r)
			}
			out.ResultTokens = append(out.ResultTokens, res)
		}
	}
	if a := s.Subagents; a != nil && agent == 0 && (t+1)%a.Every == 0 {
		out.Subagents = a.Count.draw(r)
		for range out.Subagents {
			out.SubagentTurns = append(out.SubagentTurns, a.Turns.draw(r))
		}
		if s.Tools != nil {
			out.CallTokens = append(out.CallTokens, s.Tools.CallTokens.draw(r))
		} else {
			out.CallTokens = append(out.CallTokens, DefaultCallTokens)
		}
	}
	return out
}

func (p *Prompts) sessionRand(key, a, b, stream uint64) *rand.Rand {
	var src rand.PCG
	src.Seed(p.seed^mix(stream), mix(mix(key)^mix(a<<20|b)))
	return rand.New(&src)
}

// Text returns a text of exactly n tokens under the scenario's tokenizer
// (n single-token words of the corpus), the same for the same id and
// distinct, as far as 32-bit hashes go, for distinct ids: the messages of
// a session program and the shared prefixes of a prefix-cache workload.
func (p *Prompts) Text(id uint64, n int) string {
	var b strings.Builder
	for k := uint64(0); n > 0; k++ {
		m := min(n, TraceBlockTokens)
		p.appendBlock(&b, mix(id^mix(k+0x5e55)), m)
		n -= m
	}
	return b.String()
}

// Text ids: each kind of message draws its ids from its own space.
const (
	TextSystem uint64 = iota + 1
	TextUser
	TextResult
	TextCompaction
	TextPrefix
)

// TextID is the id of a message's text: a pure function of its kind and
// the numbers that place it (session, agent, turn, round, call).
func TextID(kind uint64, nums ...uint64) uint64 {
	h := mix(kind)
	for _, n := range nums {
		h = mix(h ^ n)
	}
	return h
}
