package run

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/tokenizer"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/sim"
)

// sessionOracle replays a session stage's programs from the spec alone,
// one request at a time, and looks each request it expects up among
// those a recording proxy saw: the replies it feeds back are the ones
// the proxy saw stream back for the request it expected before. It is
// written as plain sequential code, apart from package load's
// event-driven one, so that the two agree only if both follow the spec.
type sessionOracle struct {
	t       *testing.T
	p       *scenario.Prompts
	tok     *tokenizer.Tokenizer
	spec    *scenario.SessionSpec
	system  message
	seen    map[string]exchange
	used    map[string]bool
	counted struct{ compactions, fanOuts, subRequests, parallel, requests int }
}

// ask returns the reply to the request of msgs, which the proxy must have
// seen with max_tokens maxTokens.
func (o *sessionOracle) ask(msgs []message, maxTokens int, what string) string {
	o.t.Helper()
	all := append([]message{o.system}, msgs...)
	k := key(all)
	e, ok := o.seen[k]
	if !ok {
		o.t.Fatalf("%s: no request carried the history the spec implies (%d messages, the last %+v)", what, len(all), all[len(all)-1])
	}
	if o.used[k] {
		o.t.Fatalf("%s: the same history twice", what)
	}
	if e.maxTokens != maxTokens {
		o.t.Errorf("%s: max_tokens %d, the spec says %d", what, e.maxTokens, maxTokens)
	}
	o.used[k] = true
	o.counted.requests++
	return e.reply
}

// calls is an assistant message with the reply's text calling n tools.
func calls(reply string, session uint64, agent, req, n int, name string) message {
	m := message{Role: "assistant", Content: reply}
	for i := range n {
		c := toolCall{ID: fmt.Sprintf("call_%d_%d_%d_%d", session+1, agent, req, i), Type: "function"}
		c.Function.Name, c.Function.Arguments = name, "{}"
		m.ToolCalls = append(m.ToolCalls, c)
	}
	return m
}

// agent runs agent id of session key from history hist (tokens long),
// for turns user turns, and returns its last reply. next numbers the
// session's sub-agents.
func (o *sessionOracle) agent(key uint64, id, turns int, hist []message, tokens int, next *int) string {
	s := o.spec
	req, last := 0, ""
	for turn := range turns {
		what := fmt.Sprintf("session %d agent %d turn %d", key+1, id, turn+1)
		if c := s.Compaction; c != nil && id == 0 && turn > 0 && tokens >= c.ThresholdTokens {
			ask := message{Role: "user", Content: o.p.Text(scenario.TextID(scenario.TextCompaction), scenario.CompactionTokens)}
			sum := o.ask(append(slices.Clip(hist), ask), c.SummaryTokens, what+" compaction")
			req++
			hist = []message{ask, {Role: "assistant", Content: sum}}
			tokens = scenario.CompactionTokens + o.tok.Count(sum)
			o.counted.compactions++
		}
		plan := o.p.SessionTurn(s, key, id, turn)
		hist = append(hist, message{Role: "user", Content: o.p.Text(scenario.TextID(scenario.TextUser, key, uint64(id), uint64(turn)), plan.UserTokens)})
		tokens += plan.UserTokens
		for r, n := range plan.Rounds {
			reply := o.ask(hist, plan.CallTokens[r], fmt.Sprintf("%s round %d", what, r+1))
			req++
			if n > 1 {
				o.counted.parallel++
			}
			m := calls(reply, key, id, req, n, "tool")
			hist = append(hist, m)
			tokens += o.tok.Count(reply) + n*o.tok.Count("{}")
			for i, c := range m.ToolCalls {
				text := o.p.Text(scenario.TextID(scenario.TextResult, key, uint64(id), uint64(req), uint64(i)), plan.ResultTokens[r][i])
				hist = append(hist, message{Role: "tool", Content: text, ToolCallID: c.ID})
				tokens += plan.ResultTokens[r][i]
			}
		}
		if plan.Subagents > 0 {
			reply := o.ask(hist, plan.CallTokens[len(plan.Rounds)], what+" fan-out")
			req++
			m := calls(reply, key, id, req, plan.Subagents, "task")
			hist = append(hist, m)
			tokens += o.tok.Count(reply) + plan.Subagents*o.tok.Count("{}")
			o.counted.fanOuts++
			before := o.counted.requests
			answers := make([]string, plan.Subagents)
			ids := make([]int, plan.Subagents)
			for j := range answers {
				*next++
				ids[j] = *next
			}
			for j := range answers {
				// The sub-agent starts from the parent's history,
				// its calling message included.
				answers[j] = o.agent(key, ids[j], plan.SubagentTurns[j], slices.Clip(hist), tokens, nil)
			}
			o.counted.subRequests += o.counted.requests - before
			for j, c := range m.ToolCalls {
				hist = append(hist, message{Role: "tool", Content: answers[j], ToolCallID: c.ID})
				tokens += o.tok.Count(answers[j])
			}
		}
		last = o.ask(hist, plan.ReplyTokens, what+" reply")
		req++
		hist = append(hist, message{Role: "assistant", Content: last})
		tokens += o.tok.Count(last)
	}
	return last
}

// TestSessionHistory is issue 24's proof that a session stage sends what
// its spec implies: scenarios/agentic.yaml (tool loops with parallel
// calls, sub-agent fan-outs, compaction) runs against the simulator
// through a recording proxy, and an independent replay of every
// session's program from the spec finds each request it expects, with
// exactly its history (the shared system message, the replies that
// streamed back, the tool calls and results, a sub-agent's parent
// prefix, the compacted summary) and its max_tokens, and no other.
func TestSessionHistory(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Load("../scenarios/agentic.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := sim.ConfigFromURL(sc.Target.URL)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sim.Listen(t.Context(), "127.0.0.1:0", cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	proxy := newRecordingProxy(t, srv.URL())
	if err := sc.Override("target.url="+proxy.URL+"/v1", "scrape.enabled=false"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum, err := Run(t.Context(), sc, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	recs := readResults(t, dir)
	checkSessionFigures(t, sum.Stages[0].Sessions, recs, sc.SLO.TTFTMs)

	proxy.mu.Lock()
	seen := map[string]exchange{}
	for _, e := range proxy.seen {
		if len(e.messages) > 0 {
			seen[key(e.messages)] = e
		}
	}
	proxy.mu.Unlock()
	p, err := scenario.NewPrompts(t.Context(), sc)
	if err != nil {
		t.Fatal(err)
	}
	spec := sc.Load.Stages[0].Session
	o := &sessionOracle{t: t, p: p, tok: p.Tokenizer(), spec: spec, seen: seen, used: map[string]bool{},
		system: message{Role: "system", Content: p.Text(scenario.TextID(scenario.TextSystem), spec.SystemTokens)}}
	for key := range uint64(spec.Sessions) {
		next := 0
		o.agent(key, 0, p.SessionTurns(spec, key), nil, 0, &next)
	}
	if len(o.used) != len(seen) || o.counted.requests != len(recs) {
		t.Errorf("the spec implies %d requests; the proxy saw %d distinct ones and the run recorded %d", o.counted.requests, len(seen), len(recs))
	}
	c := o.counted
	if c.compactions == 0 || c.fanOuts == 0 || c.subRequests == 0 || c.parallel == 0 {
		t.Errorf("the scenario should exercise every part of a program: %+v", c)
	}
	t.Logf("%d requests: %d compactions, %d fan-outs (%d sub-agent requests), %d parallel tool rounds", c.requests, c.compactions, c.fanOuts, c.subRequests, c.parallel)
	ends := 0
	for _, r := range recs {
		if r.Outcome != results.OK {
			t.Errorf("seq %d: %s %s", r.Seq, r.Outcome, r.Error)
		}
		if r.PromptTokens != r.InputTokens {
			t.Errorf("session %d agent %d turn %d: the server counted %d prompt tokens, the load model %d", r.Session, r.Agent, r.Turn, r.PromptTokens, r.InputTokens)
		}
		if r.SessionEnd {
			ends++
		}
	}
	if ends != spec.Sessions {
		t.Errorf("%d records end a session, want %d", ends, spec.Sessions)
	}
}

// readResults returns the request records of the results file in dir.
func readResults(t *testing.T, dir string) []results.Result {
	t.Helper()
	r, err := results.Open(filepath.Join(dir, FileResults))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var recs []results.Result
	for r.Scan() {
		if res := r.Record().Result; res != nil {
			recs = append(recs, *res)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}

// checkSessionFigures checks a session stage's figures against its
// records: every session started and completed, the requests and the
// largest prompt of each, and the sessions every request of which met a
// TTFT objective of ttftMS.
func checkSessionFigures(t *testing.T, ss *report.Sessions, recs []results.Result, ttftMS float64) {
	t.Helper()
	if ss == nil {
		t.Fatal("the summary has no session figures")
	}
	type agg struct {
		n, context int
		good       bool
	}
	by := map[uint64]*agg{}
	for _, r := range recs {
		a := by[r.Session]
		if a == nil {
			a = &agg{good: true}
			by[r.Session] = a
		}
		a.n++
		a.context = max(a.context, r.PromptTokens)
		if d, _ := r.TTFT(); float64(d)/1e6 > ttftMS {
			a.good = false
		}
	}
	var good int64
	maxContext, requests := 0, 0
	for _, a := range by {
		requests += a.n
		maxContext = max(maxContext, a.context)
		if a.good {
			good++
		}
	}
	n := int64(len(by))
	if ss.Started != n || ss.Completed != n || ss.Failed != 0 {
		t.Errorf("sessions %+v: want %d started and completed", ss, n)
	}
	if ss.Requests == nil || ss.Requests.Count != n || math.Abs(ss.Requests.Mean-float64(requests)/float64(n)) > 0.001 {
		t.Errorf("requests per session %+v: want %d sessions, mean %.3f", ss.Requests, n, float64(requests)/float64(n))
	}
	if ss.Context == nil || ss.Context.Max != int64(maxContext) {
		t.Errorf("context reached %+v: want the largest prompt, %d", ss.Context, maxContext)
	}
	if ss.Good == nil || *ss.Good != good || ss.GoodPerSec == nil || *ss.GoodPerSec > ss.CompletedPerSec {
		t.Errorf("good sessions %v (%v/s): want %d, at most the %g completed per second", ss.Good, ss.GoodPerSec, good, ss.CompletedPerSec)
	}
	if ss.Duration.Count != n || ss.Duration.P50 <= 0 || ss.CompletedPerSec <= 0 {
		t.Errorf("durations %+v, %g sessions/s", ss.Duration, ss.CompletedPerSec)
	}
	t.Logf("%d sessions, %d good; %.3g/s; duration p50 %.0f ms; context max %d", n, good, ss.CompletedPerSec, ss.Duration.P50, maxContext)
}

// TestSessionContextLimit: a session whose history outgrows the server's
// max_model_len is refused as vLLM refuses it (HTTP 400, "This model's
// maximum context length is …"), under both drivers; the session ends
// there (none of its requests follows the refused one), and the summary
// counts it failed beside the sessions that completed.
func TestSessionContextLimit(t *testing.T) {
	t.Parallel()
	const doc = "name: limit\ntarget: {url: \"sim://tiny?seed=3\"}\nscrape: {enabled: false}\nprompts: {seed: 2}\n" +
		"load: {stages: [{name: s, concurrency: 2, session: {sessions: 6, turns: {dist: uniform, min: 1, max: 8}, user_tokens: 300, reply_tokens: 16}}]}\n"
	for _, virtual := range []bool{false, true} {
		sum, recs := runSimWith(t, doc, Options{Virtual: virtual})
		refused := map[uint64]int{} // session → the refused request's turn
		for _, r := range recs {
			if r.Outcome == results.Failed {
				if r.Status != 400 || !strings.Contains(r.Error, "maximum context length is 2048 tokens") {
					t.Errorf("virtual %v: session %d turn %d failed with %d %q", virtual, r.Session, r.Turn, r.Status, r.Error)
				}
				refused[r.Session] = r.Turn
			}
		}
		for _, r := range recs {
			if k, ok := refused[r.Session]; ok && r.Turn > k {
				t.Errorf("virtual %v: session %d sent turn %d after turn %d was refused", virtual, r.Session, r.Turn, k)
			}
		}
		ss := sum.Stages[0].Sessions
		if len(refused) == 0 || ss == nil || ss.Failed != int64(len(refused)) || ss.Completed != 6-ss.Failed {
			t.Errorf("virtual %v: %d sessions refused; figures %+v", virtual, len(refused), ss)
		}
	}
}

// TestSessionTraceShards replays scenarios/sessions-replay.yaml's trace
// as two shards against the simulator: each shard replays whole sessions
// (session n on shard (n−1) mod 2), the two together replay every
// session's every turn once, and every turn waits for its recorded
// offset (divided by the speed-up) and for the reply to the turn before.
func TestSessionTraceShards(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Load("../scenarios/sessions-replay.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Override("load.stages[0].session.trace.speedup=8", "scrape.enabled=false"); err != nil {
		t.Fatal(err)
	}
	p, err := scenario.NewPrompts(t.Context(), sc)
	if err != nil {
		t.Fatal(err)
	}
	trace := p.SessionTrace(0)
	seen := map[[2]int]int{} // session, turn → shard
	for i := range 2 {
		dir := t.TempDir()
		if _, err := Run(t.Context(), sc, Options{Dir: dir, Shard: scenario.Shard{Index: i, Count: 2}}); err != nil {
			t.Fatal(err)
		}
		recs := readResults(t, dir)
		slices.SortFunc(recs, func(a, b results.Result) int { return int(a.Seq) - int(b.Seq) })
		start := recs[0].Scheduled - trace[int(recs[0].Session)-1].Start()/8
		ends := map[uint64]time.Duration{}
		for _, r := range recs {
			n := int(r.Session) - 1
			if r.Outcome != results.OK || (n%2) != i {
				t.Errorf("shard %d: session %d turn %d: %s", i, r.Session, r.Turn, r.Outcome)
				continue
			}
			seen[[2]int{n, r.Turn}]++
			rec := trace[n].Turns[r.Turn-1]
			if due := start + rec.At/8; r.Sent < due-time.Millisecond {
				t.Errorf("session %d turn %d sent %v before its recorded offset %v", r.Session, r.Turn, r.Sent-start, due-start)
			}
			if r.Turn > 1 && r.Sent < ends[r.Session] {
				t.Errorf("session %d turn %d sent before the reply to turn %d ended", r.Session, r.Turn, r.Turn-1)
			}
			if r.InputTokens != rec.InputTokens || r.MaxTokens != rec.OutputTokens || r.SessionEnd != (r.Turn == len(trace[n].Turns)) {
				t.Errorf("session %d turn %d: %d tokens asking %d (end %v); the trace says %d and %d", r.Session, r.Turn, r.InputTokens, r.MaxTokens, r.SessionEnd, rec.InputTokens, rec.OutputTokens)
			}
			ends[r.Session] = r.End
		}
	}
	want := 0
	for _, s := range trace {
		want += len(s.Turns)
	}
	if len(seen) != want {
		t.Errorf("the shards replayed %d distinct turns, the trace has %d", len(seen), want)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("session %d turn %d replayed %d times", k[0]+1, k[1], n)
		}
	}
}
