package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Tokenize is a question to the server's /tokenize endpoint: how many
// tokens does it count in Prompt, alone or as the user message of a chat
// request. The body speaks the server's dialect (CountTokens).
type Tokenize struct {
	Model  string
	Prompt string
	// Chat asks for the chat form: the messages a chat request would send
	// (System, when not empty, then Prompt as the user message) with the
	// chat template and its generation prompt applied, as the server counts
	// a chat request's prompt.
	Chat   bool
	System string
	// Specials adds the special tokens (BOS) a completions request gets
	// (add_special_tokens); the chat form leaves them to the template.
	Specials bool
}

// maxTokenizeBytes bounds a /tokenize response: the token IDs of a long
// prompt, a few characters each.
const maxTokenizeBytes = 64 << 20

// Tokenize dialects: the body each engine's POST /tokenize reads.
const (
	dialectUnknown = iota
	// dialectPrompt is vLLM's and SGLang's (and the simulator's):
	// {"prompt", "add_special_tokens"} or {"messages",
	// "add_generation_prompt"} → {"count", "tokens"}.
	dialectPrompt
	// dialectContent is llama.cpp's: {"content", "add_special"} →
	// {"tokens"}; a body without content is answered {"tokens": []}, and
	// the chat form is the text POST /apply-template makes of the
	// messages.
	dialectContent
)

// ErrTokenizeNotUnderstood is CountTokens' error when the server counted
// no token in a text that has some, in every dialect it was asked in.
var ErrTokenizeNotUnderstood = errors.New("this server's /tokenize did not understand the request")

// CountTokens asks the server's POST /tokenize for a token count, in the
// body the server reads: vLLM's {"prompt"} (or {"messages"}) first, and,
// when that is refused or counts a non-empty text as no token at all,
// llama.cpp's {"content", "add_special"} (its chat form through
// /apply-template). The dialect that answered is kept for the client's
// later questions. A non-empty text that every dialect counts as 0 tokens
// is ErrTokenizeNotUnderstood. The request carries the configured headers
// and API key; a server without the endpoint answers 404, and the error
// says so. It is safe for concurrent use.
func (c *Client) CountTokens(ctx context.Context, t Tokenize) (int, error) {
	d := int(c.tokenizeDialect.Load())
	if d != dialectUnknown {
		return c.countIn(ctx, d, t)
	}
	n, err := c.countIn(ctx, dialectPrompt, t)
	if err == nil && (n > 0 || strings.TrimSpace(t.Prompt) == "") {
		c.tokenizeDialect.Store(dialectPrompt)
		return n, nil
	}
	var notFound *noEndpointError
	if errors.As(err, &notFound) || ctx.Err() != nil {
		return 0, err
	}
	n2, err2 := c.countIn(ctx, dialectContent, t)
	switch {
	case err2 == nil && n2 > 0:
		c.tokenizeDialect.Store(dialectContent)
		return n2, nil
	case err == nil:
		return 0, fmt.Errorf("POST %s/tokenize: %w: it counted 0 tokens in a text of %d bytes, asked as vLLM asks ({\"prompt\": …}) and as llama.cpp asks ({\"content\": …}); name the model's tokenizer.json in prompts.tokenizer instead",
			c.root, ErrTokenizeNotUnderstood, len(t.Prompt))
	}
	return 0, err
}

// noEndpointError is a server without POST /tokenize.
type noEndpointError struct{ root string }

func (e *noEndpointError) Error() string {
	return fmt.Sprintf("POST %s/tokenize: 404: the server has no /tokenize endpoint (vLLM, SGLang and llama.cpp have one); name the model's tokenizer.json instead", e.root)
}

// countIn asks POST /tokenize in dialect d.
func (c *Client) countIn(ctx context.Context, d int, t Tokenize) (int, error) {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	var msgs []message
	if t.Chat {
		if t.System != "" {
			msgs = append(msgs, message{"system", t.System})
		}
		msgs = append(msgs, message{"user", t.Prompt})
	}
	body := map[string]any{}
	switch {
	case d == dialectContent && t.Chat:
		var out struct {
			Prompt *string `json:"prompt"`
		}
		if err := c.postJSON(ctx, "/apply-template", map[string]any{"messages": msgs}, &out); err != nil {
			return 0, err
		}
		if out.Prompt == nil {
			return 0, fmt.Errorf("POST %s/apply-template: the answer holds no prompt", c.root)
		}
		body["content"], body["add_special"] = *out.Prompt, true
	case d == dialectContent:
		body["content"], body["add_special"] = t.Prompt, t.Specials
	case t.Chat:
		body["messages"], body["add_generation_prompt"] = msgs, true
	default:
		body["prompt"], body["add_special_tokens"] = t.Prompt, t.Specials
	}
	if t.Model != "" && d == dialectPrompt {
		body["model"] = t.Model
	}
	var out struct {
		Count  *int    `json:"count"`
		Tokens []int64 `json:"tokens"`
	}
	if err := c.postJSON(ctx, "/tokenize", body, &out); err != nil {
		return 0, err
	}
	switch {
	case out.Count != nil:
		return *out.Count, nil
	case out.Tokens != nil:
		return len(out.Tokens), nil
	}
	return 0, fmt.Errorf("POST %s/tokenize: the answer has neither count nor tokens", c.root)
}

// postJSON posts body as JSON to the server's root + path and decodes a
// 200 answer into out.
func (c *Client) postJSON(ctx context.Context, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.root+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	c.setHeaders(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s%s: %s", c.root, path, c.redact.String(err.Error()))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenizeBytes))
	if err != nil {
		return fmt.Errorf("POST %s%s: %w", c.root, path, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound && path == "/tokenize" && !bytes.Contains(b, []byte(`"model"`)):
		return &noEndpointError{c.root}
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("POST %s%s: %d: %s", c.root, path, resp.StatusCode, c.redact.String(excerpt(b)))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("POST %s%s: the answer is not JSON: %s", c.root, path, c.redact.String(excerpt(b)))
	}
	return nil
}
