package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Tokenize is a question to the server's /tokenize endpoint (vLLM's and
// SGLang's; the simulator's too): how many tokens does it count in Prompt,
// alone or as the user message of a chat request.
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

// CountTokens asks the server's POST /tokenize for a token count. The
// request carries the configured headers and API key; a server without
// the endpoint answers 404, and the error says so. It is safe for
// concurrent use.
func (c *Client) CountTokens(ctx context.Context, t Tokenize) (int, error) {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	body := map[string]any{}
	if t.Model != "" {
		body["model"] = t.Model
	}
	if t.Chat {
		var msgs []message
		if t.System != "" {
			msgs = append(msgs, message{"system", t.System})
		}
		body["messages"] = append(msgs, message{"user", t.Prompt})
		body["add_generation_prompt"] = true
	} else {
		body["prompt"] = t.Prompt
		body["add_special_tokens"] = t.Specials
	}
	data, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.root+"/tokenize", bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	c.setHeaders(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("POST %s/tokenize: %s", c.root, c.redact.String(err.Error()))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenizeBytes))
	if err != nil {
		return 0, fmt.Errorf("POST %s/tokenize: %w", c.root, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound && !bytes.Contains(b, []byte(`"model"`)):
		return 0, fmt.Errorf("POST %s/tokenize: 404: the server has no /tokenize endpoint (vLLM and SGLang have one); name the model's tokenizer.json instead", c.root)
	case resp.StatusCode != http.StatusOK:
		return 0, fmt.Errorf("POST %s/tokenize: %d: %s", c.root, resp.StatusCode, c.redact.String(excerpt(b)))
	}
	var out struct {
		Count  *int    `json:"count"`
		Tokens []int64 `json:"tokens"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return 0, fmt.Errorf("POST %s/tokenize: the answer is not JSON: %s", c.root, c.redact.String(excerpt(b)))
	}
	switch {
	case out.Count != nil:
		return *out.Count, nil
	case out.Tokens != nil:
		return len(out.Tokens), nil
	}
	return 0, fmt.Errorf("POST %s/tokenize: the answer has neither count nor tokens: %s", c.root, c.redact.String(excerpt(b)))
}
