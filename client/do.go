package client

import (
	"unicode/utf8"

	"github.com/servebench/servebench/results"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Timeout causes, set as the cause of the request context.
var (
	errFirstByteTimeout = errors.New("first-byte timeout")
	errIdleTimeout      = errors.New("idle-stream timeout")
	errTotalTimeout     = errors.New("total timeout")
	errDrained          = errors.New("drain after end of stream")
)

// Do sends r and returns its Result. It never returns an error and never
// panics: a failure is recorded in the Result (Outcome Failed with an
// ErrorClass and a message, or Canceled when ctx was canceled). A failing
// request has no effect on other requests. Do is safe for concurrent use.
func (c *Client) Do(ctx context.Context, r *Request) results.Result {
	res, _ := c.do(ctx, r, false)
	return res
}

// DoReply is Do that also returns the reply's text as received: the
// content (chat) or text (completions) of every chunk, in order, without
// reasoning or tool calls; what a conversation carries into its next
// turn. The text is kept whatever the outcome (a failed stream's reply is
// what arrived before the failure). Collecting it costs a copy of each
// chunk's text, so Do does not.
func (c *Client) DoReply(ctx context.Context, r *Request) (results.Result, string) {
	return c.do(ctx, r, true)
}

func (c *Client) do(ctx context.Context, r *Request, keep bool) (res results.Result, reply string) {
	embed := r.API == results.APIEmbeddings
	res = results.Result{
		API:         r.API,
		Stream:      r.Stream && !embed,
		InputTokens: r.InputTokens,
		MaxTokens:   r.MaxTokens,
	}
	if embed {
		res.Inputs, res.MaxTokens = max(len(r.Inputs), 1), 0
	}
	var text []byte
	var textp *[]byte
	if keep {
		textp = &text
		defer func() { reply = string(text) }()
	}
	defer func() {
		// A panic here is a client bug triggered by some input; it is
		// recorded so that one odd response cannot stop a run.
		if p := recover(); p != nil {
			res.Outcome, res.ErrorClass = results.Failed, results.ErrMalformedChunk
			res.Error = fmt.Sprintf("client bug: panic: %v", p)
		}
		if res.PromptTokens > 0 && res.InputTokens > 0 && !res.Estimated {
			res.PromptTokensDiff = res.PromptTokens - res.InputTokens - r.PromptOverhead
		}
	}()
	path := c.chatPath
	switch r.API {
	case results.APICompletions:
		path = c.complPath
	case results.APIEmbeddings:
		path = c.embedPath
	}
	body, err := encodeBody(r)
	if err != nil {
		// Not sent: the scenario validator should have refused it.
		res.Outcome, res.ErrorClass, res.Error = results.Failed, results.ErrHTTP4xx, "invalid request, not sent: "+err.Error()
		return res, ""
	}

	// The request's resources are released in reverse order by cleanup,
	// at return; or in the background after a finished stream, whose
	// body's end is drained there (see below).
	var cleanup []func()
	background := false
	defer func() {
		release := func() {
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i]()
			}
		}
		if background {
			go release()
		} else {
			release()
		}
	}()
	tctx := ctx
	if c.total > 0 {
		var cancelTotal context.CancelFunc
		tctx, cancelTotal = context.WithTimeoutCause(ctx, c.total, errTotalTimeout)
		cleanup = append(cleanup, cancelTotal)
	}
	rctx, cancel := context.WithCancelCause(tctx)
	cleanup = append(cleanup, func() { cancel(nil) })

	// A server that closes a kept-alive connection right after a response
	// (llama.cpp's, among others) leaves a dead connection in the pool, and
	// the next request sent on it fails before any response byte. Such a
	// request was never processed: send gives it one more try on a fresh
	// connection, and the connections it took are counted, so the retry is
	// recorded.
	head := c.requestHead(path, len(body), res.Stream)
	first := c.pool.awaitIdle(rctx)
	sentAt := time.Now()
	res.Sent = c.since(sentAt)
	wd := c.watch(res.Sent, cancel)
	cleanup = append(cleanup, wd.stop)
	x, conns, resent, err := c.pool.send(rctx, first, head, body, func() { res.Written = c.since(time.Now()) })
	res.Retries, res.ResentWritten = max(conns-1, 0), resent
	if err != nil {
		c.fail(ctx, rctx, &res, err, results.ErrConnect)
		return res, ""
	}
	cleanup = append(cleanup, x.release)
	if drainBody := c.respond(ctx, rctx, &res, x, sentAt, wd, textp); drainBody != nil {
		cleanup = append(cleanup, drainBody)
		background = true
		x.draining()
	}
	return res, ""
}

// respond reads the response of exchange x into res: an HTTP error, a
// body that is not an event stream, a stream, or a whole response. After
// a stream that ended with [DONE] it returns what reads the end of the
// body (in the background, bounded by the watchdog), else nil.
func (c *Client) respond(ctx, rctx context.Context, res *results.Result, x *exchange, sentAt time.Time, wd *watchdog, textp *[]byte) (drainBody func()) {
	resp := x.resp
	res.Headers = c.since(time.Now())
	res.Status = resp.StatusCode
	switch {
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		wd.begin(res.Headers)
		c.httpError(res, resp)
	case res.Stream && !isEventStream(resp):
		wd.begin(res.Headers)
		c.notSSE(res, resp)
	case res.Stream:
		if c.readStream(ctx, rctx, res, x, sentAt, wd, textp) {
			// [DONE] came: the record is complete. The end of the body is
			// read in the background, bounded by the watchdog, so that the
			// connection goes back to the pool without holding the worker
			// (a server that keeps the body open after [DONE] cost every
			// request of a closed loop the whole drain grace).
			wd.drain(c.since(time.Now()))
			return func() { _, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) }
		}
	default:
		wd.begin(res.Headers)
		c.readWhole(ctx, rctx, res, resp.Body, textp)
	}
	return nil
}

// isEventStream reports whether a 2xx response to a streaming request is an
// event stream: Content-Type text/event-stream, or none at all (a lenient
// server), and no content encoding (the client asks for none).
func isEventStream(resp *http.Response) bool {
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		return false
	}
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "text/event-stream"
}

// notSSE records a streaming request whose 2xx answer is not an event
// stream: an HTML page from a proxy, a whole JSON response from a server
// that ignores stream, a compressed or binary body.
func (c *Client) notSSE(res *results.Result, resp *http.Response) {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	res.End = c.since(time.Now())
	what := resp.Header.Get("Content-Type")
	if what == "" {
		what = "none"
	}
	if enc := resp.Header.Get("Content-Encoding"); enc != "" {
		what += ", Content-Encoding " + enc
	}
	msg := fmt.Sprintf("a streaming request was answered %s without an event stream (Content-Type %s)", resp.Status, what)
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		msg += ": the server does not stream; set target.stream: false to measure whole responses"
	}
	if e := printable(excerpt(b)); e != "" {
		msg += ": " + e
	}
	c.setFailure(res, &failure{results.ErrNotSSE, msg})
}

// printable returns s when it is text, or a note that it is binary.
func printable(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || (r < 0x20 && r != '\n' && r != '\r' && r != '\t') {
			return fmt.Sprintf("(%d bytes of binary data)", len(s))
		}
	}
	return s
}

// readStream reads an SSE body into res. It reports whether the stream
// completed with [DONE], leaving the end of the body to the caller.
func (c *Client) readStream(ctx, rctx context.Context, res *results.Result, x *exchange, sentAt time.Time, wd *watchdog, text *[]byte) (done bool) {
	body := x.resp.Body
	s := c.streams.Get().(*stream)
	defer func() {
		s.release()
		c.streams.Put(s)
	}()
	s.reset(body, res, c.epoch, sentAt)
	s.live, s.firsts, s.stats = &c.chunks, &c.firsts, &c.readers
	s.text = text
	end, fail, readErr := s.pump(wd, c.since)
	x.hot = s.src.reads >= hotReads && 4*s.src.full >= 3*s.src.reads
	if fail == nil && readErr != nil && !errors.Is(readErr, io.EOF) {
		if errors.Is(readErr, errLineTooLong) {
			fail = &failure{results.ErrMalformedChunk, readErr.Error()}
		} else if f := c.contextFailure(ctx, rctx); f != nil {
			fail = f
		}
	}
	if fail == nil {
		fail = s.finish(readErr)
	} else {
		s.finish(readErr) // token accounting only
	}
	res.End = c.since(end)
	if fail != nil {
		c.setFailure(res, fail)
		return false
	}
	res.Outcome = results.OK
	return s.done
}

// wholeResponse is the part of a non-streaming chat, completions or
// embeddings response the client reads. go-openai's response types lack
// "reasoning".
type wholeResponse struct {
	Choices []struct {
		Message struct {
			Content          string         `json:"content"`
			Reasoning        string         `json:"reasoning"`
			ReasoningContent string         `json:"reasoning_content"`
			ToolCalls        []wireToolCall `json:"tool_calls"`
		} `json:"message"`
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	// Data holds one object per embedded input; only their count is read
	// (the vectors are skipped).
	Data    []struct{}      `json:"data"`
	Usage   *openai.Usage   `json:"usage"`
	Timings *wireTimings    `json:"timings"` // llama.cpp's server
	Error   json.RawMessage `json:"error"`
}

// readWhole reads a JSON response body into res. Only E2E is measured:
// FirstToken, FirstContent and LastToken stay zero. When text is not nil,
// the reply's content is appended to it.
func (c *Client) readWhole(ctx, rctx context.Context, res *results.Result, body io.Reader, text *[]byte) {
	b, err := io.ReadAll(io.LimitReader(body, maxBodyBytes+1))
	now := time.Now()
	res.End = c.since(now)
	if err != nil {
		if f := c.contextFailure(ctx, rctx); f != nil {
			c.setFailure(res, f)
		} else {
			c.setFailure(res, &failure{results.ErrStreamTruncated, fmt.Sprintf("response body broken: %v", err)})
		}
		return
	}
	if len(b) > maxBodyBytes {
		c.setFailure(res, &failure{results.ErrMalformedChunk, fmt.Sprintf("response body over %d bytes", maxBodyBytes)})
		return
	}
	var w wholeResponse
	if err := json.Unmarshal(b, &w); err != nil {
		c.setFailure(res, &failure{results.ErrMalformedChunk, fmt.Sprintf("%v: %s", err, excerpt(b))})
		return
	}
	if len(w.Error) > 0 && string(w.Error) != "null" {
		c.setFailure(res, &failure{results.ErrServerErrorEvent, errorMessage(b)})
		return
	}
	if res.API == results.APIEmbeddings {
		c.readEmbeddings(res, &w, b)
		return
	}
	var all string
	for _, ch := range w.Choices {
		all += ch.Message.ReasoningContent + ch.Message.Reasoning + ch.Message.Content + ch.Text
		for _, tc := range ch.Message.ToolCalls {
			all += tc.Function.Name + tc.Function.Arguments
		}
		if text != nil {
			*text = append(append(*text, ch.Message.Content...), ch.Text...)
		}
		if res.FinishReason == "" {
			res.FinishReason = ch.FinishReason
		}
	}
	if w.Usage != nil {
		res.PromptTokens = w.Usage.PromptTokens
		res.OutputTokens = w.Usage.CompletionTokens
		if d := w.Usage.PromptTokensDetails; d != nil {
			res.CachedTokens = d.CachedTokens
		}
		if d := w.Usage.CompletionTokensDetails; d != nil {
			res.ReasoningTokens = d.ReasoningTokens
		}
		if t := w.Timings; t != nil && res.CachedTokens == 0 {
			res.CachedTokens = t.CacheN // llama.cpp reports its cache hits in timings only
		}
	} else {
		// The whole text is at hand, so counting it is cheap here.
		if tok, err := c.loadCounter(); err == nil {
			res.OutputTokens = tok.Count(all)
			res.Estimated = true
		}
	}
	if t := w.Timings; t != nil && t.DraftN > 0 { // llama.cpp's speculative decoding
		res.DraftTokens, res.DraftAccepted = t.DraftN, max(t.DraftNAccepted, 0)
	}
	res.Outcome = results.OK
}

// readEmbeddings completes the record of an embeddings response: one
// embedding per input, and the prompt tokens from usage (vLLM, TEI and
// OpenAI report them), else the intended count, marked estimated.
func (c *Client) readEmbeddings(res *results.Result, w *wholeResponse, b []byte) {
	if len(w.Data) != res.Inputs {
		c.setFailure(res, &failure{results.ErrMalformedChunk,
			fmt.Sprintf("%d embeddings for %d inputs: %s", len(w.Data), res.Inputs, excerpt(b))})
		return
	}
	if w.Usage != nil && w.Usage.PromptTokens > 0 {
		res.PromptTokens = w.Usage.PromptTokens
	} else {
		res.PromptTokens, res.Estimated = res.InputTokens, true
	}
	res.Outcome = results.OK
}

// httpError records a non-2xx response with a body excerpt.
func (c *Client) httpError(res *results.Result, resp *http.Response) {
	// Enough of the body to parse a JSON error, whose message is kept.
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	res.End = c.since(time.Now())
	class := results.ErrHTTP4xx
	if resp.StatusCode >= 500 {
		class = results.ErrHTTP5xx
	}
	msg := resp.Status
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		msg += " (redirects are not followed)"
	}
	// Each engine shapes its error body its own way (vLLM's
	// {"error":{message,type,code}} and its older flat {"object":"error",…},
	// SGLang's flat one, TGI's {"error":"…","error_type":"…"}, llama.cpp's
	// {"error":{code,message,type}}): keep the message, not the JSON.
	e := excerpt(b)
	if json.Valid(b) {
		e = errorMessage(b)
	}
	if e != "" {
		msg += ": " + e
	}
	c.setFailure(res, &failure{class, msg})
}

// fail records an error from sending the request or reading the headers:
// a cancellation, a timeout, or else the given class.
func (c *Client) fail(ctx, rctx context.Context, res *results.Result, err error, class results.ErrorClass) {
	res.End = c.since(time.Now())
	if f := c.contextFailure(ctx, rctx); f != nil {
		c.setFailure(res, f)
		return
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		// the dial timed out: the connection could not be made
		c.setFailure(res, &failure{results.ErrConnect, err.Error()})
		return
	}
	c.setFailure(res, &failure{class, err.Error()})
}

// contextFailure classifies a canceled request context: the run's ctx
// canceled (Canceled), or one of the client's timeouts. It returns nil when
// rctx is still live.
func (c *Client) contextFailure(ctx, rctx context.Context) *failure {
	if ctx.Err() != nil {
		return &failure{results.ErrCanceled, fmt.Sprintf("canceled: %v", context.Cause(ctx))}
	}
	if rctx.Err() == nil {
		return nil
	}
	cause := context.Cause(rctx)
	switch {
	case errors.Is(cause, errFirstByteTimeout):
		return &failure{results.ErrTimeout, fmt.Sprintf("%v (%v)", cause, c.firstByte)}
	case errors.Is(cause, errIdleTimeout):
		return &failure{results.ErrTimeout, fmt.Sprintf("%v (%v)", cause, c.idle)}
	case errors.Is(cause, errTotalTimeout):
		return &failure{results.ErrTimeout, fmt.Sprintf("%v (%v)", cause, c.total)}
	}
	return &failure{results.ErrTimeout, cause.Error()}
}

func (c *Client) setFailure(res *results.Result, f *failure) {
	// A server may echo the API key or a header in its error: redact it
	// before the message is stored.
	res.ErrorClass, res.Error = f.class, c.redact.String(f.msg)
	res.Outcome = results.Failed
	if f.class == results.ErrCanceled {
		res.Outcome = results.Canceled
	}
}

// watchdog enforces the first-byte and idle timeouts of one request with a
// single timer. The per-chunk cost is one mutex-free store (touch); the timer
// re-arms itself from the last read when it fires early.
type watchdog struct {
	epoch time.Time
	first time.Duration // first-byte timeout, 0 = off
	idle  time.Duration // idle timeout, 0 = off
	sent  time.Duration

	last   atomic.Int64 // offset of the last read, ns
	mu     sync.Mutex   // guards phase and the timer's arming
	phase  int
	timer  *time.Timer
	cancel context.CancelCauseFunc
}

const (
	phaseWaiting = iota // before the first body line
	phaseReading
	phaseDraining
	phaseStopped
)

func (c *Client) watch(sent time.Duration, cancel context.CancelCauseFunc) *watchdog {
	w := &watchdog{epoch: c.epoch, first: c.firstByte, idle: c.idle, sent: sent, cancel: cancel}
	if w.first > 0 {
		w.timer = time.AfterFunc(w.first, w.fire)
	}
	return w
}

// begin switches from waiting for the first byte to reading, at offset at.
func (w *watchdog) begin(at time.Duration) {
	w.last.Store(int64(at))
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.phase != phaseWaiting {
		return
	}
	w.phase = phaseReading
	w.arm(w.idle)
}

// touch records a read at offset at.
func (w *watchdog) touch(at time.Duration) { w.last.Store(int64(at)) }

// drain switches to reading the end of a finished body, bounded by drainGrace.
func (w *watchdog) drain(at time.Duration) {
	w.last.Store(int64(at))
	w.mu.Lock()
	defer w.mu.Unlock()
	w.phase = phaseDraining
	w.arm(drainGrace)
}

func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.phase = phaseStopped
	if w.timer != nil {
		w.timer.Stop()
	}
}

// arm (re)starts the timer to fire after d; d == 0 disarms it. w.mu is held.
func (w *watchdog) arm(d time.Duration) {
	switch {
	case d <= 0 && w.timer != nil:
		w.timer.Stop()
	case d <= 0:
	case w.timer == nil:
		w.timer = time.AfterFunc(d, w.fire)
	default:
		w.timer.Reset(d)
	}
}

func (w *watchdog) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Since(w.epoch)
	var deadline time.Duration
	var cause error
	switch w.phase {
	case phaseWaiting:
		deadline, cause = w.sent+w.first, errFirstByteTimeout
	case phaseReading:
		deadline, cause = time.Duration(w.last.Load())+w.idle, errIdleTimeout
	case phaseDraining:
		deadline, cause = time.Duration(w.last.Load())+drainGrace, errDrained
	default:
		return
	}
	if now >= deadline {
		w.cancel(cause)
		return
	}
	w.timer.Reset(deadline - now)
}

// pump reads SSE lines until [DONE], a failure or the end of the body,
// each stamped with the read that completed it (stampReader). It returns
// when reading ended, the failure if a line failed the request, and the
// read error that ended the body.
func (s *stream) pump(wd *watchdog, since func(time.Time) time.Duration) (end time.Time, fail *failure, readErr error) {
	first, touched := true, 0
	for {
		line, err := s.readLine()
		now := s.src.at
		if len(line) > 0 || err == nil {
			if first {
				first = false
				wd.begin(since(now))
			} else if s.src.reads != touched {
				wd.touch(since(now))
			}
			touched = s.src.reads
			if fail = s.handleLine(line, now); fail != nil {
				return now, fail, nil
			}
		}
		if s.done {
			return now, nil, nil
		}
		if err != nil {
			return now, nil, err
		}
	}
}
