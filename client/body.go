package client

import (
	"github.com/servebench/servebench/results"

	"encoding/json"
	"fmt"

	openai "github.com/sashabaranov/go-openai"
)

// streamOptions is the OpenAI stream_options object plus vLLM's
// continuous_usage_stats. go-openai's StreamOptions has include_usage only.
type streamOptions struct {
	IncludeUsage         bool `json:"include_usage"`
	ContinuousUsageStats bool `json:"continuous_usage_stats,omitempty"`
}

// encodeBody builds the JSON body of r.
//
// go-openai's request types cannot carry this body: they drop
// "temperature": 0 (omitempty) and have no hook for extra fields (ignore_eos,
// min_tokens, continuous_usage_stats, Request.Extra). So the body is a map
// (encoded with sorted keys, hence deterministic) holding go-openai's message
// type, and Extra is spliced over it last, overriding the client's own keys.
// It runs once per request, off the per-chunk path.
func encodeBody(r *Request) ([]byte, error) {
	body := make(map[string]any, 10+len(r.Extra))
	if r.Model != "" {
		body["model"] = r.Model
	}
	switch r.API {
	case results.APIChat:
		msgs := make([]openai.ChatCompletionMessage, 0, 2+len(r.History))
		if r.System != "" {
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: r.System})
		}
		for _, m := range r.History {
			msgs = append(msgs, chatMessage(&m))
		}
		if r.Prompt != "" || len(r.History) == 0 {
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: r.Prompt})
		}
		body["messages"] = msgs
		if len(r.Tools) > 0 {
			body["tools"] = r.Tools
		}
	case results.APICompletions:
		body["prompt"] = r.Prompt
	case results.APIEmbeddings:
		// Only the input: an embeddings request has no stream, no
		// max_tokens and no sampling options.
		if len(r.Inputs) > 0 {
			body["input"] = r.Inputs
		} else {
			body["input"] = r.Prompt
		}
		for k, v := range r.Extra {
			body[k] = v
		}
		return marshalBody(body)
	default:
		return nil, fmt.Errorf("api %q: want %q, %q or %q", r.API, results.APIChat, results.APICompletions, results.APIEmbeddings)
	}
	body["stream"] = r.Stream
	if r.Stream && (r.IncludeUsage || r.ContinuousUsage) {
		// continuous_usage_stats has no effect without include_usage.
		body["stream_options"] = streamOptions{IncludeUsage: true, ContinuousUsageStats: r.ContinuousUsage}
	}
	if r.MaxTokens > 0 {
		body["max_tokens"] = r.MaxTokens
	}
	if r.MinTokens > 0 {
		body["min_tokens"] = r.MinTokens
	}
	if r.IgnoreEOS {
		body["ignore_eos"] = true
	}
	if r.Temperature != nil {
		body["temperature"] = *r.Temperature
	}
	for k, v := range r.Extra {
		body[k] = v
	}
	return marshalBody(body)
}

// chatMessage is m as go-openai encodes it.
func chatMessage(m *Message) openai.ChatCompletionMessage {
	out := openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
	if len(m.ToolCalls) > 0 {
		out.ToolCalls = make([]openai.ToolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			out.ToolCalls[i] = openai.ToolCall{ID: c.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: c.Name, Arguments: c.Arguments}}
		}
	}
	return out
}

func marshalBody(body map[string]any) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode request body: %w", err)
	}
	return b, nil
}
