package run

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/servebench/servebench/load"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/sim"
)

// Send implements load.Driver: r's content goes to the engine now as the
// simulator's HTTP server would submit it (one engine request per input
// of an embeddings batch), or r fails as the server would refuse it.
func (v *virtualClock) Send(r *load.Request) {
	c := r.Content()
	at := v.now()
	t := &v.tmpl
	q := &vreq{r: r, res: results.Result{API: t.api, Stream: t.stream, Sent: at,
		InputTokens: c.InputTokens, MaxTokens: c.MaxTokens}}
	v.live[r] = q
	var reqs []*sim.Request
	var err error
	if t.embed {
		reqs, err = v.embedRequests(r, &c)
	} else {
		reqs, err = v.generateRequest(r, &c)
	}
	for i, er := range reqs {
		if err = v.eng.Submit(er); err != nil {
			for _, sent := range reqs[:i] {
				v.eng.Abort(sent)
			}
			break
		}
	}
	if err != nil {
		v.refuse(q, err)
		return
	}
	q.parts = len(reqs)
	for _, er := range reqs {
		v.parts[er] = q
		q.res.PromptTokens += len(er.Prompt)
	}
}

// generateRequest is the engine request of a chat or completions request:
// the chat messages' token IDs in order (system, history, the new
// message; a message's tool calls after its text, as their arguments),
// or the completions prompt's.
func (v *virtualClock) generateRequest(r *load.Request, c *load.Content) ([]*sim.Request, error) {
	t := &v.tmpl
	var ids []uint32
	if t.chat {
		system := t.system
		if c.System != "" {
			system = c.System
		}
		if system != "" {
			ids = append(ids, sim.PromptIDs(v.tok, system, -1)...)
		}
		for _, m := range c.History {
			ids = append(ids, sim.PromptIDs(v.tok, m.Content, -1)...)
			for _, tc := range m.ToolCalls {
				ids = append(ids, sim.PromptIDs(v.tok, tc.Arguments, -1)...)
			}
		}
	}
	count := -1
	if c.Exact && v.exact && len(c.History) == 0 {
		count = c.InputTokens
	}
	ids = append(ids, sim.PromptIDs(v.tok, c.Prompt, count)...)
	if len(ids) == 0 {
		ids = []uint32{0} // the BOS token every real template adds
	}
	if t.minTokens > c.MaxTokens {
		return nil, &sim.APIError{Message: fmt.Sprintf("min_tokens must be less than or equal to max_tokens=%d, got %d.", c.MaxTokens, t.minTokens),
			Type: "BadRequestError", Param: "min_tokens", Code: 400}
	}
	return []*sim.Request{{ID: fmt.Sprintf("virtual-%d", r.Seq), Prompt: ids, MaxTokens: c.MaxTokens,
		MinTokens: t.minTokens, IgnoreEOS: t.ignoreEOS}}, nil
}

// embedRequests are the engine requests of an embeddings request: one per
// input, each ending once its prompt is prefilled, as the simulator serves
// /v1/embeddings.
func (v *virtualClock) embedRequests(r *load.Request, c *load.Content) ([]*sim.Request, error) {
	inputs := c.Inputs
	if inputs == nil {
		inputs = []string{c.Prompt}
	}
	q := v.live[r]
	q.res.Inputs = len(inputs)
	reqs := make([]*sim.Request, len(inputs))
	for i, text := range inputs {
		count := -1
		if c.Exact && v.exact && c.Inputs == nil {
			count = c.InputTokens
		}
		ids := sim.PromptIDs(v.tok, text, count)
		if len(ids) == 0 {
			ids = []uint32{0}
		}
		reqs[i] = &sim.Request{ID: fmt.Sprintf("virtual-%d-%d", r.Seq, i), Prompt: ids, MaxTokens: 1, IgnoreEOS: true, Pooling: true}
	}
	return reqs, nil
}

// refuse records q as failed the way the server answers a request it
// refuses, ending failedRequestTime after it was sent.
func (v *virtualClock) refuse(q *vreq, err error) {
	res := &q.res
	res.Outcome, res.ErrorClass, res.Status = results.Failed, results.ErrHTTP4xx, 400
	res.Error = "400 Bad Request: " + err.Error()
	var api *sim.APIError
	if errors.As(err, &api) {
		res.Status = api.Code
		res.Error = fmt.Sprintf("%d %s: %s", api.Code, api.Type, api.Message)
		if api.Code >= 500 {
			res.ErrorClass = results.ErrHTTP5xx
		}
	}
	q.endsAt = res.Sent + failedRequestTime
	res.End = q.endsAt
	i, _ := slices.BinarySearchFunc(v.failed, q.endsAt, func(f *vreq, at time.Duration) int {
		if f.endsAt <= at { // after every one ending at the same time
			return -1
		}
		return 1
	})
	v.failed = slices.Insert(v.failed, i, q)
}

// complete applies the step in flight at its end, plans the next one, and
// then records what the step produced: tokens, and the requests it
// finished (whose closed-loop workers send their next request now, to be
// served from the step after the one just planned, as over HTTP).
func (v *virtualClock) complete() {
	b := v.step
	v.step = nil
	v.clk.Set(b.End)
	outs, err := v.eng.Complete(b)
	if err != nil {
		v.l.Stop(v.now(), err)
		v.Cancel(err)
		return
	}
	v.plan()
	at := b.End.Sub(v.t0)
	var ended []*vreq
	for _, o := range outs {
		q := v.parts[o.Req]
		if q == nil {
			continue
		}
		v.tokens(q, o.Tokens, at)
		if o.FinishReason == "" {
			continue
		}
		delete(v.parts, o.Req)
		if q.parts--; q.parts > 0 {
			continue
		}
		v.finish(q, o.Req, o.FinishReason, at)
		ended = append(ended, q)
	}
	for _, q := range ended {
		v.end(q)
	}
}

// tokens records the output tokens a step gave q at offset at, as the
// client would have seen them stream.
func (v *virtualClock) tokens(q *vreq, toks []uint32, at time.Duration) {
	r := &q.res
	t := &v.tmpl
	if t.embed {
		return
	}
	// One step's tokens arrive as one chunk, as the server streams them
	// (several with speculative decoding), split where reasoning turns to
	// content.
	chunk := 0
	flush := func() {
		if t.stream && chunk > 0 {
			r.ChunkTimes = append(r.ChunkTimes, at-r.Sent)
			if t.perChunk {
				r.ChunkTokens = append(r.ChunkTokens, int32(chunk))
			}
		}
		chunk = 0
	}
	for _, id := range toks {
		if r.FirstToken == 0 {
			r.FirstToken, r.Headers = at, at
		}
		if t.chat && r.OutputTokens == v.cfg.ReasoningTokens {
			flush()
		}
		if r.FirstContent == 0 && (!t.chat || r.OutputTokens >= v.cfg.ReasoningTokens) {
			r.FirstContent = at
		}
		r.LastToken = at
		r.OutputTokens++
		chunk++
		if t.tool && r.OutputTokens > v.cfg.ReasoningTokens {
			flush() // tool-call pieces go one a chunk
		}
		if q.r.WantsReply() {
			q.reply = append(q.reply, id)
		}
	}
	flush()
}

// finish completes q's record when its last engine request er finished.
func (v *virtualClock) finish(q *vreq, er *sim.Request, reason string, at time.Duration) {
	r := &q.res
	t := &v.tmpl
	r.End = at
	r.Outcome = results.OK
	if t.embed {
		r.Headers = at
		return
	}
	r.FinishReason = reason
	if t.tool && r.OutputTokens > v.cfg.ReasoningTokens {
		r.FinishReason = "tool_calls"
	}
	if !t.stream {
		r.FirstToken, r.FirstContent, r.Headers, r.LastToken = 0, 0, at, 0
	}
	if v.cfg.EnablePromptTokensDetails && (t.usage || !t.stream) {
		r.CachedTokens = er.CachedTokens()
	}
	if t.stream && !t.usage {
		// Without usage the client counts the tokens it saw itself.
		r.Estimated = true
	}
}

// replyText is the content of a reply as the simulator streams it: the
// words of its output tokens after the reasoning (chat), with no tool
// call.
func (v *virtualClock) replyText(ids []uint32) string {
	if v.tmpl.chat {
		if v.tmpl.tool {
			return ""
		}
		ids = ids[min(v.cfg.ReasoningTokens, len(ids)):]
	}
	var b strings.Builder
	n := uint32(v.tok.NumWords())
	for _, id := range ids {
		b.WriteString(v.tok.Word(int(id % n)))
	}
	return b.String()
}
