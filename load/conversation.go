package load

import (
	"fmt"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// Conversation is a closed-loop stage of a conversation scenario
// (prompts.conversation): each worker is a user who runs sessions one
// after another, each session's turns in order, until the stage's bounds.
//
// Turn k's request carries the session's turns 1..k−1 as history: each
// user message and the reply actually received, so a server's prefix cache
// sees the conversation grow as it would with a real user. A turn that
// does not complete ok ends its session (a user does not go on without the
// answer); the next session starts at once. The think time passes between
// a reply's end and the next turn, so the turn's Scheduled time is when
// the user sends it. InputTokens counts the history and the new message
// under the scenario's tokenizer (the system message and the chat
// template's tokens not included).
type Conversation struct {
	workers
	think time.Duration
}

// user is one worker of a conversation: the session it is in.
type user struct {
	key     uint64 // the session's key (its number from 0, strided by the shard count)
	session scenario.Session
	turn    int       // the next turn, from 0
	history []Message // the turns so far
	tokens  int       // the history's tokens
}

// Name implements Kind.
func (*Conversation) Name() string { return "conversation" }

// Describe implements Kind.
func (k *Conversation) Describe() string {
	think := ""
	if k.think > 0 {
		think = fmt.Sprintf(", thinking %s between turns", k.think)
	}
	return fmt.Sprintf("conversations, %d users each sending their next turn after the reply%s, %s", k.st.Concurrency, think, k.bounds())
}

// Validate implements Kind: a conversation needs each reply's text.
func (k *Conversation) Validate(caps Caps) error {
	if !caps.Replies {
		return k.sc.FieldError("prompts.conversation", "needs the replies' text, which this driver does not return")
	}
	return nil
}

func (k *Conversation) start(s *stageRun) {
	k.began, k.active = s.start, k.st.Concurrency
	for range k.st.Concurrency {
		u := &user{}
		k.newSession(s, u)
		k.send(s, s.start, u)
	}
}

// newSession starts u's next session.
func (k *Conversation) newSession(s *stageRun, u *user) {
	u.key = s.l.session
	s.l.session += s.l.step
	u.session = k.t.p.Session(u.key)
	u.turn, u.history, u.tokens = 0, nil, 0
}

// send sends u's next turn at now, or retires u at the stage's bounds.
func (k *Conversation) send(s *stageRun, now time.Duration, u *user) {
	r, ok := k.claim(s, now)
	if !ok {
		k.active--
		return
	}
	r.Session, r.Turn, r.reply = u.key+1, u.turn+1, true
	seq, sess, t, history, tokens := r.Seq, u.session, u.turn, u.history, u.tokens
	r.build = func() Content {
		p := k.t.p.Turn(&sess, t, seq)
		return Content{System: sess.System, History: history, Prompt: p.Text,
			InputTokens: tokens + p.InputTokens, MaxTokens: p.OutputTokens}
	}
	r.user = u
	s.l.send(r)
}

func (k *Conversation) done(s *stageRun, now time.Duration, r *Request, res *results.Result, reply Reply) {
	u := r.user
	if res.Outcome != results.OK {
		k.newSession(s, u)
		k.send(s, now, u)
		return
	}
	c := r.built
	u.history = append(u.history, Message{Role: "user", Content: c.Prompt}, Message{Role: "assistant", Content: reply.Text})
	u.tokens = c.InputTokens + reply.Tokens
	u.turn++
	if u.turn >= u.session.Turns {
		k.newSession(s, u)
		k.send(s, now, u)
		return
	}
	if k.think <= 0 {
		k.send(s, now, u)
		return
	}
	s.at(now+k.think, func(now time.Duration) { k.send(s, now, u) })
}
