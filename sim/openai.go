package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/servebench/servebench/internal/tokenizer"
)

// APIError is an OpenAI-style error as vLLM (v0.10.1 onward) returns it:
// {"error":{"message":…,"type":…,"param":…,"code":…}} with HTTP status
// Code.
type APIError struct {
	Message string
	Type    string // "BadRequestError", "NotFoundError", …
	Param   string // the offending field, or "" for null
	Code    int    // HTTP status
}

func (e *APIError) Error() string { return fmt.Sprintf("%d %s: %s", e.Code, e.Type, e.Message) }

// MarshalJSON encodes the wire shape.
func (e *APIError) MarshalJSON() ([]byte, error) {
	type info struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	}
	in := info{Message: e.Message, Type: e.Type, Code: e.Code}
	if e.Param != "" {
		in.Param = &e.Param
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		Error info `json:"error"`
	}{in}); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func badRequest(param, format string, args ...any) *APIError {
	return &APIError{Message: fmt.Sprintf(format, args...), Type: "BadRequestError", Param: param, Code: 400}
}

// validateLengths applies vLLM's up-front length check (v0.10.1+ messages).
// maxTokens 0 means the request did not set it.
func validateLengths(maxModelLen, prompt, maxTokens int) error {
	if prompt >= maxModelLen {
		return badRequest("input_tokens", "This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.",
			maxModelLen, prompt)
	}
	if maxTokens > 0 && prompt+maxTokens > maxModelLen {
		return badRequest("max_tokens", "'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d).",
			maxTokens, maxModelLen, prompt, maxTokens, maxModelLen, prompt)
	}
	return nil
}

// promptIDs turns text into token IDs whose count is the tokenizer's
// count. IDs come from the text's space-led pieces, so texts sharing a
// prefix share leading IDs (what prefix caching needs); for servebench's
// synthetic prompts, whose words are one token each, pieces and tokens
// coincide exactly. Other text is split per piece and counted piece by
// piece, which is exact for the count and approximate only in where a
// multi-token piece's IDs fall.
func promptIDs(tok *tokenizer.Tokenizer, text string) []uint32 {
	return PromptIDs(tok, text, -1)
}

// PromptIDs returns the token IDs the server gives text (see promptIDs).
// count is text's token count under tok when the caller knows it (a
// synthetic prompt's drawn length), which saves counting it; a negative
// count counts it. Virtual-time runs use it to submit to an Engine exactly
// what an HTTP request with this text would have.
func PromptIDs(tok *tokenizer.Tokenizer, text string, count int) []uint32 {
	n := count
	if n < 0 {
		n = tok.Count(text)
	}
	pieces := splitPieces(text)
	ids := make([]uint32, 0, n)
	if len(pieces) == n {
		for _, p := range pieces {
			ids = append(ids, pieceID(p, 0))
		}
		return ids
	}
	for _, p := range pieces {
		c := tok.Count(p)
		for k := 0; k < c && len(ids) < n; k++ {
			ids = append(ids, pieceID(p, k))
		}
	}
	for k := 0; len(ids) < n; k++ {
		ids = append(ids, pieceID(text, k+1<<20))
	}
	return ids
}

// splitPieces cuts text before every whitespace run that follows a
// non-space character: " the cat" → [" the", " cat"].
func splitPieces(text string) []string {
	var out []string
	start := 0
	prevSpace := true
	for i, r := range text {
		space := unicode.IsSpace(r)
		if space && !prevSpace && i > start {
			out = append(out, text[start:i])
			start = i
		}
		prevSpace = space
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

func pieceID(p string, k int) uint32 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(p))
	return uint32(mix64(h.Sum64() + uint64(k)))
}

// appendJSONString appends s as a JSON string literal.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				switch c {
				case '\n':
					b = append(b, '\\', 'n')
				case '\r':
					b = append(b, '\\', 'r')
				case '\t':
					b = append(b, '\\', 't')
				default:
					b = append(b, `\u00`...)
					b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
				}
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// chatMessage is one message of a chat request; content is a string or an
// array of parts.
type chatMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		Function struct {
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// text returns the message's text content (text parts concatenated).
func (m chatMessage) text() (string, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", fmt.Errorf("content must be a string or an array of parts")
	}
	var out string
	for _, p := range parts {
		if p.Type == "text" || p.Type == "" {
			out += p.Text
		}
	}
	return out, nil
}

type streamOptions struct {
	IncludeUsage         *bool `json:"include_usage"`
	ContinuousUsageStats bool  `json:"continuous_usage_stats"`
}

// genRequest holds the fields chat and completions requests share.
type genRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           int             `json:"min_tokens"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	Tools               []genTool       `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
}

// genTool is the part of a tool definition the simulator reads.
type genTool struct {
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// toolCall returns the function a chat request makes the model call, or
// "": with tools, tool_choice "required" calls the first tool and a named
// choice ({"type":"function","function":{"name":…}}) that one. "auto" (the
// default) and "none" answer with content: the simulated model never
// decides to call a tool by itself.
func (g *genRequest) toolCall() string {
	if len(g.Tools) == 0 {
		return ""
	}
	var mode string
	if json.Unmarshal(g.ToolChoice, &mode) == nil {
		if mode == "required" {
			return g.Tools[0].Function.Name
		}
		return ""
	}
	var named struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(g.ToolChoice, &named) == nil {
		return named.Function.Name
	}
	return ""
}

func (g *genRequest) includeUsage() bool {
	return g.StreamOptions != nil && (g.StreamOptions.IncludeUsage == nil || *g.StreamOptions.IncludeUsage)
}

func (g *genRequest) continuousUsage() bool {
	return g.includeUsage() && g.StreamOptions.ContinuousUsageStats
}

// maxTokens is the requested cap (max_completion_tokens first for chat), 0
// if unset.
func (g *genRequest) maxTokens() int {
	if g.MaxCompletionTokens != nil {
		return *g.MaxCompletionTokens
	}
	if g.MaxTokens != nil {
		return *g.MaxTokens
	}
	return 0
}

// promptTokens resolves the prompt to token IDs: chat messages' text, or a
// completions prompt given as a string, a one-string array or token IDs.
func (g *genRequest) promptTokens(tok *tokenizer.Tokenizer, chat bool) ([]uint32, error) {
	if chat {
		if len(g.Messages) == 0 {
			return nil, badRequest("messages", "messages must not be empty")
		}
		var ids []uint32
		for i, m := range g.Messages {
			t, err := m.text()
			if err != nil {
				return nil, badRequest("messages", "messages[%d]: %v", i, err)
			}
			ids = append(ids, promptIDs(tok, t)...)
			for _, c := range m.ToolCalls {
				ids = append(ids, promptIDs(tok, c.Function.Arguments)...)
			}
		}
		return ids, nil
	}
	var s string
	if err := json.Unmarshal(g.Prompt, &s); err == nil {
		return promptIDs(tok, s), nil
	}
	var ss []string
	if err := json.Unmarshal(g.Prompt, &ss); err == nil && len(ss) == 1 {
		return promptIDs(tok, ss[0]), nil
	}
	var ids []uint32
	if err := json.Unmarshal(g.Prompt, &ids); err == nil && len(ids) > 0 {
		return ids, nil
	}
	return nil, badRequest("prompt", "prompt must be a string, a one-element array of strings, or an array of token IDs")
}

// usage is the OpenAI usage object.
func appendUsage(b []byte, prompt, completion, cached int, details bool) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	if details && cached > 0 {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(cached), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}
