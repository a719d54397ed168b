package load

import (
	"sync/atomic"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// Request is one request a stage wants sent now: its place in the run and
// how to build its content. The driver builds the content (Content) off
// its loop, since a dataset prompt may need tokenizing.
type Request struct {
	Seq       uint64        // unique within the run, in scheduling order (strided by the shard count)
	Stage     int           // the stage's index
	Warmup    bool          // excluded from statistics
	Scheduled time.Duration // when the load model wanted it sent, from the run's epoch
	Session   uint64        // a conversation's session, from 1; 0 otherwise
	Turn      int           // the turn within the session, from 1; 0 otherwise
	// Agent is 0 for a session's own request, k for its k-th sub-agent's
	// (a session stage's).
	Agent int
	// SessionEnd flags a session's last request (a session stage's).
	SessionEnd bool

	build  func() Content
	built  Content // what Content returned, for the stage's next turn
	reply  bool
	user   *user       // a conversation's user
	agent  *agent      // a session stage's agent
	replay *replayTurn // a sessions trace's turn
	shape  bool        // a warmup shape (shapesFirst), not the stage's own
}

// Content builds what the request carries. The driver calls it once per
// request, from any goroutine, before the request ends.
func (r *Request) Content() Content {
	r.built = r.build()
	return r.built
}

// WantsReply reports whether the stage needs the reply's text (a
// conversation carries it into the next turn): the driver then passes it
// to Done.
func (r *Request) WantsReply() bool { return r.reply }

// Fill sets the fields of res the load model owns (sequence number, stage,
// warmup, scheduled time, session and turn), whatever the sender put
// there.
func (r *Request) Fill(res *results.Result) {
	res.Seq, res.Stage, res.Warmup, res.Scheduled = r.Seq, r.Stage, r.Warmup, r.Scheduled
	res.Session, res.Turn = r.Session, r.Turn
	res.Agent, res.SessionEnd = r.Agent, r.SessionEnd
}

// fill is Fill for a record the Load makes itself, with the request's API.
func (r *Request) fill(res *results.Result, t *template) {
	r.Fill(res)
	res.API, res.Stream = t.api, t.stream
}

// Content is what a request carries. The driver adds the fields every
// request of the scenario shares (target.api, the model, request.*).
type Content struct {
	System string // this request's system message; "" sends request.system
	// History holds the messages before Prompt, oldest first: a
	// conversation's earlier turns, or a session's every message (its
	// Prompt is then "" and History ends with the message to answer).
	History []Message
	Prompt  string   // the user message (chat) or the prompt (completions); "" sends History alone
	Inputs  []string // an embeddings batch's texts (request.batch > 1); nil otherwise
	// InputTokens is the intended prompt length under the scenario's
	// tokenizer: the history and the new message (all inputs of a batch).
	InputTokens int
	MaxTokens   int // the output length to ask for; 0 for embeddings
	// Exact reports that Prompt has exactly InputTokens tokens under the
	// scenario's tokenizer and is made of words of one token each (a
	// synthetic prompt), so a driver may skip counting it.
	Exact bool
}

// Message is one chat message of a request's history.
type Message struct {
	Role    string // "user", "assistant" or "tool"
	Content string // its text ("" with tool calls is sent as null)
	// ToolCalls are an assistant message's calls of tools.
	ToolCalls []ToolCall
	// ToolCallID is the call a tool message answers.
	ToolCallID string
}

// ToolCall is one call of a function tool in an assistant message.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text
}

// Reply is the text of a response as received, and its length in tokens
// under the scenario's tokenizer (Load.Reply counts it).
type Reply struct {
	Text   string
	Tokens int
}

// Reply measures a reply's text for the next turn: its tokens under the
// scenario's tokenizer, or, when the prompts were calibrated on the server
// and no tokenizer is here, the server's count of the output without its
// reasoning. Safe for concurrent use.
func (l *Load) Reply(text string, res *results.Result) Reply {
	if tok := l.opts.Prompts.Tokenizer(); tok != nil {
		return Reply{Text: text, Tokens: tok.Count(text)}
	}
	return Reply{Text: text, Tokens: max(res.OutputTokens-res.ReasoningTokens, 0)}
}

// Counters is a snapshot of a load's live counters.
type Counters struct {
	Stage        int           // the running stage: -1 before Start, the number of stages once all ended
	StageStarted time.Duration // the running stage's start, from the epoch
	StageBefore  uint64        // requests scheduled before the running stage
	Scheduled    uint64        // requests scheduled so far, dropped arrivals included
	InFlight     int64         // requests sent whose end the Load has not yet taken
	Done         uint64        // requests ended (OK + Failed + Canceled + Dropped)
	OK           uint64
	Failed       uint64
	Canceled     uint64
	Dropped      uint64 // open-loop arrivals that found max_concurrency requests in flight
	OutputTokens uint64 // sum of OutputTokens over OK records
}

// counters are a Load's live figures, written on the driver's loop and
// read from any goroutine.
type counters struct {
	epoch                                  time.Duration
	stage                                  atomic.Int64
	stageAt                                atomic.Int64
	stageSched                             atomic.Uint64
	scheduled, done                        atomic.Uint64
	ok, failed, canceled, dropped, outToks atomic.Uint64
	inFlight                               atomic.Int64
}

// Counters returns the live counters. It is safe to call concurrently with
// the driver; the fields are read one by one, so they may be a few
// requests apart.
func (l *Load) Counters() Counters {
	c := &l.c
	return Counters{
		Stage:        int(c.stage.Load()),
		StageStarted: time.Duration(c.stageAt.Load()),
		StageBefore:  c.stageSched.Load(),
		Scheduled:    c.scheduled.Load(),
		InFlight:     c.inFlight.Load(),
		Done:         c.done.Load(),
		OK:           c.ok.Load(),
		Failed:       c.failed.Load(),
		Canceled:     c.canceled.Load(),
		Dropped:      c.dropped.Load(),
		OutputTokens: c.outToks.Load(),
	}
}

// template is what every request of a scenario shares, and how a request's
// content is built from the prompts.
type template struct {
	api    string
	stream bool
	batch  uint64 // embeddings inputs per request
	embed  bool
	p      *scenario.Prompts
	shard  scenario.Shard
	step   uint64
	exact  bool // synthetic prompts of one-token words
}

func newTemplate(sc *scenario.Scenario, p *scenario.Prompts, sh scenario.Shard) *template {
	return &template{
		api:    sc.Target.API,
		stream: *sc.Target.Stream,
		batch:  uint64(max(sc.Request.Batch, 1)),
		embed:  sc.Target.API == results.APIEmbeddings,
		p:      p,
		shard:  sh,
		step:   uint64(max(sh.Count, 1)),
		exact:  sc.Prompts.Dataset.Path == "",
	}
}

// plain builds the content of request seq of a plain stage. An embeddings
// request of batch b embeds the prompts of b keys of its own, so that no
// two requests share a text: for the shard's own request number k (seq =
// Index + k·Count), the keys (k·b + j)·Count + Index, j < b, which keep the
// shard's residue (a shard's dataset part is the entries of its residue).
// An embeddings request asks for no output, whatever a dataset says.
func (t *template) plain(seq uint64) Content {
	if !t.embed {
		p := t.p.At(seq)
		return Content{Prompt: p.Text, InputTokens: p.InputTokens, MaxTokens: p.OutputTokens, Exact: t.exact}
	}
	if t.batch == 1 {
		p := t.p.At(seq)
		return Content{Prompt: p.Text, InputTokens: p.InputTokens, Exact: t.exact}
	}
	index := uint64(t.shard.Index)
	own := (seq - index) / t.step
	c := Content{Inputs: make([]string, t.batch), Exact: t.exact}
	for j := range t.batch {
		p := t.p.At((own*t.batch+j)*t.step + index)
		c.Inputs[j] = p.Text
		c.InputTokens += p.InputTokens
	}
	return c
}
