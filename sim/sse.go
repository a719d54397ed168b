package sim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

var errClientGone = errors.New("sim: client went away")

// responder writes one request's response, streaming (SSE, one chunk per
// token, as vLLM's serving_chat / serving_completion do) or whole.
type responder struct {
	s       *Server
	w       http.ResponseWriter
	req     *genRequest
	er      *Request
	id      string
	chat    bool
	created int64
	buf     []byte
	sent    int    // output tokens written
	tool    string // the function the response calls (chat with tools), or ""
}

// next waits for new output; it returns the new tokens, how many of them
// each step gave, and the finish reason ("" while running).
func (p *responder) next(ctx context.Context, st *stream) ([]uint32, []int, string, error) {
	for {
		p.s.mu.Lock()
		toks, steps, fin := st.pending, st.steps, st.finish
		st.pending, st.steps = nil, nil
		p.s.mu.Unlock()
		if len(toks) > 0 || fin != "" {
			return toks, steps, fin, nil
		}
		select {
		case <-st.notify:
		case <-ctx.Done():
			return nil, nil, "", errClientGone
		case <-p.s.ctx.Done():
			return nil, nil, "", errClientGone
		}
	}
}

// head starts a chunk: {"id":…,"object":…,"created":…,"model":…,"choices":[
func (p *responder) head(object string) {
	p.buf = append(p.buf[:0], "data: "...)
	p.buf = append(p.buf, `{"id":`...)
	p.buf = appendJSONString(p.buf, p.id)
	p.buf = append(p.buf, `,"object":"`...)
	p.buf = append(p.buf, object...)
	p.buf = append(p.buf, `","created":`...)
	p.buf = strconv.AppendInt(p.buf, p.created, 10)
	p.buf = append(p.buf, `,"model":`...)
	p.buf = appendJSONString(p.buf, p.s.cfg.ServedModelName)
	p.buf = append(p.buf, `,"choices":[`...)
}

func (p *responder) usage(completion int) {
	p.buf = appendUsage(p.buf, len(p.er.Prompt), completion, p.er.CachedTokens(), p.s.cfg.EnablePromptTokensDetails)
}

// tail ends a chunk, with continuous usage when asked.
func (p *responder) tail(extra string) {
	p.buf = append(p.buf, ']')
	p.buf = append(p.buf, extra...)
	if p.req.continuousUsage() {
		p.buf = append(p.buf, `,"usage":`...)
		p.usage(p.sent)
	}
	p.buf = append(p.buf, "}\n\n"...)
}

func (p *responder) write(f http.Flusher) error {
	if _, err := p.w.Write(p.buf); err != nil {
		return errClientGone
	}
	if f != nil {
		f.Flush()
	}
	return nil
}

func finishJSON(reason string) string {
	if reason == "" {
		return "null"
	}
	return `"` + reason + `"`
}

// What an output token of a chat response is.
const (
	kindContent   = iota
	kindReasoning // among the first reasoning_tokens
	kindToolName  // the first token after the reasoning, when the request makes the model call a tool
	kindToolArgs  // the tokens after that one: pieces of the call's arguments
)

// kind says what output token i (0-based) of the response is.
func (p *responder) kind(i int) int {
	switch {
	case !p.chat:
		return kindContent
	case i < p.s.cfg.ReasoningTokens:
		return kindReasoning
	case p.tool == "":
		return kindContent
	case i == p.s.cfg.ReasoningTokens:
		return kindToolName
	}
	return kindToolArgs
}

// appendReasoning appends the reasoning members of a delta or message
// holding text, as the configured vLLM version names them (VLLM-NOTES
// §5.5): reasoning_content up to 0.11, both from 0.12 to 0.15, reasoning
// from 0.16.
func (p *responder) appendReasoning(b []byte, text string) []byte {
	plain, legacy := reasoningFields(p.s.cfg.VLLMVersion)
	if plain {
		b = append(b, `"reasoning":`...)
		b = appendJSONString(b, text)
	}
	if legacy {
		if plain {
			b = append(b, ',')
		}
		b = append(b, `"reasoning_content":`...)
		b = appendJSONString(b, text)
	}
	return b
}

// reasoningFields reports which reasoning members a vLLM version writes.
func reasoningFields(version string) (reasoning, reasoningContent bool) {
	var major, minor int
	if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err != nil {
		return false, true
	}
	switch v := major*1000 + minor; {
	case v < 12:
		return false, true
	case v < 16:
		return true, true
	}
	return true, false
}

// toolArgs returns the piece of the tool call's arguments that output
// token text makes, the k-th of the call (1-based; the 0th named the
// function). The pieces join into {"input": "word word …"}.
func toolArgs(text string, k int, last bool) string {
	text = strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < 0x20 {
			return -1
		}
		return r
	}, text)
	if k == 1 {
		text = `{"input": "` + text
	}
	if last {
		text += `"}`
	}
	return text
}

// tokenChunk builds the chunk carrying output token i's text, with the
// finish reason on the last one.
func (p *responder) tokenChunk(object string, i int, text, reason string) {
	p.head(object)
	if p.chat {
		p.buf = append(p.buf, `{"index":0,"delta":{`...)
		switch p.kind(i) {
		case kindReasoning:
			p.buf = p.appendReasoning(p.buf, text)
		case kindToolName:
			args := ""
			if reason != "" {
				args = "{}"
			}
			p.buf = append(p.buf, `"tool_calls":[{"id":`...)
			p.buf = appendJSONString(p.buf, p.toolID())
			p.buf = append(p.buf, `,"type":"function","index":0,"function":{"name":`...)
			p.buf = appendJSONString(p.buf, p.tool)
			p.buf = append(p.buf, `,"arguments":`...)
			p.buf = appendJSONString(p.buf, args)
			p.buf = append(p.buf, `}}]`...)
		case kindToolArgs:
			p.buf = append(p.buf, `"tool_calls":[{"index":0,"function":{"arguments":`...)
			p.buf = appendJSONString(p.buf, toolArgs(text, i-p.s.cfg.ReasoningTokens, reason != ""))
			p.buf = append(p.buf, `}}]`...)
		default:
			p.buf = append(p.buf, `"content":`...)
			p.buf = appendJSONString(p.buf, text)
		}
		p.buf = append(p.buf, `},"logprobs":null,"finish_reason":`...)
		p.buf = append(p.buf, finishJSON(p.finishReason(reason))...)
		if reason != "" {
			p.buf = append(p.buf, `,"stop_reason":null`...)
		}
		p.buf = append(p.buf, `,"token_ids":null}`...)
		p.tail("")
		return
	}
	p.buf = append(p.buf, `{"index":0,"text":`...)
	p.buf = appendJSONString(p.buf, text)
	p.buf = append(p.buf, `,"logprobs":null,"finish_reason":`...)
	p.buf = append(p.buf, finishJSON(reason)...)
	p.buf = append(p.buf, `,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}`...)
	if p.req.continuousUsage() {
		p.tail("")
	} else {
		p.tail(`,"usage":null`)
	}
}

// finishReason is the finish_reason sent for the engine's reason: vLLM
// reports "tool_calls" instead when the response called a tool.
func (p *responder) finishReason(reason string) string {
	if reason != "" && p.tool != "" && p.sent > p.s.cfg.ReasoningTokens {
		return "tool_calls"
	}
	return reason
}

// toolID is the id of the response's tool call, derived from its own.
func (p *responder) toolID() string {
	return "chatcmpl-tool-" + strings.TrimPrefix(p.id, "chatcmpl-")
}

// stream writes the SSE response. vLLM sends nothing until the first token;
// then, for chat, a role chunk and the first content chunk back to back.
func (p *responder) stream(ctx context.Context, st *stream) error {
	flusher, _ := p.w.(http.Flusher)
	object := "text_completion"
	if p.chat {
		object = "chat.completion.chunk"
	}
	first := true
	for {
		toks, steps, fin, err := p.next(ctx, st)
		if err != nil {
			return err
		}
		if first {
			h := p.w.Header()
			h.Set("Content-Type", "text/event-stream; charset=utf-8")
			h.Set("Cache-Control", "no-cache")
			p.w.WriteHeader(http.StatusOK)
			if p.chat {
				p.head(object)
				p.buf = append(p.buf, `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}`...)
				p.tail(`,"prompt_token_ids":null`)
				if err := p.write(nil); err != nil {
					return err
				}
			}
			first = false
		}
		if err := p.chunks(object, toks, steps, fin); err != nil {
			return err
		}
		if fin != "" && len(toks) == 0 {
			// Aborted by the engine without a final token: close the
			// choice with an empty delta carrying the reason.
			p.head(object)
			if p.chat {
				p.buf = append(p.buf, `{"index":0,"delta":{},"logprobs":null,"finish_reason":`...)
			} else {
				p.buf = append(p.buf, `{"index":0,"text":"","logprobs":null,"finish_reason":`...)
			}
			p.buf = append(p.buf, finishJSON(p.finishReason(fin))...)
			p.buf = append(p.buf, `,"stop_reason":null}`...)
			p.tail("")
			if err := p.write(nil); err != nil {
				return err
			}
		}
		if fin != "" {
			if p.req.includeUsage() {
				p.head(object)
				p.buf = append(p.buf, `],"usage":`...)
				p.usage(p.sent)
				p.buf = append(p.buf, "}\n\n"...)
				if err := p.write(nil); err != nil {
					return err
				}
			}
			p.buf = append(p.buf[:0], "data: [DONE]\n\n"...)
			return p.write(flusher)
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// chunks writes the tokens of the steps as vLLM streams them: one chunk
// per step, carrying the text of every token the step gave (several with
// speculative decoding), split where the kind of output changes (reasoning
// to content) and one a token for tool calls; the finish reason rides on
// the last.
func (p *responder) chunks(object string, toks []uint32, steps []int, fin string) error {
	var text strings.Builder
	for _, n := range steps {
		group := toks[:n]
		toks = toks[n:]
		for len(group) > 0 {
			start, kind := p.sent, p.kind(p.sent)
			k := 1
			for kind <= kindReasoning && k < len(group) && p.kind(start+k) == kind {
				k++
			}
			text.Reset()
			for _, t := range group[:k] {
				text.WriteString(p.s.word(t))
			}
			group = group[k:]
			p.sent += k
			reason := ""
			if len(group) == 0 && len(toks) == 0 {
				reason = fin
			}
			p.tokenChunk(object, start, text.String(), reason)
			if err := p.write(nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// whole writes a non-streaming response once the request finishes.
func (p *responder) whole(ctx context.Context, st *stream) error {
	var content, reasoning, args strings.Builder
	for {
		toks, _, fin, err := p.next(ctx, st)
		if err != nil {
			return err
		}
		for _, t := range toks {
			switch w := p.s.word(t); p.kind(p.sent) {
			case kindReasoning:
				reasoning.WriteString(w)
			case kindToolName:
			case kindToolArgs:
				args.WriteString(w)
			default:
				content.WriteString(w)
			}
			p.sent++
		}
		if fin == "" {
			continue
		}
		p.buf = append(p.buf[:0], `{"id":`...)
		p.buf = appendJSONString(p.buf, p.id)
		if p.chat {
			p.buf = append(p.buf, `,"object":"chat.completion"`...)
		} else {
			p.buf = append(p.buf, `,"object":"text_completion"`...)
		}
		p.buf = append(p.buf, `,"created":`...)
		p.buf = strconv.AppendInt(p.buf, p.created, 10)
		p.buf = append(p.buf, `,"model":`...)
		p.buf = appendJSONString(p.buf, p.s.cfg.ServedModelName)
		if p.chat {
			p.buf = append(p.buf, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
			called := p.tool != "" && p.sent > p.s.cfg.ReasoningTokens
			if called {
				p.buf = append(p.buf, `null`...)
			} else {
				p.buf = appendJSONString(p.buf, content.String())
			}
			p.buf = append(p.buf, `,"refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[`...)
			if called {
				a := "{}"
				if args.Len() > 0 {
					a = toolArgs(args.String(), 1, true)
				}
				p.buf = append(p.buf, `{"id":`...)
				p.buf = appendJSONString(p.buf, p.toolID())
				p.buf = append(p.buf, `,"type":"function","function":{"name":`...)
				p.buf = appendJSONString(p.buf, p.tool)
				p.buf = append(p.buf, `,"arguments":`...)
				p.buf = appendJSONString(p.buf, a)
				p.buf = append(p.buf, `}}`...)
			}
			p.buf = append(p.buf, `],`...)
			if reasoning.Len() > 0 {
				p.buf = p.appendReasoning(p.buf, reasoning.String())
			} else {
				p.buf = append(p.buf, `"reasoning_content":null`...)
			}
			p.buf = append(p.buf, `},"logprobs":null,"finish_reason":`...)
		} else {
			p.buf = append(p.buf, `,"choices":[{"index":0,"text":`...)
			p.buf = appendJSONString(p.buf, content.String())
			p.buf = append(p.buf, `,"logprobs":null,"finish_reason":`...)
		}
		p.buf = append(p.buf, finishJSON(p.finishReason(fin))...)
		p.buf = append(p.buf, `,"stop_reason":null,"prompt_logprobs":null}],"usage":`...)
		p.usage(p.sent)
		p.buf = append(p.buf, "}\n"...)
		p.w.Header().Set("Content-Type", "application/json")
		p.w.WriteHeader(http.StatusOK)
		if _, err := p.w.Write(p.buf); err != nil {
			return errClientGone
		}
		return nil
	}
}
