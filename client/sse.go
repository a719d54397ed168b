package client

import (
	"github.com/servebench/servebench/results"

	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	gojson "github.com/goccy/go-json"
	openai "github.com/sashabaranov/go-openai"
)

// The wire types below are a targeted view of an OpenAI streaming chunk
// (chat.completion.chunk or text_completion): only what the client measures
// is decoded, unknown members are skipped. They are decoded with goccy/go-json
// into a value reused from chunk to chunk, with strings referring to the
// line buffer (DecodeNoCopyString): they must not be retained.

type wireDelta struct {
	Content          string         `json:"content"`           // null and "" are both "no content"
	Reasoning        string         `json:"reasoning"`         // vLLM ≥ v0.11 (late 2025), Ollama
	ReasoningContent string         `json:"reasoning_content"` // vLLM ≤ v0.15, SGLang, llama.cpp, TRT-LLM
	ToolCalls        []wireToolCall `json:"tool_calls"`        // null and [] are both "no tool call"
}

// wireToolCall is one tool-call delta: the first of a call carries its id,
// type and function name (vLLM sends arguments "" with it), the later ones
// pieces of the arguments.
type wireToolCall struct {
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireChoice struct {
	Delta        wireDelta `json:"delta"` // chat
	Text         string    `json:"text"`  // completions
	FinishReason string    `json:"finish_reason"`
}

type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type wireChunk struct {
	Choices []wireChoice    `json:"choices"`
	Usage   wireUsage       `json:"usage"`
	Timings wireTimings     `json:"timings"` // llama.cpp's server, on its last chunk
	Error   json.RawMessage `json:"error"`   // vLLM/SGLang/TGI in-band error: an object, or a string (older TGI)
}

// wireTimings is llama.cpp's per-request timings: cache_n is the prompt
// tokens it reused from the slot's cache, which its usage does not
// report; draft_n and draft_n_accepted, sent only when the request
// speculated (draft_n > 0), the draft tokens it tested and accepted. They
// ride on a stream's last chunk, or on every chunk with
// timings_per_token, cumulative: the last one seen is the request's.
type wireTimings struct {
	CacheN         int `json:"cache_n"`
	DraftN         int `json:"draft_n"`
	DraftNAccepted int `json:"draft_n_accepted"`
}

// absentTimings marks every member of a wireTimings as not sent.
var absentTimings = wireTimings{CacheN: usageAbsent, DraftN: usageAbsent, DraftNAccepted: usageAbsent}

// usageAbsent marks wireChunk.Usage before a decode: a "usage" member that is
// absent or null leaves it untouched.
const usageAbsent = -1

// failure is a classified reason why a request failed.
type failure struct {
	class results.ErrorClass
	msg   string
}

func (f *failure) Error() string { return string(f.class) + ": " + f.msg }

// errLineTooLong reports an SSE line over maxLineBytes.
var errLineTooLong = fmt.Errorf("sse line longer than %d bytes", maxLineBytes)

// stream holds the per-request state of the SSE reader and the chunk
// decoder. It is pooled by the Client and reset for each request; it is not
// safe for concurrent use.
type stream struct {
	src  stampReader // the body, stamped at each read
	br   *bufio.Reader
	long []byte // accumulates a line longer than br's buffer
	// times holds the token-bearing chunks' times so far, each the gap
	// from the previous one (from Sent for the first) as a varint;
	// nchunks counts them and lastAt is the last one's offset from Sent.
	times   []byte
	nchunks int
	lastAt  time.Duration
	memo    []byte // the scanner's memo of this stream's chunks (scanChunk)
	tmpl    chunkTemplate
	ck      wireChunk // decode target, reused
	sc      chunkScan // the current chunk's facts

	res       *results.Result
	live      *atomic.Int64 // the client's count of token-bearing chunks, for progress displays
	firsts    *firstTokens  // the client's first-token counter, for progress displays
	stats     *readerStats  // the client's reader figures
	text      *[]byte       // when not nil, the reply's content and text are appended to it
	epoch     time.Time
	sentAt    time.Time // wall+monotonic time of Sent, for the chunks' offsets
	errEvent  bool      // the current SSE event is "event: error"
	errData   bool      // a data line was seen for the current error event
	done      bool      // data: [DONE] seen
	finished  bool      // a finish_reason seen
	usageSeen bool      // a usage object seen (the last one is authoritative)
	perChunk  bool      // every token-bearing chunk so far carried cumulative usage
	lastCum   int       // completion_tokens at the last token-bearing chunk

	unreported int64 // token-bearing chunks not yet added to live
}

// stampReader reads the body and notes when each read returned: the
// arrival of the bytes it brought, so of every line completed in them. A
// read brings one chunk from a paced server and tens of them from a fast
// one; stamping the read rather than each line costs one clock read per
// read and gives the lines of one read the moment they arrived, not the
// moment the reader got round to each.
//
// It also keeps what tells a reader that keeps up from one that does not
// (ReaderStats): the time spent inside reads, and how many reads found a
// whole buffer's worth of data waiting.
type stampReader struct {
	r      io.Reader
	at     time.Time     // when the last read returned
	reads  int           // reads so far
	full   int           // reads that filled the buffer
	inRead time.Duration // time inside reads
	first  time.Time     // when the first read began
}

func (t *stampReader) Read(p []byte) (int, error) {
	t0 := time.Now()
	if t.reads == 0 {
		t.first = t0
	}
	n, err := t.r.Read(p)
	t.at = time.Now()
	t.reads++
	t.inRead += t.at.Sub(t0)
	if n == len(p) {
		t.full++
	}
	return n, err
}

// liveBatch is how many chunks a stream counts before adding them to the
// client's live counter.
const liveBatch = 16

// flushLive adds the chunks not yet reported to the live counter.
func (s *stream) flushLive() {
	if s.live != nil && s.unreported > 0 {
		s.live.Add(s.unreported)
	}
	s.unreported = 0
}

func newStream() *stream {
	return &stream{br: bufio.NewReaderSize(nil, readerBytes), ck: wireChunk{Choices: make([]wireChoice, 0, 1)}}
}

// reset prepares s for a request whose Result is res, sent at sentAt.
func (s *stream) reset(body io.Reader, res *results.Result, epoch, sentAt time.Time) {
	s.src = stampReader{r: body, at: sentAt}
	s.br.Reset(&s.src)
	if cap(s.long) > 64<<10 {
		s.long = nil // do not keep a rare huge buffer in the pool
	}
	if cap(s.times) > 256<<10 {
		s.times = nil // do not keep a rare huge buffer in the pool
	}
	s.long, s.memo, s.times, s.nchunks, s.lastAt = s.long[:0], s.memo[:0], s.times[:0], 0, 0
	s.tmpl.reset()
	s.res, s.epoch, s.sentAt = res, epoch, sentAt
	s.errEvent, s.errData, s.done, s.finished, s.usageSeen = false, false, false, false, false
	s.perChunk, s.lastCum, s.unreported = true, 0, 0
}

// release drops references to the request before s returns to the pool.
func (s *stream) release() {
	s.br.Reset(nil)
	s.src = stampReader{}
	s.res, s.text = nil, nil
	clear(s.ck.Choices[:cap(s.ck.Choices)])
	s.ck.Error = nil
}

// readLine returns the next line without its line terminator ("\n" or
// "\r\n"). The slice is valid until the next call. At EOF it returns the
// last unterminated line, if any, with io.EOF.
func (s *stream) readLine() ([]byte, error) {
	line, err := s.br.ReadSlice('\n')
	if err != nil && errors.Is(err, bufio.ErrBufferFull) {
		s.long = append(s.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(s.long) > maxLineBytes {
				return nil, errLineTooLong
			}
			line, err = s.br.ReadSlice('\n')
			s.long = append(s.long, line...)
		}
		line = s.long
		if len(line) > maxLineBytes+2 {
			return nil, errLineTooLong
		}
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, err
}

// handleLine processes one SSE line that arrived at now. It returns a
// failure when the line ends the request as failed. Lines are handled as
// they arrive rather than per dispatched event: each vLLM event is one data
// line, and stamping at the line's read keeps the timestamp at byte arrival.
func (s *stream) handleLine(line []byte, now time.Time) *failure {
	if len(line) == 0 { // end of event
		if s.errEvent && !s.errData {
			return &failure{results.ErrServerErrorEvent, "event: error with no data"}
		}
		s.errEvent, s.errData = false, false
		return nil
	}
	if line[0] == ':' { // comment, e.g. ": ping"
		return nil
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		return s.handleData(value, now)
	case "event":
		s.errEvent = string(bytes.TrimSpace(value)) == "error"
	}
	return nil // id, retry and unknown fields are ignored, as the SSE spec says
}

var doneMarker = []byte("[DONE]")

// handleData processes the value of one data line.
func (s *stream) handleData(v []byte, now time.Time) *failure {
	if n := len(v); n > 0 && (v[0] <= ' ' || v[n-1] <= ' ') {
		v = bytes.TrimSpace(v) // TRT-LLM writes "data: {...} \n"
	}
	if s.errEvent {
		s.errData = true
		return &failure{results.ErrServerErrorEvent, errorMessage(v)}
	}
	if len(v) == 0 {
		return nil
	}
	if bytes.Equal(v, doneMarker) {
		s.done = true
		return nil
	}
	sc := &s.sc
	if f := s.decodeChunk(v, sc); f != nil {
		return f
	}
	res := s.res
	tokens, content := sc.tokens, sc.content
	if sc.finish != nil && !s.finished {
		s.finished = true
		res.FinishReason = string(sc.finish)
	}
	hasUsage := sc.hasUsage
	if hasUsage {
		s.usageSeen = true
		res.PromptTokens = max(sc.usage.PromptTokens, 0)
		res.OutputTokens = max(sc.usage.CompletionTokens, 0)
		res.CachedTokens = sc.usage.PromptTokensDetails.CachedTokens
		res.ReasoningTokens = sc.usage.CompletionTokensDetails.ReasoningTokens
	}
	if sc.timings != absentTimings {
		setTimings(res, &sc.timings, hasUsage && sc.usage.PromptTokensDetails.CachedTokens > 0)
	}
	if !tokens {
		return nil
	}
	at := now.Sub(s.epoch)
	if res.FirstToken == 0 {
		res.FirstToken = at
		if s.firsts != nil {
			s.firsts.add(at - res.Sent)
		}
	}
	if content && res.FirstContent == 0 {
		res.FirstContent = at
	}
	res.LastToken = at
	// The chunk's time, kept compact while the stream lasts (finish
	// expands it into ChunkTimes): the gap from the previous chunk as a
	// varint, two to four bytes instead of eight, and nothing reserved
	// ahead for a long answer.
	d := now.Sub(s.sentAt)
	s.times = binary.AppendVarint(s.times, int64(d-s.lastAt))
	s.lastAt = d
	s.nchunks++
	// The live counter is shared by every stream: add in batches, so
	// thousands of streams do not contend for its cache line per chunk.
	if s.unreported++; s.unreported == liveBatch {
		s.flushLive()
	}
	if s.perChunk {
		if !hasUsage {
			s.perChunk = false
		} else {
			// Tokens reported by chunks without text (harmony control
			// tokens) are carried into the next token-bearing chunk.
			k := max(sc.usage.CompletionTokens-s.lastCum, 0)
			s.lastCum = max(sc.usage.CompletionTokens, s.lastCum)
			if res.ChunkTokens == nil {
				res.ChunkTokens = make([]int32, 0, 64)
			}
			res.ChunkTokens = append(res.ChunkTokens, int32(min(k, 1<<31-1)))
		}
	}
	return nil
}

// setTimings keeps what llama.cpp's timings say of a request: its cache
// hits, which its usage does not report (unless cached, the usage did),
// and its speculative decoding.
func setTimings(res *results.Result, t *wireTimings, cached bool) {
	if t.CacheN > 0 && !cached {
		res.CachedTokens = t.CacheN
	}
	if t.DraftN > 0 {
		res.DraftTokens, res.DraftAccepted = t.DraftN, max(t.DraftNAccepted, 0)
	}
}

// chunkScan is what one chunk says: whether a choice carried tokens
// (content, text or reasoning) and content, the first finish_reason, and
// the usage.
type chunkScan struct {
	tokens, content bool
	finish          []byte // valid until the next decode
	hasUsage        bool
	usage           wireUsage
	timings         wireTimings // llama.cpp's; each member usageAbsent when not sent
}

// decodeChunk reads the facts of one chunk: with the scanner (scan.go)
// when the reply's text is not wanted, else, or when the scanner declines,
// with the full decoder.
func (s *stream) decodeChunk(v []byte, out *chunkScan) *failure {
	if s.text == nil {
		if s.tmpl.match(v, out) {
			return nil
		}
		if sc, last, ok := scanChunk(v, &s.memo); ok {
			*out = sc
			s.tmpl.learn(v, last)
			return nil
		}
	}
	var f *failure
	*out, f = s.decodeFull(v)
	return f
}

// decodeFull decodes one chunk with go-json into the reused wireChunk,
// with the in-band error check.
func (s *stream) decodeFull(v []byte) (chunkScan, *failure) {
	ck := &s.ck
	clear(ck.Choices[:cap(ck.Choices)])
	ck.Choices = ck.Choices[:0]
	ck.Usage = wireUsage{PromptTokens: usageAbsent, CompletionTokens: usageAbsent}
	ck.Timings = absentTimings
	ck.Error = ck.Error[:0]
	if err := gojson.UnmarshalOf(v, ck, gojson.DecodeNoCopyString()); err != nil {
		return chunkScan{}, &failure{results.ErrMalformedChunk, fmt.Sprintf("%v: %s", err, excerpt(v))}
	}
	if len(ck.Error) > 0 && !bytes.Equal(ck.Error, []byte("null")) {
		return chunkScan{}, &failure{results.ErrServerErrorEvent, errorMessage(v)}
	}
	var out chunkScan
	for i := range ck.Choices {
		c := &ck.Choices[i]
		if c.Delta.Content != "" || c.Text != "" || toolCallDelta(c.Delta.ToolCalls) {
			out.tokens, out.content = true, true
			if s.text != nil {
				*s.text = append(append(*s.text, c.Delta.Content...), c.Text...)
			}
		} else if c.Delta.Reasoning != "" || c.Delta.ReasoningContent != "" {
			out.tokens = true
		}
		if c.FinishReason != "" && out.finish == nil {
			out.finish = []byte(c.FinishReason)
		}
	}
	out.usage = ck.Usage
	out.hasUsage = ck.Usage.PromptTokens != usageAbsent || ck.Usage.CompletionTokens != usageAbsent
	out.timings = ck.Timings
	return out, nil
}

// toolCallDelta reports whether a delta's tool_calls carry generated text:
// a function name or a piece of the arguments. A call's first delta names
// the function, so it is a token even though vLLM sends its arguments as "".
func toolCallDelta(calls []wireToolCall) bool {
	for i := range calls {
		if calls[i].Function.Name != "" || calls[i].Function.Arguments != "" {
			return true
		}
	}
	return false
}

// finish completes res after the stream ended. readErr is the error
// that ended reading (io.EOF for a clean end), or nil after [DONE].
func (s *stream) finish(readErr error) *failure {
	s.flushLive()
	if s.stats != nil && s.src.reads > 0 {
		s.stats.add(&s.src)
	}
	res := s.res
	if s.nchunks > 0 {
		res.ChunkTimes = make([]time.Duration, s.nchunks)
		var at time.Duration
		for i, b := 0, s.times; i < s.nchunks; i++ {
			d, n := binary.Varint(b)
			b = b[n:]
			at += time.Duration(d)
			res.ChunkTimes[i] = at
		}
	}
	if !s.perChunk || len(res.ChunkTokens) != len(res.ChunkTimes) {
		res.ChunkTokens = nil
	}
	if !s.usageSeen {
		// No usage from the server: count one token per token-bearing chunk.
		// vLLM, SGLang and llama.cpp send one token per chunk outside
		// speculative decoding; tokenizing the text instead would need it
		// accumulated, which costs allocations on the hot path.
		res.OutputTokens = len(res.ChunkTimes)
		res.Estimated = true
	}
	if s.done || (s.finished && readErr != nil) {
		// [DONE], or a finish_reason and then the end of the body, however
		// it ended (timeouts and cancellation are classified before).
		return nil
	}
	if readErr == nil || errors.Is(readErr, io.EOF) {
		return &failure{results.ErrStreamTruncated, fmt.Sprintf("stream ended after %d token chunks without finish_reason or [DONE]", len(res.ChunkTimes))}
	}
	return &failure{results.ErrStreamTruncated, fmt.Sprintf("stream broken after %d token chunks: %v", len(res.ChunkTimes), readErr)}
}

// errorMessage extracts a readable message from an error payload: an
// object {"error": {...}} or {"error": "..."}, a bare error object
// {"message": ...}, or anything else as a bounded excerpt.
func errorMessage(v []byte) string {
	var wrapped struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(v, &wrapped) == nil && len(wrapped.Error) > 0 && string(wrapped.Error) != "null" {
		v = wrapped.Error
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return excerpt([]byte(s))
	}
	var apiErr openai.APIError
	if json.Unmarshal(v, &apiErr) == nil && apiErr.Message != "" {
		msg := apiErr.Message
		if apiErr.Type != "" {
			msg = apiErr.Type + ": " + msg
		}
		if apiErr.Code != nil {
			msg = fmt.Sprintf("%s (code %v)", msg, apiErr.Code)
		}
		return excerpt([]byte(msg))
	}
	return excerpt(v)
}

// excerpt returns at most errorExcerptBytes of b as a string, cut on a
// UTF-8 boundary and marked when cut.
func excerpt(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) <= errorExcerptBytes {
		return string(b)
	}
	n := errorExcerptBytes - len("…")
	for n > 0 && b[n]&0xC0 == 0x80 { // do not cut inside a rune
		n--
	}
	return string(b[:n]) + "…"
}
