package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
)

// TestToolCallTTFT is issue 10's acceptance check for tool calls: an agent
// turn answered with a tool call, streamed as vLLM streams it (a role
// chunk at once, then the call's first delta naming the function after a
// delay, then the arguments in pieces), has its TTFT at the first
// tool-call delta, and its ITL between the argument pieces.
func TestToolCallTTFT(t *testing.T) {
	t.Parallel()
	const (
		firstCall = 80 * time.Millisecond
		gap       = 30 * time.Millisecond
	)
	const head = `data: {"id":"chatcmpl-t","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":`
	events := []string{
		`{"tool_calls":[{"id":"chatcmpl-tool-1","type":"function","index":0,"function":{"name":"get_weather","arguments":""}}],"reasoning_content":null},"logprobs":null,"finish_reason":null}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}],"reasoning_content":null},"logprobs":null,"finish_reason":null}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}],"reasoning_content":null},"logprobs":null,"finish_reason":"tool_calls","stop_reason":null}]}`,
	}
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		io.WriteString(w, head+`{"role":"assistant","content":"","reasoning_content":null},"logprobs":null,"finish_reason":null}]}`+"\n\n")
		f.Flush()
		for i, e := range events {
			time.Sleep(time.Until(t0.Add(firstCall + time.Duration(i)*gap)))
			io.WriteString(w, head+e+"\n\n")
			f.Flush()
		}
		io.WriteString(w, `data: {"id":"chatcmpl-t","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":40,"total_tokens":52,"completion_tokens":12}}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, Config{})
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}}
	res, reply := c.DoReply(context.Background(), &Request{API: results.APIChat, Model: "m", Prompt: "weather in Paris?",
		Tools: tools, Extra: map[string]any{"tool_choice": "required"}, Stream: true, IncludeUsage: true})
	if res.Outcome != results.OK {
		t.Fatalf("outcome %s: %s", res.Outcome, res.Error)
	}
	if !strings.Contains(string(body), `"tools":[{"function":{"name":"get_weather"},"type":"function"}]`) {
		t.Errorf("the request did not carry the tools: %s", body)
	}
	ttft, ok := res.TTFT()
	if !ok {
		t.Fatal("no TTFT: the tool-call deltas were not counted as tokens")
	}
	if len(res.ChunkTimes) != 3 || ttft != res.ChunkTimes[0] {
		t.Fatalf("TTFT %v, chunk times %v: want TTFT at the first of 3 tool-call deltas", ttft, res.ChunkTimes)
	}
	// The server wrote the first delta firstCall after it started, which
	// is after Sent; a TTFT below that would be the role chunk's.
	if ttft < firstCall {
		t.Errorf("TTFT %v is before the first tool-call delta (written %v after the request arrived)", ttft, firstCall)
	}
	if ttfc, ok := res.TTFC(); !ok || ttfc != ttft {
		t.Errorf("TTFC %v (%v), want the TTFT %v: a tool call is the answer, not reasoning", ttfc, ok, ttft)
	}
	// The argument pieces give the ITLs (their values follow the server's
	// writes, which a loaded machine delays).
	if itls := res.AppendChunkITLs(nil); len(itls) != 2 {
		t.Errorf("chunk ITLs %v: want the 2 gaps between the 3 tool-call deltas", itls)
	}
	if res.FinishReason != "tool_calls" || res.OutputTokens != 12 {
		t.Errorf("finish %q, output tokens %d", res.FinishReason, res.OutputTokens)
	}
	if reply != "" {
		t.Errorf("reply %q: a tool call is not content", reply)
	}
}

// TestDoReply checks the reply text a conversation carries into its next
// turn: the content as received, without the reasoning, streamed or whole.
func TestDoReply(t *testing.T) {
	t.Parallel()
	reasoning, err := os.ReadFile(filepath.Join("testdata", "sse", "vllm_reasoning.sse"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case strings.Contains(string(b), `"stream":false`):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","reasoning":"hm","content":"whole answer"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`)
		case strings.Contains(string(b), `"prompt"`):
			w.Header().Set("Content-Type", "text/event-stream")
			for _, p := range []string{"once", " upon"} {
				fmt.Fprintf(w, `data: {"choices":[{"index":0,"text":%q,"finish_reason":null}]}`+"\n\n", p)
			}
			io.WriteString(w, `data: {"choices":[{"index":0,"text":" a time","finish_reason":"length"}]}`+"\n\ndata: [DONE]\n\n")
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write(reasoning)
		}
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, Config{})
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"chat stream with reasoning", Request{API: results.APIChat, Prompt: "q", Stream: true}, "42"},
		{"completions stream", Request{API: results.APICompletions, Prompt: "q", Stream: true}, "once upon a time"},
		{"chat whole", Request{API: results.APIChat, Prompt: "q"}, "whole answer"},
	}
	for _, tc := range tests {
		res, reply := c.DoReply(context.Background(), &tc.req)
		if res.Outcome != results.OK || reply != tc.want {
			t.Errorf("%s: outcome %s %s, reply %q, want %q", tc.name, res.Outcome, res.Error, reply, tc.want)
		}
	}
}

// TestToolMessagesBody: a session's history goes out as OpenAI's chat
// messages: an assistant message that calls tools carries tool_calls
// {id, type: function, function: {name, arguments}} (and its text when it
// has one, no content key when not), a tool message its tool_call_id, and
// an empty Prompt after a history sends no user message of its own.
func TestToolMessagesBody(t *testing.T) {
	t.Parallel()
	r := &Request{API: results.APIChat, Model: "m", System: "sys", History: []Message{
		{Role: "user", Content: "fix the bug"},
		{Role: "assistant", Content: "looking", ToolCalls: []ToolCall{{ID: "call_1", Name: "tool", Arguments: "{}"}, {ID: "call_2", Name: "tool", Arguments: `{"a":1}`}}},
		{Role: "tool", Content: "result one", ToolCallID: "call_1"},
		{Role: "tool", Content: "result two", ToolCallID: "call_2"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_3", Name: "task", Arguments: "{}"}}},
		{Role: "tool", Content: "sub-agent's answer", ToolCallID: "call_3"},
	}}
	b, err := encodeBody(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `"messages":[{"role":"system","content":"sys"},{"role":"user","content":"fix the bug"},` +
		`{"role":"assistant","content":"looking","tool_calls":[{"id":"call_1","type":"function","function":{"name":"tool","arguments":"{}"}},` +
		`{"id":"call_2","type":"function","function":{"name":"tool","arguments":"{\"a\":1}"}}]},` +
		`{"role":"tool","content":"result one","tool_call_id":"call_1"},{"role":"tool","content":"result two","tool_call_id":"call_2"},` +
		`{"role":"assistant","tool_calls":[{"id":"call_3","type":"function","function":{"name":"task","arguments":"{}"}}]},` +
		`{"role":"tool","content":"sub-agent's answer","tool_call_id":"call_3"}]`
	if !strings.Contains(string(b), want) {
		t.Errorf("body %s\nwant it to hold %s", b, want)
	}
	r.History = nil
	r.Prompt = "hello"
	if b, _ := encodeBody(r); !strings.Contains(string(b), `{"role":"user","content":"hello"}]`) {
		t.Errorf("a request without history lost its prompt: %s", b)
	}
}
