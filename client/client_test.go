package client

import (
	"github.com/servebench/servebench/results"

	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/golden"
	"github.com/servebench/servebench/internal/slotserver"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// newTestClient returns a Client for srv with short timeouts.
func newTestClient(t testing.TB, baseURL string, cfg Config) *Client {
	t.Helper()
	cfg.BaseURL = baseURL
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestNewBaseURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, root, err string
	}{
		{name: "bare", in: "http://127.0.0.1:8000", root: "http://127.0.0.1:8000"},
		{name: "v1", in: "http://127.0.0.1:8000/v1", root: "http://127.0.0.1:8000"},
		{name: "v1 slash", in: "http://127.0.0.1:8000/v1/", root: "http://127.0.0.1:8000"},
		{name: "prefix", in: "http://localhost:8000/proxy/v1", root: "http://localhost:8000/proxy"},
		{name: "ipv6", in: "http://[::1]:8000", root: "http://[::1]:8000"},
		{name: "loopback range", in: "https://127.3.4.5", root: "https://127.3.4.5"},
		{name: "remote", in: "http://10.0.0.1:8000", err: "not a loopback address"},
		{name: "name", in: "http://example.com", err: "not a loopback address"},
		{name: "scheme", in: "ftp://127.0.0.1", err: "scheme must be http or https"},
		{name: "no host", in: "http:///v1", err: "no host"},
		{name: "credentials", in: "http://u:p@127.0.0.1", err: "no credentials"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := New(Config{BaseURL: tc.in})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.root != tc.root {
				t.Errorf("root %q, want %q", c.root, tc.root)
			}
		})
	}
}

// recorder is an httptest handler that records each request body and
// answers with a short vLLM-style stream or JSON body.
type recorder struct {
	mu     sync.Mutex
	paths  []string
	bodies [][]byte
	auth   []string
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.paths = append(rec.paths, r.URL.Path)
	rec.bodies = append(rec.bodies, b)
	rec.auth = append(rec.auth, r.Header.Get("Authorization"))
	rec.mu.Unlock()
	var req struct {
		Stream bool `json:"stream"`
		Input  any  `json:"input"`
	}
	_ = json.Unmarshal(b, &req)
	if in, ok := req.Input.([]any); ok || req.Input != nil {
		n := max(len(in), 1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[`+strings.Repeat(`{"object":"embedding","index":0,"embedding":[0.5,-0.25]},`, n-1)+
			`{"object":"embedding","index":0,"embedding":[0.5,-0.25]}],"model":"e","usage":{"prompt_tokens":3,"total_tokens":3}}`)
		return
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Write(vllmChatStream(2, false))
}

// TestBody checks the JSON body the server received, against golden files
// in testdata/TestBody (go test ./client -run TestBody -update rewrites them).
func TestBody(t *testing.T) {
	t.Parallel()
	zero, half := 0.0, 0.5
	tests := []struct {
		name string
		req  Request
	}{
		{"chat_stream_vllm", Request{API: results.APIChat, Model: "m", System: "be brief", Prompt: "hello", MaxTokens: 128, MinTokens: 128,
			IgnoreEOS: true, Temperature: &zero, Stream: true, IncludeUsage: true, ContinuousUsage: true}},
		{"chat_stream_plain", Request{API: results.APIChat, Model: "m", Prompt: "hello", Stream: true, IncludeUsage: true}},
		{"chat_continuous_implies_usage", Request{API: results.APIChat, Model: "m", Prompt: "hello", Stream: true, ContinuousUsage: true}},
		{"chat_nonstream", Request{API: results.APIChat, Model: "m", Prompt: "hello", Temperature: &half, IncludeUsage: true}},
		{"completions_stream", Request{API: results.APICompletions, Model: "m", Prompt: "once upon", MaxTokens: 16, Temperature: &zero, Stream: true, IncludeUsage: true}},
		{"extra_overrides", Request{API: results.APIChat, Model: "m", Prompt: "hello", MaxTokens: 16, Temperature: &zero, Stream: true,
			Extra: map[string]any{"top_k": 1, "temperature": 0.7, "chat_template_kwargs": map[string]any{"enable_thinking": false}}}},
		{"no_model", Request{API: results.APICompletions, Prompt: "x", Stream: true}},
		{"chat_history_tools", Request{API: results.APIChat, Model: "m", System: "be brief", Prompt: "and now?", Stream: true, IncludeUsage: true,
			History: []Message{{Role: "user", Content: "first"}, {Role: "assistant", Content: "reply one"}},
			Tools:   []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": map[string]any{"type": "object"}}}},
			Extra:   map[string]any{"tool_choice": "required"}}},
		{"embeddings_one", Request{API: results.APIEmbeddings, Model: "e", Prompt: "embed me", MaxTokens: 16, Stream: true, IncludeUsage: true}},
		{"embeddings_batch", Request{API: results.APIEmbeddings, Model: "e", Inputs: []string{"a", "b"}, Extra: map[string]any{"encoding_format": "float"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			c := newTestClient(t, srv.URL+"/v1", Config{APIKey: "sk-test"})
			res := c.Do(context.Background(), &tc.req)
			if res.Outcome != results.OK {
				t.Fatalf("outcome %s %s: %s", res.Outcome, res.ErrorClass, res.Error)
			}
			wantPath := map[string]string{results.APIChat: "/v1/chat/completions", results.APICompletions: "/v1/completions",
				results.APIEmbeddings: "/v1/embeddings"}[tc.req.API]
			if rec.paths[0] != wantPath || rec.auth[0] != "Bearer sk-test" {
				t.Errorf("path %q auth %q", rec.paths[0], rec.auth[0])
			}
			var v any
			if err := json.Unmarshal(rec.bodies[0], &v); err != nil {
				t.Fatal(err)
			}
			got, _ := json.MarshalIndent(v, "", "  ")
			checkGolden(t, append(got, '\n'))
		})
	}
}

func checkGolden(t *testing.T, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", filepath.FromSlash(t.Name())+".json"), got, *update)
}

func TestModels(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"object":"list","data":[{"id":"Qwen/Qwen3-8B","object":"model","created":1,"owned_by":"vllm","root":"/models/qwen","parent":null,"max_model_len":32768,"permission":[]},{"id":"lora-a","object":"model","created":1,"owned_by":"vllm","root":"a","parent":"Qwen/Qwen3-8B"}]}`)
	}))
	defer srv.Close()
	for _, base := range []string{srv.URL, srv.URL + "/v1", srv.URL + "/v1/"} {
		c := newTestClient(t, base, Config{})
		ids, err := c.Models(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(ids, ",") != "Qwen/Qwen3-8B,lora-a" {
			t.Errorf("%s: ids %v", base, ids)
		}
	}
	// A server error names the target.
	bad := httptest.NewServer(http.NotFoundHandler())
	defer bad.Close()
	c := newTestClient(t, bad.URL, Config{})
	if _, err := c.Models(context.Background()); err == nil || !strings.Contains(err.Error(), bad.URL) {
		t.Errorf("error %v does not name %s", err, bad.URL)
	}
}

func TestNonStreaming(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/completions") && !strings.Contains(r.URL.Path, "chat") {
			// no usage: counted locally
			io.WriteString(w, `{"id":"c","object":"text_completion","choices":[{"index":0,"text":" hello world","finish_reason":"length"}]}`)
			return
		}
		io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","reasoning":"hm","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":2}}}`)
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, Config{Epoch: time.Now()})
	tests := []struct {
		name      string
		req       Request
		output    int
		estimated bool
		finish    string
		diff      int // PromptTokensDiff: usage's 3 minus InputTokens and PromptOverhead; 0 when estimated
	}{
		{"chat", Request{API: results.APIChat, Prompt: "x", InputTokens: 1, PromptOverhead: 1}, 5, false, "stop", 1},
		{"completions_estimated", Request{API: results.APICompletions, Prompt: "x", InputTokens: 1}, 2, true, "length", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := c.Do(context.Background(), &tc.req)
			if res.Outcome != results.OK {
				t.Fatalf("outcome %s %s: %s", res.Outcome, res.ErrorClass, res.Error)
			}
			if res.OutputTokens != tc.output || res.Estimated != tc.estimated || res.FinishReason != tc.finish {
				t.Errorf("output %d estimated %v finish %q", res.OutputTokens, res.Estimated, res.FinishReason)
			}
			if res.PromptTokensDiff != tc.diff {
				t.Errorf("prompt tokens diff %d, want %d (prompt tokens %d, input tokens %d)", res.PromptTokensDiff, tc.diff, res.PromptTokens, res.InputTokens)
			}
			if _, ok := res.E2E(); !ok {
				t.Error("E2E undefined")
			}
			if _, ok := res.TTFT(); ok {
				t.Error("TTFT defined for a non-streaming request")
			}
			if res.Status != 200 || res.Headers < res.Sent || res.End < res.Headers {
				t.Errorf("status %d sent %v headers %v end %v", res.Status, res.Sent, res.Headers, res.End)
			}
		})
	}
}

// TestNonStreamingDrafts reads llama-server's per-request speculative
// decoding from a non-streamed answer's timings (testdata/llamacpp).
func TestNonStreamingDrafts(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile(filepath.Join("testdata", "llamacpp", "chat_spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, Config{Epoch: time.Now()})
	res := c.Do(context.Background(), &Request{API: results.APIChat, Prompt: "write a story about dogs", InputTokens: 5})
	if res.Outcome != results.OK || res.OutputTokens != 200 || res.DraftTokens != 347 || res.DraftAccepted != 65 {
		t.Fatalf("%s %s: output %d, drafts %d accepted %d; want 200 tokens, 347 drafted, 65 accepted", res.Outcome, res.Error, res.OutputTokens, res.DraftTokens, res.DraftAccepted)
	}
}

// faultServer answers according to the "fault" field of the request body
// (sent through Request.Extra), so that failing and healthy requests share
// one server and one client.
func faultServer(t testing.TB) *httptest.Server {
	t.Helper()
	flush := func(w http.ResponseWriter) { w.(http.Flusher).Flush() }
	chunk := func(content string) string {
		return fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", content)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Fault string `json:"fault"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &req)
		sse := func() {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n")
			flush(w)
		}
		wait := func(d time.Duration) {
			select {
			case <-r.Context().Done():
			case <-time.After(d):
			}
		}
		switch req.Fault {
		case "":
			sse()
			for i := range 10 {
				io.WriteString(w, chunk(fmt.Sprint(" t", i)))
				flush(w)
				wait(2 * time.Millisecond)
			}
			io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
			io.WriteString(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":10,\"total_tokens\":14}}\n\ndata: [DONE]\n\n")
		case "reset":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
		case "400":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"'max_tokens' or 'max_completion_tokens' is too large: 5000. This model's maximum context length is 4096 tokens and your request has 10 input tokens (5000 > 4096 - 10).","type":"BadRequestError","param":"max_tokens","code":400}}`)
		case "503":
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, strings.Repeat("overloaded ", 200))
		case "first_byte":
			wait(2 * time.Second)
		case "first_byte_after_headers":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			flush(w)
			wait(2 * time.Second)
		case "idle":
			sse()
			io.WriteString(w, chunk("a"))
			flush(w)
			wait(2 * time.Second)
		case "total":
			sse()
			for i := 0; i < 400 && r.Context().Err() == nil; i++ {
				io.WriteString(w, chunk("a"))
				flush(w)
				wait(5 * time.Millisecond)
			}
		case "truncated":
			sse()
			io.WriteString(w, chunk("a"))
		case "broken":
			sse()
			io.WriteString(w, chunk("a"))
			flush(w)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // mid chunked encoding
			}
		case "finish_then_broken":
			sse()
			io.WriteString(w, chunk("a")+"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
			flush(w)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // before the usage chunk and [DONE]
			}
		case "malformed":
			sse()
			io.WriteString(w, chunk("a")+"data: {\"choices\":[{\"delta\":\n\ndata: [DONE]\n\n")
		case "error_event":
			sse()
			io.WriteString(w, chunk("a")+`data: {"error":{"message":"Internal server error","type":"InternalServerError","param":null,"code":500}}`+"\n\ndata: [DONE]\n\n")
		case "event_error":
			sse()
			io.WriteString(w, chunk("a")+"event: error\ndata: {\"message\":\"engine dead\"}\n\n")
		case "cancel":
			sse()
			io.WriteString(w, chunk("a"))
			flush(w)
			wait(2 * time.Second)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestErrorClasses produces every error class with a purposely faulty
// server, with healthy requests running beside the failing ones on the same
// client: none of them may be affected.
func TestErrorClasses(t *testing.T) {
	t.Parallel()
	srv := faultServer(t)
	// The healthy requests and most faults share one client with the
	// default (minutes-long) timeouts. Each timeout is tested on a client
	// where it alone is short, so a scheduling stall on a busy machine can
	// neither fail a healthy request nor turn one timeout into another.
	c := newTestClient(t, srv.URL, Config{MaxConns: 32})
	firstByte := newTestClient(t, srv.URL, Config{FirstByte: 300 * time.Millisecond})
	idle := newTestClient(t, srv.URL, Config{Idle: 300 * time.Millisecond})
	total := newTestClient(t, srv.URL, Config{Total: 600 * time.Millisecond})

	// A port with nothing listening: connect refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + l.Addr().String()
	l.Close()
	dead := newTestClient(t, deadURL, Config{})

	tests := []struct {
		fault   string
		client  *Client
		outcome results.Outcome
		class   results.ErrorClass
		status  int
		msg     string
	}{
		{fault: "refused", client: dead, outcome: results.Failed, class: results.ErrConnect, msg: "refused"},
		{fault: "reset", outcome: results.Failed, class: results.ErrConnect},
		{fault: "400", outcome: results.Failed, class: results.ErrHTTP4xx, status: 400, msg: "maximum context length is 4096"},
		{fault: "503", outcome: results.Failed, class: results.ErrHTTP5xx, status: 503, msg: "503 Service Unavailable: overloaded"},
		{fault: "first_byte", client: firstByte, outcome: results.Failed, class: results.ErrTimeout, msg: "first-byte timeout"},
		{fault: "first_byte_after_headers", client: firstByte, outcome: results.Failed, class: results.ErrTimeout, status: 200, msg: "first-byte timeout"},
		{fault: "idle", client: idle, outcome: results.Failed, class: results.ErrTimeout, status: 200, msg: "idle-stream timeout"},
		{fault: "total", client: total, outcome: results.Failed, class: results.ErrTimeout, status: 200, msg: "total timeout"},
		{fault: "truncated", outcome: results.Failed, class: results.ErrStreamTruncated, status: 200, msg: "without finish_reason or [DONE]"},
		{fault: "broken", outcome: results.Failed, class: results.ErrStreamTruncated, status: 200, msg: "broken"},
		{fault: "malformed", outcome: results.Failed, class: results.ErrMalformedChunk, status: 200},
		{fault: "error_event", outcome: results.Failed, class: results.ErrServerErrorEvent, status: 200, msg: "InternalServerError: Internal server error (code 500)"},
		{fault: "event_error", outcome: results.Failed, class: results.ErrServerErrorEvent, status: 200, msg: "engine dead"},
		{fault: "cancel", outcome: results.Canceled, class: results.ErrCanceled, status: 200},
	}
	var healthy sync.WaitGroup
	healthyResults := make([]results.Result, 40)
	for i := range healthyResults {
		healthy.Go(func() {
			time.Sleep(time.Duration(i) * 20 * time.Millisecond) // spread over the failures
			healthyResults[i] = c.Do(context.Background(), &Request{API: results.APIChat, Prompt: "x", Stream: true, IncludeUsage: true})
		})
	}
	t.Run("group", func(t *testing.T) {
		for _, tc := range tests {
			t.Run(tc.fault, func(t *testing.T) {
				t.Parallel()
				cl := tc.client
				if cl == nil {
					cl = c
				}
				ctx := context.Background()
				if tc.fault == "cancel" {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, 150*time.Millisecond)
					defer cancel()
				}
				res := cl.Do(ctx, &Request{API: results.APIChat, Prompt: "x", Stream: true, Extra: map[string]any{"fault": tc.fault}})
				if res.Outcome != tc.outcome || res.ErrorClass != tc.class || res.Status != tc.status {
					t.Fatalf("got %s/%s status %d (%s), want %s/%s status %d", res.Outcome, res.ErrorClass, res.Status, res.Error, tc.outcome, tc.class, tc.status)
				}
				t.Logf("%s: %s", res.ErrorClass, res.Error)
				if !strings.Contains(res.Error, tc.msg) || res.Error == "" {
					t.Errorf("message %q does not contain %q", res.Error, tc.msg)
				}
				if len(res.Error) > errorExcerptBytes+64 {
					t.Errorf("message of %d bytes", len(res.Error))
				}
				if res.End == 0 || res.End < res.Sent {
					t.Errorf("end %v sent %v", res.End, res.Sent)
				}
				if _, ok := res.E2E(); ok {
					t.Error("E2E defined for a failed request")
				}
			})
		}
	})
	healthy.Wait()
	for i, res := range healthyResults {
		if res.Outcome != results.OK || res.OutputTokens != 10 || len(res.ChunkTimes) != 10 {
			t.Errorf("healthy request %d: %s %s %q, %d tokens", i, res.Outcome, res.ErrorClass, res.Error, res.OutputTokens)
		}
	}
}

// TestFinishThenBroken: a stream that delivered its finish_reason and then
// broke before the usage chunk and [DONE] completed; its tokens are counted
// locally.
func TestFinishThenBroken(t *testing.T) {
	t.Parallel()
	srv := faultServer(t)
	c := newTestClient(t, srv.URL, Config{})
	res := c.Do(context.Background(), &Request{API: results.APIChat, Prompt: "x", Stream: true, IncludeUsage: true, Extra: map[string]any{"fault": "finish_then_broken"}})
	if res.Outcome != results.OK || res.FinishReason != "stop" || res.OutputTokens != 1 || !res.Estimated {
		t.Fatalf("got %s %s %q finish %q, %d tokens (estimated %v)", res.Outcome, res.ErrorClass, res.Error, res.FinishReason, res.OutputTokens, res.Estimated)
	}
	if _, ok := res.E2E(); !ok {
		t.Error("E2E undefined")
	}
}

// TestConnectionReuse checks the pool: after Warm, rounds of concurrent
// streams reuse the warmed connections (each stream is drained to the end
// of its body after [DONE]), so the server sees exactly MaxConns of them.
func TestConnectionReuse(t *testing.T) {
	t.Parallel()
	const conns = 20
	var mu sync.Mutex
	opened := 0
	srv := httptest.NewUnstartedServer(&recorder{})
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			mu.Lock()
			opened++
			mu.Unlock()
		}
	}
	srv.Start()
	defer srv.Close()
	c := newTestClient(t, srv.URL, Config{MaxConns: conns})
	if n, err := c.Warm(context.Background(), conns); err != nil || n != conns {
		t.Fatalf("warmed %d: %v", n, err)
	}
	for round := range 3 {
		// A finished stream's connection goes back to the pool when the
		// body's end has been drained, in the background after Do
		// returns: wait for all of them, so a busy machine's late drain
		// does not dial a connection this test would count as not reused.
		waitIdle(t, c.pool, conns)
		var wg sync.WaitGroup
		for range conns {
			wg.Go(func() {
				res := c.Do(context.Background(), &Request{API: results.APIChat, Prompt: "x", Stream: true, IncludeUsage: true})
				if res.Outcome != results.OK {
					t.Errorf("round %d: %s %s", round, res.Outcome, res.Error)
				}
			})
		}
		wg.Wait()
	}
	mu.Lock()
	defer mu.Unlock()
	if opened != conns {
		t.Errorf("the server saw %d connections, want %d", opened, conns)
	}
}

// waitIdle waits, up to 10 s, until pool holds n idle connections.
func waitIdle(t *testing.T, pool *wirePool, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		pool.mu.Lock()
		idle := len(pool.idle)
		pool.mu.Unlock()
		if idle >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections back in the pool after 10 s, want %d: a finished stream's connection was not released", idle, n)
		}
	}
}

// TestFirstTokens: the live first-token counter counts each request once,
// when its first token arrives, and sums exactly the TTFTs its records
// carry; a request that gets no token adds nothing.
func TestFirstTokens(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(&recorder{})
	defer srv.Close()
	c := newTestClient(t, srv.URL, Config{MaxConns: 4})
	var sum time.Duration
	for range 5 {
		res := c.Do(context.Background(), &Request{API: results.APIChat, Prompt: "x", Stream: true, IncludeUsage: true})
		ttft, ok := res.TTFT()
		if res.Outcome != results.OK || !ok {
			t.Fatalf("%s %s", res.Outcome, res.Error)
		}
		sum += ttft
	}
	n, got := c.FirstTokens()
	if n != 5 || got != sum {
		t.Errorf("FirstTokens = %d, %v; want 5, %v", n, got, sum)
	}
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer empty.Close()
	c2 := newTestClient(t, empty.URL, Config{})
	_ = c2.Do(context.Background(), &Request{API: results.APIChat, Prompt: "x", Stream: true})
	if n, _ := c2.FirstTokens(); n != 0 {
		t.Errorf("a stream without tokens counted %d first tokens", n)
	}
}

func TestServerVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		status  int
		body    string
		want    string
		wantErr string
	}{
		{"vllm", 200, `{"version":"0.11.2"}`, "0.11.2", ""},
		{"padded", 200, `{"version":" 0.19.0rc1+cu128 "}`, "0.19.0rc1+cu128", ""},
		{"no route", 404, `{"detail":"Not Found"}`, "", "HTTP 404"},
		{"not json", 200, `<html>hello</html>`, "", `no "version" string`},
		{"empty", 200, `{"version":""}`, "", `no "version" string`},
		{"control characters", 200, `{"version":"1.0\u001b[2J"}`, "", "is not a version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/version" || r.Method != http.MethodGet {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL+"/v1", Config{})
			got, err := c.ServerVersion(context.Background())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), srv.URL) {
					t.Errorf("error %v, want one naming %s and saying %q", err, srv.URL, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ServerVersion = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestCheckModel: the model a scenario names is checked against the
// server's GET /v1/models before the load, and a mistyped one is answered
// with what is served and the nearest name.
func TestCheckModel(t *testing.T) {
	t.Parallel()
	srv := slotserver.Start(t, slotserver.Config{Model: "Qwen/Qwen2.5-0.5B-Instruct"})
	c, err := New(Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tests := []struct{ model, want string }{
		{"Qwen/Qwen2.5-0.5B-Instruct", ""},
		{"Qwen/Qwen2.5-0.5B-Instuct", `did you mean "Qwen/Qwen2.5-0.5B-Instruct"?`},
		{"Qwen2.5-0.5B-Instruct", `did you mean "Qwen/Qwen2.5-0.5B-Instruct"?`},
		{"llama", `model "llama" is not served by ` + srv.URL + `: it serves "Qwen/Qwen2.5-0.5B-Instruct"; set target.model`},
	}
	for _, tc := range tests {
		err := c.CheckModel(context.Background(), tc.model)
		var me *ModelError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.model, err)
		case tc.want != "" && (!errors.As(err, &me) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v, want one with %q", tc.model, err, tc.want)
		}
	}
	if srv.Received("/v1/chat/completions") != 0 {
		t.Error("checking the model sent a request")
	}
	// A server without the listing cannot be asked: the requests will tell.
	none := httptest.NewServer(http.NotFoundHandler())
	defer none.Close()
	c2, _ := New(Config{BaseURL: none.URL})
	defer c2.Close()
	if err := c2.CheckModel(context.Background(), "x"); err != nil {
		t.Errorf("no listing: %v", err)
	}
}

// TestWarmUpBounded: a server that serves 4 connections at once leaves the
// others of a warm-up unanswered; WarmUp keeps the 4, gives up on the rest
// once answers stop, and says so, instead of waiting for the server's
// keep-alive timeout to free its threads.
func TestWarmUpBounded(t *testing.T) {
	t.Parallel()
	small := slotserver.Start(t, slotserver.Config{Connections: 4, KeepAlive: 5 * time.Second})
	c, err := New(Config{BaseURL: small.URL, MaxConns: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w, err := c.WarmUp(context.Background(), 16)
	if err != nil || w.Wanted != 16 || w.Opened != 4 {
		t.Fatalf("warm-up = %+v, %v; want 4 of 16 opened", w, err)
	}
	if !raceEnabled && w.Duration > 2*time.Second {
		t.Errorf("warm-up took %v: it waited for the server's keep-alive timeout", w.Duration)
	}
	big := slotserver.Start(t, slotserver.Config{})
	c2, _ := New(Config{BaseURL: big.URL, MaxConns: 16})
	defer c2.Close()
	if w, err := c2.WarmUp(context.Background(), 16); err != nil || w.Opened != 16 {
		t.Errorf("unlimited server: %+v, %v", w, err)
	}
}
