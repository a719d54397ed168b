package sim

import (
	"context"
	"errors"
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
	sent    int // output tokens written
}

// next waits for new output; it returns the new tokens and the finish
// reason ("" while running).
func (p *responder) next(ctx context.Context, st *stream) ([]uint32, string, error) {
	for {
		p.s.mu.Lock()
		toks, fin := st.pending, st.finish
		st.pending = nil
		p.s.mu.Unlock()
		if len(toks) > 0 || fin != "" {
			return toks, fin, nil
		}
		select {
		case <-st.notify:
		case <-ctx.Done():
			return nil, "", errClientGone
		case <-p.s.ctx.Done():
			return nil, "", errClientGone
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

// tokenChunk builds the chunk carrying one token's text, with the finish
// reason on the last one.
func (p *responder) tokenChunk(object, text, reason string) {
	p.head(object)
	if p.chat {
		p.buf = append(p.buf, `{"index":0,"delta":{"content":`...)
		p.buf = appendJSONString(p.buf, text)
		p.buf = append(p.buf, `},"logprobs":null,"finish_reason":`...)
		p.buf = append(p.buf, finishJSON(reason)...)
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
		toks, fin, err := p.next(ctx, st)
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
		for i, t := range toks {
			p.sent++
			reason := ""
			if i == len(toks)-1 {
				reason = fin
			}
			p.tokenChunk(object, p.s.word(t), reason)
			if err := p.write(nil); err != nil {
				return err
			}
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
			p.buf = append(p.buf, finishJSON(fin)...)
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

// whole writes a non-streaming response once the request finishes.
func (p *responder) whole(ctx context.Context, st *stream) error {
	var text strings.Builder
	for {
		toks, fin, err := p.next(ctx, st)
		if err != nil {
			return err
		}
		for _, t := range toks {
			text.WriteString(p.s.word(t))
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
			p.buf = appendJSONString(p.buf, text.String())
			p.buf = append(p.buf, `,"refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[],"reasoning_content":null},"logprobs":null,"finish_reason":`...)
		} else {
			p.buf = append(p.buf, `,"choices":[{"index":0,"text":`...)
			p.buf = appendJSONString(p.buf, text.String())
			p.buf = append(p.buf, `,"logprobs":null,"finish_reason":`...)
		}
		p.buf = append(p.buf, finishJSON(fin)...)
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
