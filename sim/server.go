package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/servebench/servebench/internal/loopback"
	"github.com/servebench/servebench/internal/tokenizer"
)

// maxBodyBytes bounds a request body (a 100k-token prompt is ≈ 600 KB).
const maxBodyBytes = 16 << 20

// Server is a running simulator: the engine, its real-time driver, and the
// OpenAI-compatible HTTP server in front of them. Safe for concurrent use.
type Server struct {
	cfg Config
	tok *tokenizer.Tokenizer
	log *logger
	url string

	mu     sync.Mutex // guards engine, streams' pending output, seq, meter
	engine *Engine
	seq    uint64
	meter  GPUMeter

	wake   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	http   *http.Server
	wg     sync.WaitGroup
	once   sync.Once
	err    error
}

// stream carries one request's outputs from the driver to its handler.
type stream struct {
	pending []uint32
	steps   []int // how many of pending each step gave, in order
	finish  string
	notify  chan struct{} // capacity 1: "something new"
}

// Listen starts the simulator on addr ("127.0.0.1:0" picks a free loopback
// port) and returns once it accepts connections. It refuses non-loopback
// addresses. logs receives vLLM-format log lines (start-up, access log,
// periodic stats); it may be io.Discard. The server stops when ctx ends or
// Close is called.
func Listen(ctx context.Context, addr string, cfg Config, logs io.Writer) (*Server, error) {
	if !loopback.Addr(addr) {
		return nil, fmt.Errorf("sim listen %s: refusing a non-loopback address (use 127.0.0.1 or ::1)", addr)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sim config: %w", err)
	}
	tok, err := tokenizer.Load(cfg.Tokenizer)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	eng, err := NewEngine(cfg, WallClock{}, rand.New(rand.NewPCG(cfg.Seed, 0x5e7e)))
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sim listen %s: %w", addr, err)
	}
	if logs == nil {
		logs = io.Discard
	}
	s := &Server{
		cfg: cfg, tok: tok, engine: eng,
		log:  &logger{w: logs, pid: os.Getpid(), now: time.Now},
		url:  "http://" + ln.Addr().String(),
		wake: make(chan struct{}, 1),
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.http = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return s.ctx }}
	s.log.startup(cfg, eng.Capacity())

	s.wg.Add(3)
	go func() { defer s.wg.Done(); s.drive() }()
	go func() { defer s.wg.Done(); s.logStats() }()
	go func() {
		defer s.wg.Done()
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.printf(procAPI, "ERROR", "api_server.py:2052", "server: %v", err)
		}
	}()
	stop := context.AfterFunc(ctx, func() { _ = s.Close() })
	go func() { <-s.ctx.Done(); stop() }()
	s.log.printf(procAPI, "INFO", "api_server.py:2052", "Starting vLLM API server 0 on %s", s.url)
	s.log.printf(procAPI, "INFO", "launcher.py:46", "Route: /v1/chat/completions, Methods: POST")
	s.log.printf(procAPI, "INFO", "launcher.py:46", "Route: /v1/completions, Methods: POST")
	s.log.printf(procAPI, "INFO", "launcher.py:46", "Route: /v1/embeddings, Methods: POST")
	return s, nil
}

// URL is the server's base URL, http://127.0.0.1:PORT (no /v1).
func (s *Server) URL() string { return s.url }

// Config is the configuration the server runs.
func (s *Server) Config() Config { return s.cfg }

// Stats returns a snapshot of the engine's metrics.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.engine.Stats()
}

// Close stops the engine, aborts every open stream and waits for the
// server's goroutines. It is idempotent.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.cancel()
		s.err = s.http.Close()
		s.wg.Wait()
	})
	return s.err
}

// drive runs engine steps in real time. Each step's end is an absolute
// deadline chained to the previous one, so sleep overshoot does not
// accumulate into the simulated throughput.
func (s *Server) drive() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		b, err := s.engine.Schedule()
		s.mu.Unlock()
		if err != nil {
			s.log.printf(procEngine, "ERROR", "core.py:250", "schedule: %v", err)
			return
		}
		if b == nil {
			select {
			case <-s.wake:
				continue
			case <-s.ctx.Done():
				return
			}
		}
		timer.Reset(time.Until(b.End))
		select {
		case <-timer.C:
		case <-s.ctx.Done():
			return
		}
		s.mu.Lock()
		outs, err := s.engine.Complete(b)
		for _, o := range outs {
			st := o.Req.sink
			if st == nil {
				continue
			}
			st.pending = append(st.pending, o.Tokens...)
			if len(o.Tokens) > 0 {
				st.steps = append(st.steps, len(o.Tokens))
			}
			if o.FinishReason != "" {
				st.finish = o.FinishReason
			}
			select {
			case st.notify <- struct{}{}:
			default:
			}
		}
		s.mu.Unlock()
		if err != nil {
			s.log.printf(procEngine, "ERROR", "core.py:250", "complete: %v", err)
			return
		}
	}
}

// logStats prints the periodic stats line every LogStatsInterval.
func (s *Server) logStats() {
	t := time.NewTicker(s.cfg.LogStatsInterval)
	defer t.Stop()
	sl := newStatLogger(time.Now())
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			line, quiet := sl.next(now, s.Stats())
			if !quiet {
				s.log.printf(procAPI, "INFO", "loggers.py:236", "%s", line)
			}
		}
	}
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, true) })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, false) })
	mux.HandleFunc("POST /v1/embeddings", s.embeddings)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /ping", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("POST /ping", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"version": s.cfg.VLLMVersion})
	})
	mux.HandleFunc("GET /load", func(w http.ResponseWriter, r *http.Request) {
		st := s.Stats()
		writeJSON(w, http.StatusOK, map[string]int{"server_load": st.Running + st.Waiting})
	})
	mux.HandleFunc("POST /tokenize", s.tokenize)
	mux.HandleFunc("GET /metrics", s.metrics)
	if s.cfg.PowerModel() {
		mux.HandleFunc("GET "+PathDCGM, s.dcgm)
	}
	return s.accessLog(mux)
}

// accessLog writes uvicorn-style access records for API routes.
func (s *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		switch r.URL.Path {
		case "/metrics", "/health", "/ping", "/load", "/version":
			return
		}
		s.log.access(r.RemoteAddr, r.Method, r.URL.Path, r.Proto, rec.status, http.StatusText(rec.status))
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Flush forwards to the underlying writer so SSE chunks leave at once.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	var api *APIError
	if !errors.As(err, &api) {
		api = &APIError{Message: err.Error(), Type: "InternalServerError", Code: http.StatusInternalServerError}
	}
	writeJSON(w, api.Code, api)
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	created := time.Now().Unix()
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{map[string]any{
		"id": s.cfg.ServedModelName, "object": "model", "created": created, "owned_by": "vllm",
		"root": s.cfg.Model, "parent": nil, "max_model_len": s.cfg.MaxModelLen,
		"permission": []any{map[string]any{
			"id": "modelperm-" + s.newID(), "object": "model_permission", "created": created,
			"allow_create_engine": false, "allow_sampling": true, "allow_logprobs": true,
			"allow_search_indices": false, "allow_view": true, "allow_fine_tuning": false,
			"organization": "*", "group": nil, "is_blocking": false,
		}},
	}}})
}

// tokenize serves POST /tokenize in vLLM's shape: {"prompt": …} or
// {"messages": [...]} (add_special_tokens and add_generation_prompt are
// accepted; the simulator has no special tokens and no chat template, so
// they change nothing) → {"count", "max_model_len", "tokens",
// "token_strs"}. It counts with the simulator's tokenizer, exactly as the
// usage of a generation request does.
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req genRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBodyBytes)).Decode(&req); err != nil {
		writeError(w, badRequest("", "invalid JSON body: %v", err))
		return
	}
	if req.Model != "" && req.Model != s.cfg.ServedModelName {
		writeError(w, s.notFound(req.Model))
		return
	}
	ids, err := req.promptTokens(s.tok, len(req.Messages) > 0)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(ids), "max_model_len": s.cfg.MaxModelLen,
		"tokens": ids, "token_strs": nil})
}

// dcgm serves the simulated GPUs as a DCGM exporter would (power model
// on): power and utilisation since the previous page, the energy counter.
func (s *Server) dcgm(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	rd := s.meter.Read(s.engine)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_ = WriteDCGM(w, rd, s.cfg)
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	st := s.Stats()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_ = WriteMetrics(w, st, s.cfg)
}

func (s *Server) notFound(model string) *APIError {
	return &APIError{Message: fmt.Sprintf("The model `%s` does not exist.", model), Type: "NotFoundError", Param: "model", Code: http.StatusNotFound}
}

// newID returns a fresh request id (32 hex digits), deterministic per seed.
func (s *Server) newID() string {
	s.mu.Lock()
	s.seq++
	n := s.seq
	s.mu.Unlock()
	return fmt.Sprintf("%016x%016x", mix64(s.cfg.Seed^n), mix64(n*0x9e3779b97f4a7c15))
}

// word is the text of output token id.
func (s *Server) word(id uint32) string { return s.tok.Word(int(id % uint32(s.tok.NumWords()))) }

// generate serves /v1/chat/completions (chat) and /v1/completions.
func (s *Server) generate(w http.ResponseWriter, hr *http.Request, chat bool) {
	var req genRequest
	if err := json.NewDecoder(io.LimitReader(hr.Body, maxBodyBytes)).Decode(&req); err != nil {
		writeError(w, badRequest("", "invalid JSON body: %v", err))
		return
	}
	if req.Model != "" && req.Model != s.cfg.ServedModelName {
		writeError(w, s.notFound(req.Model))
		return
	}
	if req.StreamOptions != nil && !req.Stream {
		writeError(w, badRequest("stream_options", "Stream options can only be defined when `stream=True`."))
		return
	}
	prompt, err := req.promptTokens(s.tok, chat)
	if err != nil {
		writeError(w, err)
		return
	}
	if len(prompt) == 0 {
		prompt = []uint32{0} // the BOS token every real template adds
	}
	maxTokens := req.maxTokens()
	if maxTokens < 0 {
		writeError(w, badRequest("max_tokens", "max_tokens must be at least 1, got %d.", maxTokens))
		return
	}
	if err := validateLengths(s.cfg.MaxModelLen, len(prompt), maxTokens); err != nil {
		writeError(w, err)
		return
	}
	if maxTokens == 0 {
		maxTokens = s.cfg.MaxModelLen - len(prompt)
	}
	if req.MinTokens < 0 || req.MinTokens > maxTokens {
		writeError(w, badRequest("min_tokens", "min_tokens must be less than or equal to max_tokens=%d, got %d.", maxTokens, req.MinTokens))
		return
	}

	tool := ""
	if chat {
		tool = req.toolCall()
		for i, t := range req.Tools {
			if t.Function.Name == "" {
				writeError(w, badRequest("tools", "tools[%d].function.name is required", i))
				return
			}
		}
		if tool != "" && !slices.ContainsFunc(req.Tools, func(t genTool) bool { return t.Function.Name == tool }) {
			writeError(w, badRequest("tool_choice", "Tool '%s' has not been passed in `tools`.", tool))
			return
		}
	}

	id := hr.Header.Get("X-Request-Id")
	if id == "" {
		id = s.newID()
	}
	if chat {
		id = "chatcmpl-" + id
	} else {
		id = "cmpl-" + id
	}
	st := &stream{notify: make(chan struct{}, 1)}
	er := &Request{ID: id, Prompt: prompt, MaxTokens: maxTokens, MinTokens: req.MinTokens, IgnoreEOS: req.IgnoreEOS, sink: st}
	s.mu.Lock()
	err = s.engine.Submit(er)
	s.mu.Unlock()
	if err != nil {
		writeError(w, err)
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}

	resp := &responder{s: s, w: w, req: &req, er: er, id: id, chat: chat, created: time.Now().Unix(), tool: tool}
	if req.Stream {
		err = resp.stream(hr.Context(), st)
	} else {
		err = resp.whole(hr.Context(), st)
	}
	if err != nil {
		s.mu.Lock()
		s.engine.Abort(er)
		s.mu.Unlock()
	}
}
