package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/golden"

	"github.com/servebench/servebench/internal/tokenizer"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// startTiny starts the tiny preset on a free loopback port, with overrides.
func startTiny(t testing.TB, sets ...string) *Server {
	t.Helper()
	cfg, err := Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range sets {
		k, v, _ := strings.Cut(kv, "=")
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Listen(context.Background(), "127.0.0.1:0", cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func post(t testing.TB, ctx context.Context, url string, body any, header ...string) *http.Response {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// sseEvents reads every data: payload of an SSE body.
func sseEvents(t testing.TB, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("unexpected SSE line %q", line)
		}
		out = append(out, data)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta *struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

func TestStreamShape(t *testing.T) {
	t.Parallel()
	s := startTiny(t)
	tok, err := tokenizer.Load("")
	if err != nil {
		t.Fatal(err)
	}
	prompt := "Write a story about a quiet harbor in winter."
	for _, tc := range []struct {
		name string
		path string
		body map[string]any
		chat bool
	}{
		{"chat", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": prompt}},
			"max_tokens": 12, "ignore_eos": true, "stream": true, "stream_options": map[string]any{"include_usage": true}}, true},
		{"completions", "/v1/completions", map[string]any{"model": "tiny", "prompt": prompt,
			"max_tokens": 12, "ignore_eos": true, "stream": true, "stream_options": map[string]any{"include_usage": true}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := post(t, context.Background(), s.URL()+tc.path, tc.body)
			defer resp.Body.Close()
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			events := sseEvents(t, resp.Body)
			if events[len(events)-1] != "[DONE]" {
				t.Fatalf("last event %q, want [DONE]", events[len(events)-1])
			}
			var chunks []chunk
			for _, e := range events[:len(events)-1] {
				var c chunk
				if err := json.Unmarshal([]byte(e), &c); err != nil {
					t.Fatalf("chunk %q: %v", e, err)
				}
				chunks = append(chunks, c)
			}
			if tc.chat {
				role := chunks[0]
				if role.Object != "chat.completion.chunk" || role.Choices[0].Delta.Role == nil || *role.Choices[0].Delta.Role != "assistant" {
					t.Fatalf("first chunk is not the role chunk: %s", events[0])
				}
				chunks = chunks[1:]
			}
			usage := chunks[len(chunks)-1]
			chunks = chunks[:len(chunks)-1]
			if len(usage.Choices) != 0 || usage.Usage == nil {
				t.Fatalf("usage chunk malformed: %s", events[len(events)-2])
			}
			if len(chunks) != 12 {
				t.Fatalf("got %d token chunks, want 12", len(chunks))
			}
			var text strings.Builder
			for i, c := range chunks {
				var piece string
				if tc.chat {
					piece = *c.Choices[0].Delta.Content
				} else {
					piece = *c.Choices[0].Text
				}
				if n := tok.Count(piece); n != 1 {
					t.Errorf("chunk %d %q is %d tokens, want 1", i, piece, n)
				}
				text.WriteString(piece)
				last := i == len(chunks)-1
				if got := c.Choices[0].FinishReason; (got != nil) != last || (last && *got != "length") {
					t.Errorf("chunk %d finish_reason %v", i, got)
				}
			}
			if n := tok.Count(text.String()); n != 12 {
				t.Errorf("output text is %d tokens, want 12", n)
			}
			if want := tok.Count(prompt); usage.Usage.PromptTokens != want || usage.Usage.CompletionTokens != 12 || usage.Usage.TotalTokens != want+12 {
				t.Errorf("usage %+v, want prompt %d completion 12", *usage.Usage, want)
			}
		})
	}
}

// TestStreamGolden pins the exact bytes of vLLM-shaped streams (ids and
// timestamps normalised). Regenerate with go test ./sim -run Golden -update.
func TestStreamGolden(t *testing.T) {
	t.Parallel()
	tools := []map[string]any{{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": map[string]any{"type": "object"}}}}
	for _, tc := range []struct {
		name string
		path string
		body map[string]any
		sets []string
	}{
		{"chat_usage", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "Hello there"}},
			"max_tokens": 3, "ignore_eos": true, "stream": true, "stream_options": map[string]any{"include_usage": true}}, nil},
		{"chat_continuous_usage", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "Hello there"}},
			"max_tokens": 2, "ignore_eos": true, "stream": true, "stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true}}, nil},
		{"completions_plain", "/v1/completions", map[string]any{"model": "tiny", "prompt": "Hello there", "max_tokens": 3, "ignore_eos": true, "stream": true}, nil},
		{"chat_whole", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "Hello there"}},
			"max_tokens": 3, "ignore_eos": true}, nil},
		{"completions_whole", "/v1/completions", map[string]any{"model": "tiny", "prompt": "Hello there", "max_tokens": 3, "ignore_eos": true}, nil},
		{"error_max_tokens", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "Hello there"}},
			"max_tokens": 2047, "stream": true}, nil},
		{"error_prompt", "/v1/completions", map[string]any{"model": "tiny", "prompt": strings.Repeat(" the", 2048)}, nil},
		{"error_model", "/v1/completions", map[string]any{"model": "nope", "prompt": "x"}, nil},
		{"chat_reasoning_0.18", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "Hello there"}},
			"max_tokens": 4, "ignore_eos": true, "stream": true}, []string{"reasoning_tokens=2", "vllm_version=0.18.0"}},
		{"chat_reasoning_0.13", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "Hello there"}},
			"max_tokens": 3, "ignore_eos": true, "stream": true}, []string{"reasoning_tokens=1", "vllm_version=0.13.0"}},
		{"chat_reasoning_whole", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "Hello there"}},
			"max_tokens": 4, "ignore_eos": true}, []string{"reasoning_tokens=2"}},
		{"chat_tool_required", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "Weather?"}},
			"max_tokens": 4, "ignore_eos": true, "stream": true, "tools": tools, "tool_choice": "required"}, nil},
		{"chat_tool_named_whole", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "Weather?"}},
			"max_tokens": 3, "ignore_eos": true, "tools": tools, "tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}}, nil},
		{"chat_tool_auto", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "Weather?"}},
			"max_tokens": 2, "ignore_eos": true, "stream": true, "tools": tools}, nil},
		{"error_tool_unknown", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "Weather?"}},
			"max_tokens": 2, "tools": tools, "tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "nope"}}}, nil},
		{"embeddings", "/v1/embeddings", map[string]any{"model": "tiny", "input": []string{"Hello there", "General Kenobi"}, "dimensions": 4}, nil},
		{"error_embeddings_format", "/v1/embeddings", map[string]any{"model": "tiny", "input": "x", "encoding_format": "base64"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startTiny(t, tc.sets...) // a server per case: output words depend on the engine's draw order
			resp := post(t, context.Background(), s.URL()+tc.path, tc.body, "X-Request-Id", "test")
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprintf("%d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"),
				regexp.MustCompile(`"created":\d+`).ReplaceAll(body, []byte(`"created":0`)))
			goldenCheck(t, got)
		})
	}
}

func goldenCheck(t *testing.T, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", golden.Name(t)+".golden"), []byte(got), *update)
}

func TestEndpoints(t *testing.T) {
	t.Parallel()
	s := startTiny(t)
	get := func(path string) (int, string) {
		resp, err := http.Get(s.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/health"); code != 200 || body != "" {
		t.Errorf("/health: %d %q", code, body)
	}
	if code, body := get("/version"); code != 200 || body != "{\"version\":\"0.11.2\"}\n" {
		t.Errorf("/version: %d %q", code, body)
	}
	code, body := get("/v1/models")
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID          string `json:"id"`
			OwnedBy     string `json:"owned_by"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &models); err != nil || code != 200 {
		t.Fatalf("/v1/models: %d %v %s", code, err, body)
	}
	if models.Object != "list" || len(models.Data) != 1 || models.Data[0].ID != "tiny" || models.Data[0].MaxModelLen != 2048 || models.Data[0].OwnedBy != "vllm" {
		t.Errorf("/v1/models: %+v", models)
	}

	tok, _ := tokenizer.Load("")
	text := tok.Text(100, func(n int) int { return 7 % n })
	resp := post(t, context.Background(), s.URL()+"/tokenize", map[string]any{"model": "tiny", "prompt": text})
	var tk struct {
		Count       int      `json:"count"`
		MaxModelLen int      `json:"max_model_len"`
		Tokens      []uint32 `json:"tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tk); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if tk.Count != 100 || len(tk.Tokens) != 100 || tk.MaxModelLen != 2048 {
		t.Errorf("/tokenize: count %d, %d tokens, max_model_len %d", tk.Count, len(tk.Tokens), tk.MaxModelLen)
	}
}

func TestListenRefusesNonLoopback(t *testing.T) {
	t.Parallel()
	cfg, _ := Preset("tiny")
	for _, addr := range []string{"0.0.0.0:0", ":0", "10.1.2.3:80", "[::]:0", "example.com:80"} {
		if s, err := Listen(context.Background(), addr, cfg, io.Discard); err == nil {
			_ = s.Close()
			t.Errorf("Listen(%q) succeeded", addr)
		}
	}
}

// TestDisconnectAborts checks that a client going away aborts its request
// and frees its KV blocks.
func TestDisconnectAborts(t *testing.T) {
	t.Parallel()
	s := startTiny(t)
	ctx, cancel := context.WithCancel(context.Background())
	resp := post(t, ctx, s.URL()+"/v1/chat/completions", map[string]any{"model": "tiny",
		"messages":   []map[string]any{{"role": "user", "content": strings.Repeat(" the", 300)}},
		"max_tokens": 1000, "ignore_eos": true, "stream": true})
	r := bufio.NewReader(resp.Body)
	for range 5 { // role chunk and a few tokens
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Running != 1 || st.KVUsage == 0 {
		t.Fatalf("before disconnect: running %d, usage %v", st.Running, st.KVUsage)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := s.Stats()
		if st.Running == 0 && st.KVUsage == 0 && st.Success[FinishAbort] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after disconnect: running %d, usage %v, aborts %d", st.Running, st.KVUsage, st.Success[FinishAbort])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestConcurrentStreams runs more streams than max_num_seqs with more
// context than the KV cache holds: every stream must still complete with
// all its tokens, through queueing and preemption.
func TestConcurrentStreams(t *testing.T) {
	t.Parallel()
	s := startTiny(t)
	const n = 12
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := post(t, context.Background(), s.URL()+"/v1/completions", map[string]any{"model": "tiny",
				"prompt": strings.Repeat(fmt.Sprintf(" the%d", i), 100), "max_tokens": 300, "ignore_eos": true, "stream": true})
			defer resp.Body.Close()
			events := sseEvents(t, resp.Body)
			if got := len(events) - 1; got != 300 {
				errs <- fmt.Errorf("stream %d: %d chunks, want 300", i, got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := s.Stats()
	if st.Preemptions == 0 {
		t.Errorf("no preemption with %d×(~%d) tokens in a 3,072-token cache", n, 400)
	}
	if st.Success[FinishLength] != n || st.Running != 0 || st.KVUsage != 0 {
		t.Errorf("after: %+v", st.Success)
	}
}

// syncBuffer is a bytes.Buffer safe for the server's logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLogs checks the start-up lines and the periodic stats line's format
// and that it reports the load.
func TestLogs(t *testing.T) {
	t.Parallel()
	cfg, _ := Preset("tiny")
	if err := cfg.Set("log_stats_interval", "100ms"); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	s, err := Listen(context.Background(), "127.0.0.1:0", cfg, &logs)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp := post(t, context.Background(), s.URL()+"/v1/completions", map[string]any{"model": "tiny",
		"prompt": strings.Repeat(" the", 100), "max_tokens": 200, "ignore_eos": true})
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	wants := []string{
		"] Available KV cache memory: 0.01 GiB\n",
		"] GPU KV cache size: 3,088 tokens\n",
		"] Maximum concurrency for 2,048 tokens per request: 1.51x\n",
		"] Chunked prefill is enabled with max_num_batched_tokens=256.\n",
		`INFO:     127.0.0.1:`,
		`"POST /v1/completions HTTP/1.1" 200 OK`,
	}
	re := regexp.MustCompile(`(?m)^\(APIServer pid=\d+\) INFO \d\d-\d\d \d\d:\d\d:\d\d \[loggers\.py:236\] Engine 000: Avg prompt throughput: (\d+\.\d) tokens/s, Avg generation throughput: (\d+\.\d) tokens/s, Running: (\d+) reqs, Waiting: (\d+) reqs, GPU KV cache usage: (\d+\.\d)%, Prefix cache hit rate: (\d+\.\d)%$`)
	check := func(out string) (missing []string, busy bool) {
		for _, want := range wants {
			if !strings.Contains(out, want) {
				missing = append(missing, want)
			}
		}
		for _, m := range re.FindAllStringSubmatch(out, -1) {
			busy = busy || (m[2] != "0.0" && m[3] == "1" && m[5] != "0.0")
		}
		return missing, busy
	}
	// The access line and the stats line are written by other goroutines:
	// wait for them, up to a patience a loaded machine keeps.
	var out string
	var missing []string
	busy := false
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out = logs.String()
		if missing, busy = check(out); (len(missing) == 0 && busy) || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range missing {
		t.Errorf("logs lack %q", want)
	}
	if !busy {
		t.Errorf("no stats line shows the running request:\n%s", out)
	}
}

// TestTokenize checks /tokenize against the simulator's tokenizer, the
// default one and a tokenizer.json: a prompt counts as the tokenizer counts
// it, chat messages as the sum of their texts, and a generation request's
// usage agrees with /tokenize.
func TestTokenize(t *testing.T) {
	t.Parallel()
	const fixture = "../internal/tokenizer/testdata/tiny-bpe.json"
	cfg := Defaults()
	if err := cfg.Set("tokenizer", "gpt2"); err == nil || !strings.Contains(err.Error(), "want o200k_base, cl100k_base or the path of a tokenizer.json") {
		t.Fatalf("tokenizer=gpt2: %v", err)
	}
	for _, tc := range []struct{ name, tokenizer string }{{"default", ""}, {"tokenizer.json", fixture}} {
		name := tc.tokenizer
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startTiny(t, "tokenizer="+name)
			tok, err := tokenizer.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			count := func(body any) int {
				t.Helper()
				resp := post(t, ctx, s.URL()+"/tokenize", body)
				defer resp.Body.Close()
				var out struct {
					Count       int      `json:"count"`
					MaxModelLen int      `json:"max_model_len"`
					Tokens      []uint32 `json:"tokens"`
				}
				if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("/tokenize: %d %v", resp.StatusCode, err)
				}
				if len(out.Tokens) != out.Count || out.MaxModelLen != s.Config().MaxModelLen {
					t.Fatalf("/tokenize: %d tokens for count %d, max_model_len %d", len(out.Tokens), out.Count, out.MaxModelLen)
				}
				return out.Count
			}
			text := "The server's queue held 1024 requests; development information."
			if got, want := count(map[string]any{"model": "tiny", "prompt": text, "add_special_tokens": false}), tok.Count(text); got != want {
				t.Errorf("prompt: count %d, the tokenizer counts %d", got, want)
			}
			msgs := []map[string]string{{"role": "system", "content": "be brief"}, {"role": "user", "content": text}}
			chat := count(map[string]any{"messages": msgs, "add_generation_prompt": true})
			if want := tok.Count("be brief") + tok.Count(text); chat != want {
				t.Errorf("chat: count %d, want %d", chat, want)
			}
			resp := post(t, ctx, s.URL()+"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 2})
			defer resp.Body.Close()
			var gen struct {
				Usage struct {
					PromptTokens int `json:"prompt_tokens"`
				} `json:"usage"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&gen); err != nil {
				t.Fatal(err)
			}
			if gen.Usage.PromptTokens != chat {
				t.Errorf("usage.prompt_tokens %d, /tokenize counts %d", gen.Usage.PromptTokens, chat)
			}
		})
	}
}
