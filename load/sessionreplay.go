package load

import (
	"fmt"
	"math"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// SessionReplay is a session stage replaying a sessions trace
// (load.stages[].session.trace): session n starts at its first turn's
// offset divided by the speed-up, and its turn k+1 is sent at its own
// offset, or as soon as the reply to turn k ended if that is later (a
// user does not speak before the answer; the recorded gap is the least
// think time). Each turn sends the prompt its trace line describes (its
// hash-id blocks, the same text wherever an id recurs, so the history it
// shares with earlier turns is served from the server's prefix cache as
// recorded) and asks for its recorded output length. A turn that does not
// complete ok ends its session. max_concurrency caps the sessions in
// flight: an arrival beyond it is dropped (its first turn recorded, never
// sent) or queued (overflow: queue). Sessions are numbered by their order
// of first appearance in the trace, from 1, whatever the shard: a shard
// replays the sessions n ≡ Index (mod Count).
type SessionReplay struct {
	base
	sessions []scenario.TraceSession
	speedup  float64
	began    time.Duration
	live     int // sessions in flight
	pending  bool
	queue    []int // arrivals waiting for a slot, oldest first
}

// Name implements Kind.
func (*SessionReplay) Name() string { return "sessions trace replay" }

// Describe implements Kind.
func (k *SessionReplay) Describe() string {
	tr := k.whole.Session.Trace
	s := fmt.Sprintf("sessions trace replay of %s at %g× speed, at most %d sessions in flight", tr.Path, tr.Speedup, k.st.MaxConcurrency)
	if k.st.Overflow == scenario.OverflowQueue {
		s += " (more wait client-side, oldest first)"
	}
	if n := k.whole.Session.Sessions; n > 0 {
		s += fmt.Sprintf(", the first %d sessions", n)
	}
	if k.whole.Duration > 0 {
		s += ", starting for " + k.whole.Duration.String()
	}
	return s
}

// Validate implements Kind: a replay runs under every driver.
func (*SessionReplay) Validate(Caps) error { return nil }

func (k *SessionReplay) exhausted() bool { return !k.pending && len(k.queue) == 0 && k.live == 0 }

func (k *SessionReplay) start(s *stageRun) {
	k.began = s.start
	k.sessions = k.t.p.SessionTrace(k.idx)
	k.speedup = k.whole.Session.Trace.Speedup
	k.schedule(s, k.t.shard.Index)
}

// at is a trace offset divided by the speed-up.
func (k *SessionReplay) at(d time.Duration) time.Duration {
	return time.Duration(math.Round(float64(d) / k.speedup))
}

// schedule sets session n's arrival, unless the trace or the stage's
// bounds end before it.
func (k *SessionReplay) schedule(s *stageRun, n int) {
	bound := k.whole.Session.Sessions
	if n >= len(k.sessions) || (bound > 0 && n >= bound) {
		k.pending = false
		return
	}
	off := k.at(k.sessions[n].Start())
	if d := k.whole.Duration.D(); d > 0 && off >= d {
		k.pending = false
		return
	}
	k.pending = true
	s.at(k.began+off, func(now time.Duration) {
		switch {
		case k.live < k.st.MaxConcurrency && len(k.queue) == 0:
			k.begin(s, n)
		case k.st.Overflow == scenario.OverflowQueue:
			k.queue = append(k.queue, n)
		default:
			r := &Request{Seq: s.l.claim(), Stage: k.idx, Warmup: k.warm(n), Scheduled: k.began + off, Session: uint64(n) + 1, Turn: 1}
			s.l.drop(r)
		}
		k.schedule(s, n+int(k.t.step))
	})
}

// warm reports whether session n started within the warmup.
func (k *SessionReplay) warm(n int) bool {
	return k.at(k.sessions[n].Start()) < k.whole.Warmup.Duration.D()
}

// begin starts session n's first turn.
func (k *SessionReplay) begin(s *stageRun, n int) {
	k.live++
	k.send(s, n, 0, k.began+k.at(k.sessions[n].Start()))
}

// send sends turn t of session n, scheduled at sched.
func (k *SessionReplay) send(s *stageRun, n, t int, sched time.Duration) {
	ts := &k.sessions[n]
	rec := &ts.Turns[t]
	r := &Request{Seq: s.l.claim(), Stage: k.idx, Warmup: k.warm(n), Scheduled: sched, Session: uint64(n) + 1, Turn: t + 1,
		SessionEnd: t == len(ts.Turns)-1, replay: &replayTurn{session: n, turn: t}}
	seq := r.Seq
	r.build = func() Content {
		p := k.t.p.TraceAt(rec, seq)
		return Content{Prompt: p.Text, InputTokens: p.InputTokens, MaxTokens: p.OutputTokens, Exact: true}
	}
	s.l.send(r)
}

// replayTurn places a request in a sessions trace.
type replayTurn struct{ session, turn int }

func (k *SessionReplay) done(s *stageRun, now time.Duration, r *Request, res *results.Result, _ Reply) {
	n, t := r.replay.session, r.replay.turn
	turns := k.sessions[n].Turns
	if res.Outcome == results.OK && t+1 < len(turns) {
		at := max(now, k.began+k.at(turns[t+1].At))
		if at <= now {
			k.send(s, n, t+1, now)
			return
		}
		s.at(at, func(now time.Duration) { k.send(s, n, t+1, at) })
		return
	}
	k.live--
	for len(k.queue) > 0 && k.live < k.st.MaxConcurrency {
		q := k.queue[0]
		k.queue = k.queue[1:]
		k.begin(s, q)
	}
}

// abandon records the queued sessions of a stopped load as canceled.
func (k *SessionReplay) abandon(l *Load, cause error) {
	for _, n := range k.queue {
		l.cancelQueued(&Request{Seq: l.claim(), Stage: k.idx, Warmup: k.warm(n), Scheduled: k.began + k.at(k.sessions[n].Start()),
			Session: uint64(n) + 1, Turn: 1}, k.t, cause)
	}
	k.queue = nil
}
