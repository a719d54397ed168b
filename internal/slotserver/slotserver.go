// Package slotserver is an OpenAI-compatible HTTP server for tests that
// behaves the way llama.cpp's llama-server does where servebench's
// verdicts depend on it: a fixed number of slots decode together, one
// token per running request per engine step, and every other request
// waits in a queue, however many arrive.
//
// It consumes chat and completions requests (streamed or not) and
// produces SSE streams, a /metrics page in llama.cpp's or vLLM's names,
// llama.cpp's GET /props and GET /slots, a /tokenize that reads the body
// llama.cpp reads ("content") or the one vLLM reads ("prompt",
// "messages"), and counts of what it received. It is independent of
// servebench's own simulator: a test that runs servebench against it
// checks servebench against behaviour it did not write. Every option
// reproduces one behaviour of a real server; the Config fields say which.
// It listens on loopback only.
package slotserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Config is what the server imitates. The zero value of a field selects
// its documented default.
type Config struct {
	// Slots is how many requests decode at once (llama.cpp's --parallel);
	// default 4.
	Slots int
	// Model is the one model served (default "m").
	Model string
	// A step's cost: StepOverhead, plus PerSeq for each running request,
	// plus PerPrefillToken for each prompt token admitted in the step.
	// Default: 2 ms, 0, 0.
	StepOverhead, PerSeq, PerPrefillToken time.Duration
	// Scale multiplies every step's cost (a server that runs slower or
	// faster from one start to the next); 0 means 1.
	Scale float64
	// Jitter multiplies each step's cost by a uniform draw from
	// [1−Jitter, 1+Jitter], from a generator seeded with Seed.
	Jitter float64
	Seed   uint64
	// Metrics names the /metrics page: "llamacpp" (requests_processing,
	// requests_deferred, tokens_predicted_total, prompt_tokens_total),
	// "vllm" (num_requests_running, num_requests_waiting,
	// generation_tokens_total, prompt_tokens_total, kv_cache_usage_perc),
	// or "" for none (404, as on a llama-server started without
	// --metrics).
	Metrics string
	// CountersAtEnd adds a request's tokens to the generation counter
	// only when the request ends, as llama.cpp and llm-d's inference
	// simulator do; otherwise every step adds its tokens.
	CountersAtEnd bool
	// KVTokens is the KV capacity the vLLM page's usage gauge divides the
	// context in flight by (default 100,000 tokens).
	KVTokens int
	// Props serves llama.cpp's GET /props (total_slots) and GET /slots.
	Props bool
	// Tokenize selects the /tokenize body the server reads: "content"
	// (llama.cpp: {"content", "add_special"} → {"tokens": [...]}, and a
	// body without content answers {"tokens": []}), "prompt" (vLLM:
	// {"prompt"} or {"messages"} → {"count", "tokens"}), or "" (404).
	Tokenize string
	// Connections is how many connections the server serves at once
	// (llama.cpp's HTTP threads, 8 on a small machine): a further
	// connection waits, unserved, until one closes; 0 is unlimited.
	Connections int
	// KeepAlive is how long the server keeps an idle connection open
	// (llama.cpp 5 s); default 30 s.
	KeepAlive time.Duration
}

// Server is a running slot server. Its methods are safe for concurrent
// use.
type Server struct {
	// URL is the server's root, http://127.0.0.1:PORT.
	URL string
	cfg Config
	srv *httptest.Server

	mu       sync.Mutex
	queue    []*request // waiting for a slot, in arrival order
	running  []*request
	rng      *rand.Rand
	promptN  int64 // prompt tokens admitted
	genN     int64 // generation tokens counted (at each step, or at each end)
	wake     chan struct{}
	stop     context.CancelFunc
	received sync.Map // path → *atomic.Int64
}

// request is one generation request in the engine.
type request struct {
	prompt int
	max    int
	done   int
	tokens chan struct{} // one value per token; closed at the end
	gone   atomic.Bool   // the client went away
}

// Start starts a server and stops it when the test ends.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Slots <= 0 {
		cfg.Slots = 4
	}
	if cfg.Model == "" {
		cfg.Model = "m"
	}
	if cfg.StepOverhead == 0 {
		cfg.StepOverhead = 2 * time.Millisecond
	}
	if cfg.Scale == 0 {
		cfg.Scale = 1
	}
	if cfg.KVTokens == 0 {
		cfg.KVTokens = 100_000
	}
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = 30 * time.Second
	}
	s := &Server{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 1)), wake: make(chan struct{}, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("POST /v1/chat/completions", s.generate)
	mux.HandleFunc("POST /v1/completions", s.generate)
	mux.HandleFunc("GET /metrics", s.metrics)
	mux.HandleFunc("GET /props", s.props)
	mux.HandleFunc("GET /slots", s.slots)
	mux.HandleFunc("POST /tokenize", s.tokenize)
	mux.HandleFunc("POST /apply-template", s.applyTemplate)
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.count(r.URL.Path)
		mux.ServeHTTP(w, r)
	}))
	s.srv.Config.IdleTimeout = cfg.KeepAlive
	if cfg.Connections > 0 {
		s.srv.Listener = LimitListener(s.srv.Listener, cfg.Connections)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go s.engine(ctx)
	s.srv.Start()
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// Close stops the server.
func (s *Server) Close() {
	s.stop()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Received returns how many requests for path the server received
// ("/v1/chat/completions", "/metrics", …).
func (s *Server) Received(path string) int64 {
	if v, ok := s.received.Load(path); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

func (s *Server) count(path string) {
	v, _ := s.received.LoadOrStore(path, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// engine runs steps while requests are in the server: each step admits
// waiting requests into free slots (prefilling their prompts), costs its
// time, then gives every running request one token. Steps end on
// absolute deadlines, each its cost after the previous one, so that a
// late wake-up on a busy machine does not slow the server down (it
// catches up, unless a quarter second behind).
func (s *Server) engine(ctx context.Context) {
	var deadline time.Time
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		prefill := 0
		s.running = keep(s.running)
		s.queue = keep(s.queue)
		for len(s.running) < s.cfg.Slots && len(s.queue) > 0 {
			r := s.queue[0]
			s.queue = s.queue[1:]
			s.running = append(s.running, r)
			prefill += r.prompt
			s.promptN += int64(r.prompt)
		}
		n := len(s.running)
		cost := s.cfg.StepOverhead + time.Duration(n)*s.cfg.PerSeq + time.Duration(prefill)*s.cfg.PerPrefillToken
		f := s.cfg.Scale
		if s.cfg.Jitter > 0 {
			f *= 1 + s.cfg.Jitter*(2*s.rng.Float64()-1)
		}
		s.mu.Unlock()
		if n == 0 {
			deadline = time.Time{}
			select {
			case <-s.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		now := time.Now()
		if deadline.IsZero() || now.Sub(deadline) > 250*time.Millisecond {
			deadline = now
		}
		deadline = deadline.Add(time.Duration(float64(cost) * f))
		timer.Reset(time.Until(deadline))
		select {
		case <-timer.C:
		case <-ctx.Done():
			return
		}
		s.mu.Lock()
		for _, r := range s.running {
			r.done++
			r.tokens <- struct{}{}
			if !s.cfg.CountersAtEnd {
				s.genN++
			}
			if r.done == r.max {
				close(r.tokens)
				if s.cfg.CountersAtEnd {
					s.genN += int64(r.max)
				}
			}
		}
		s.mu.Unlock()
	}
}

// keep drops the requests that ended or whose client went away.
func keep(rs []*request) []*request {
	out := rs[:0]
	for _, r := range rs {
		if r.done < r.max && !r.gone.Load() {
			out = append(out, r)
		}
	}
	return out
}

// live counts the requests that have not ended and whose client is
// still there.
func live(rs []*request) int {
	n := 0
	for _, r := range rs {
		if r.done < r.max && !r.gone.Load() {
			n++
		}
	}
	return n
}

// body is the part of a chat or completions request the server reads.
type body struct {
	Model    string `json:"model"`
	Prompt   string `json:"prompt"`
	Messages []struct {
		Content string `json:"content"`
	} `json:"messages"`
	MaxTokens     int  `json:"max_tokens"`
	MaxCompletion int  `json:"max_completion_tokens"`
	Stream        bool `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (b *body) text() string {
	if len(b.Messages) == 0 {
		return b.Prompt
	}
	var parts []string
	for _, m := range b.Messages {
		parts = append(parts, m.Content)
	}
	return strings.Join(parts, " ")
}

// words counts a text's tokens: one per word.
func words(s string) int { return len(strings.Fields(s)) }

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","owned_by":"llamacpp"}]}`, s.cfg.Model)
}

// generate queues one request and streams its tokens as the engine
// produces them.
func (s *Server) generate(w http.ResponseWriter, r *http.Request) {
	var b body
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&b); err != nil {
		http.Error(w, `{"error":{"code":400,"message":"bad JSON","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	if b.Model != s.cfg.Model {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"object":"error","message":"The model %s does not exist.","type":"NotFoundError","param":null,"code":404}`, "`"+b.Model+"`")
		return
	}
	q := &request{prompt: words(b.text()), max: max(b.MaxTokens, b.MaxCompletion)}
	if q.max <= 0 {
		q.max = 16
	}
	q.tokens = make(chan struct{}, q.max)
	s.mu.Lock()
	s.queue = append(s.queue, q)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	defer q.gone.Store(true)
	chat := strings.HasSuffix(r.URL.Path, "/chat/completions")
	if !b.Stream {
		for range q.tokens {
		}
		w.Header().Set("Content-Type", "application/json")
		text := strings.Repeat("tok ", q.max)
		choice := fmt.Sprintf(`{"index":0,"text":%q,"finish_reason":"length"}`, text)
		if chat {
			choice = fmt.Sprintf(`{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"length"}`, text)
		}
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","model":%q,"choices":[%s],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
			s.cfg.Model, choice, q.prompt, q.max, q.prompt+q.max)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	chunk := func(delta, finish string) {
		fin := "null"
		if finish != "" {
			fin = `"` + finish + `"`
		}
		if chat {
			fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", s.cfg.Model, delta, fin)
		} else {
			fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"text_completion\",\"model\":%q,\"choices\":[{\"index\":0,\"text\":%s,\"finish_reason\":%s}]}\n\n", s.cfg.Model, delta, fin)
		}
		if fl != nil {
			fl.Flush()
		}
	}
	if fl != nil {
		w.WriteHeader(http.StatusOK)
		fl.Flush()
	}
	for {
		select {
		case _, ok := <-q.tokens:
			if !ok {
				s.finish(w, chunk, chat, q, b.StreamOptions.IncludeUsage)
				return
			}
			if chat {
				chunk(`{"content":"tok "}`, "")
			} else {
				chunk(`"tok "`, "")
			}
		case <-r.Context().Done():
			return
		}
	}
}

func (s *Server) finish(w io.Writer, chunk func(delta, finish string), chat bool, q *request, usage bool) {
	if chat {
		chunk(`{}`, "length")
	} else {
		chunk(`""`, "length")
	}
	if usage {
		fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n",
			s.cfg.Model, q.prompt, q.max, q.prompt+q.max)
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

func (s *Server) metrics(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	running, waiting, gen, prompt := live(s.running), live(s.queue), s.genN, s.promptN
	ctx := 0
	for _, r := range s.running {
		if r.done < r.max && !r.gone.Load() {
			ctx += r.prompt + r.done
		}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	switch s.cfg.Metrics {
	case "llamacpp":
		fmt.Fprintf(w, "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total %d\n", prompt)
		fmt.Fprintf(w, "# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.\n# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total %d\n", gen)
		fmt.Fprintf(w, "# HELP llamacpp:requests_processing Number of requests processing.\n# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing %d\n", running)
		fmt.Fprintf(w, "# HELP llamacpp:requests_deferred Number of requests deferred.\n# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred %d\n", waiting)
	case "vllm":
		fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=%q} %d\n", s.cfg.Model, running)
		fmt.Fprintf(w, "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=%q} %d\n", s.cfg.Model, waiting)
		fmt.Fprintf(w, "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name=%q} %g\n", s.cfg.Model, float64(ctx)/float64(s.cfg.KVTokens))
		fmt.Fprintf(w, "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{model_name=%q} %d\n", s.cfg.Model, prompt)
		fmt.Fprintf(w, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=%q} %d\n", s.cfg.Model, gen)
	default:
		http.NotFound(w, nil)
	}
}

func (s *Server) props(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.Props {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"default_generation_settings":{"n_ctx":4096},"total_slots":%d,"model_path":%q,"build_info":"b0-slotserver","endpoint_metrics":%t}`,
		s.cfg.Slots, s.cfg.Model, s.cfg.Metrics != "")
}

func (s *Server) slots(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.Props {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	busy := live(s.running)
	s.mu.Unlock()
	var parts []string
	for i := range s.cfg.Slots {
		parts = append(parts, fmt.Sprintf(`{"id":%d,"n_ctx":4096,"is_processing":%t}`, i, i < busy))
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, "["+strings.Join(parts, ",")+"]")
}

// tokenize answers POST /tokenize in the configured engine's dialect:
// one token per word, one more for BOS when asked.
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Content          *string `json:"content"`
		AddSpecial       bool    `json:"add_special"`
		Prompt           *string `json:"prompt"`
		AddSpecialTokens *bool   `json:"add_special_tokens"`
		Messages         []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&b); err != nil {
		http.Error(w, "bad JSON", http.StatusBadRequest)
		return
	}
	n := 0
	switch s.cfg.Tokenize {
	case "content":
		if b.Content != nil {
			n = words(*b.Content)
			if b.AddSpecial {
				n++
			}
		}
	case "prompt":
		switch {
		case b.Prompt != nil:
			n = words(*b.Prompt)
			if b.AddSpecialTokens == nil || *b.AddSpecialTokens {
				n++
			}
		case len(b.Messages) > 0:
			for _, m := range b.Messages {
				n += words(m.Content) + 3 // a role marker and two delimiters per message
			}
			n += 3 // the generation prompt
		default:
			http.Error(w, `{"object":"error","message":"Either prompt or messages must be given","code":400}`, http.StatusBadRequest)
			return
		}
	default:
		http.NotFound(w, r)
		return
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprint(i + 1)
	}
	w.Header().Set("Content-Type", "application/json")
	if s.cfg.Tokenize == "prompt" {
		fmt.Fprintf(w, `{"count":%d,"max_model_len":4096,"tokens":[%s]}`, n, strings.Join(ids, ","))
		return
	}
	fmt.Fprintf(w, `{"tokens":[%s]}`, strings.Join(ids, ","))
}

// applyTemplate answers llama.cpp's POST /apply-template: the messages
// joined with a role marker each, then the generation prompt.
func (s *Server) applyTemplate(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Tokenize != "content" {
		http.NotFound(w, r)
		return
	}
	var b struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&b); err != nil {
		http.Error(w, "bad JSON", http.StatusBadRequest)
		return
	}
	var parts []string
	for _, m := range b.Messages {
		parts = append(parts, "<|"+m.Role+"|> "+m.Content+" <|end|>")
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"prompt": strings.Join(parts, " ") + " <|assistant|>"})
}

// LimitListener returns l serving at most n connections at once: Accept
// waits for one to close, as a server with a fixed pool of HTTP threads
// does (llama.cpp's llama-server); a further connection waits in the
// kernel's queue, unserved.
func LimitListener(l net.Listener, n int) net.Listener {
	return &limitListener{Listener: l, sem: make(chan struct{}, n)}
}

// limitListener serves at most cap(sem) connections at once (LimitListener).
type limitListener struct {
	net.Listener
	sem chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.sem <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
