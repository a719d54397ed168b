package run

import (
	"context"
	"time"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/results"
)

// replier is the capability a conversation needs of its Doer: the reply's
// text as received, for the session's next turn.
type replier interface {
	DoReply(ctx context.Context, req *client.Request) (results.Result, string)
}

var _ replier = (*client.Client)(nil)

// sessions runs one closed-loop worker of a conversation scenario: it is
// a user who runs sessions one after another, each session's turns in
// order, until claim refuses a request (the stage's bounds) or stop ends.
//
// Turn k's request carries the session's turns 1..k−1 as history: each
// user message and the reply actually received, so a server's prefix
// cache sees the conversation grow as it would with a real user. A turn
// that does not complete ok ends its session (a user does not go on
// without the answer); the next session starts at once. The think time
// passes between a reply's end and the next turn's claim, so the turn's
// Scheduled time is when the user sends it. InputTokens counts the
// history and the new message under the scenario's tokenizer (the system
// message and the chat template's tokens not included).
func (r *scheduler) sessions(stop, reqCtx context.Context, stage int,
	claim func() (seq uint64, at time.Duration, warm, ok bool), emit func(results.Result)) {
	think := r.sc.Prompts.Conversation.ThinkTime.D()
	var timer *time.Timer
	if think > 0 {
		timer = time.NewTimer(think)
		defer timer.Stop()
	}
	for stop.Err() == nil {
		r.mu.Lock()
		key := r.session
		r.session += r.step
		r.mu.Unlock()
		s := r.prompts.Session(key)
		var history []client.Message
		historyTokens := 0
		for t := range s.Turns {
			if t > 0 && think > 0 {
				timer.Reset(think)
				select {
				case <-stop.Done():
					return
				case <-timer.C:
				}
			}
			seq, at, warm, ok := claim()
			if !ok {
				return
			}
			r.scheduled.Add(1)
			r.inFlight.Add(1)
			p := r.prompts.Turn(&s, t, seq)
			req := r.tmpl
			if s.System != "" {
				req.System = s.System
			}
			req.History = history
			req.Prompt, req.MaxTokens = p.Text, p.OutputTokens
			req.InputTokens = historyTokens + p.InputTokens
			res, reply := r.replier.DoReply(reqCtx, &req)
			res.Session, res.Turn = key+1, t+1
			ok = res.Outcome == results.OK
			r.finish(res, seq, stage, warm, at, emit)
			if !ok {
				break
			}
			history = append(history,
				client.Message{Role: "user", Content: p.Text},
				client.Message{Role: "assistant", Content: reply})
			historyTokens += p.InputTokens + r.prompts.Tokenizer().Count(reply)
		}
	}
}
