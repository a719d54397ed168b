package client

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	openai "github.com/sashabaranov/go-openai"

	"github.com/servebench/servebench/internal/loopback"
	"github.com/servebench/servebench/internal/redact"
	"github.com/servebench/servebench/internal/suggest"
	"github.com/servebench/servebench/internal/tokenizer"
	"github.com/servebench/servebench/results"
)

// Default timeouts, used when the Config field is zero. A negative Config
// field disables that timeout.
const (
	defaultConnectTimeout   = 10 * time.Second // dial
	defaultFirstByteTimeout = 10 * time.Minute // Sent → first event of a stream (or response headers); covers queueing
	defaultIdleTimeout      = 2 * time.Minute  // longest gap between two reads of the response body
	defaultTotalTimeout     = 60 * time.Minute // Sent → end of the response
	defaultMaxConns         = 64               // idle-pool size when Config.MaxConns is zero
)

const (
	// errorExcerptBytes bounds the response-body excerpt kept in
	// Result.Error for HTTP errors and server error events, in bytes.
	errorExcerptBytes = 512
	// maxLineBytes bounds one SSE line, in bytes; a longer line fails the
	// request as a malformed chunk.
	maxLineBytes = 4 << 20
	// maxBodyBytes bounds a non-streaming response body, in bytes.
	maxBodyBytes = 64 << 20

	readerBytes    = 4 << 10 // per-stream bufio.Reader, pooled; longer lines are gathered in stream.long
	connReadBytes  = 8 << 10 // transport read buffer, per connection: a socket read brings in tens of chunks
	connWriteBytes = 4 << 10 // transport write buffer: a long prompt is written in several writes
	drainGrace     = 200 * time.Millisecond
	idleConnExpiry = 90 * time.Second
)

// ConnWriteBytes is the client's per-connection write buffer, for a
// sender that is to write alike (bench selftest's raw reader).
const ConnWriteBytes = connWriteBytes

// Config configures a Client. The zero value of each field selects its
// documented default.
type Config struct {
	// BaseURL is the server's root, with or without the /v1 suffix, for
	// example http://127.0.0.1:8000 or http://127.0.0.1:8000/v1. Unless
	// AllowRemote, its host must be a loopback address or resolve to one:
	// every connection is checked at dial time.
	BaseURL string
	// APIKey is sent as a bearer token when not empty. It is never logged
	// nor written into a Result.
	APIKey string
	// Headers are sent with every request, after the client's own (so they
	// may override Content-Type but not the body).
	Headers map[string]string
	// AllowRemote lets the client connect to a host that is not loopback;
	// the caller sets it only on the user's explicit opt-in.
	AllowRemote bool
	// TLS configures https connections (a private CA bundle, or
	// verification off); nil uses the system's roots.
	TLS *tls.Config
	// Epoch is the run's epoch: every offset in a Result is measured from
	// it with the monotonic clock, so it must come from time.Now() in this
	// process (a parsed time has no monotonic reading). Zero means the
	// moment New was called.
	Epoch time.Time
	// MaxConns is the expected number of concurrent requests; the idle
	// connection pool keeps that many connections so that no stream pays for
	// a new dial once warm. It does not limit concurrency.
	MaxConns int
	// Connect bounds a dial (defaultConnectTimeout when zero).
	Connect time.Duration
	// FirstByte bounds the time from Sent to the first line of a stream's
	// body, or to the response headers of a non-streaming request
	// (defaultFirstByteTimeout when zero). It includes queueing and prefill.
	FirstByte time.Duration
	// Idle bounds the gap between two reads of the response body once it
	// has started (defaultIdleTimeout when zero).
	Idle time.Duration
	// Total bounds the whole request, Sent to end (defaultTotalTimeout when zero).
	Total time.Duration
}

// Client sends requests to one OpenAI-compatible server and turns each into
// a Result. It is safe for concurrent use; one Client serves a whole run.
type Client struct {
	root        string // scheme://host[:port][/prefix], without /v1
	rootPath    string // the root's own path ("" or "/prefix")
	chatPath    string // the request paths, the root's own path included
	complPath   string
	embedPath   string
	pool        *wirePool // Do's connections (wire.go)
	wireHeaders []byte    // the configured headers, rendered (wireHeaderBlock)
	headerSet   map[string]bool
	apiKey      string
	epoch       time.Time
	connect     time.Duration
	firstByte   time.Duration
	idle        time.Duration
	total       time.Duration
	http        *http.Client
	transport   *http.Transport
	oa          *openai.Client
	streams     sync.Pool // *stream
	loadCounter func() (*tokenizer.Tokenizer, error)
	chunks      atomic.Int64 // token-bearing chunks received, all requests
	firsts      firstTokens  // first tokens received, all requests
	readers     readerStats  // how the streams' reads went, all requests
	requests    atomic.Uint64
	// tokenizeDialect is the /tokenize body the server understood
	// (tokenize.go); 0 until one has.
	tokenizeDialect atomic.Int32
	headers         map[string]string
	redact          *redact.Redactor // the key and header values, out of every message
}

// requestKey returns a key unique to one request of this client, for the
// Idempotency-Key header: the epoch's wall-clock time and a counter.
func (c *Client) requestKey() string {
	return "servebench-" + strconv.FormatInt(c.epoch.UnixNano(), 36) + "-" + strconv.FormatUint(c.requests.Add(1), 36)
}

// Chunks is the number of token-bearing chunks received so far over all
// requests, for live progress displays (records carry the exact figures).
// It is safe for concurrent use.
func (c *Client) Chunks() int64 { return c.chunks.Load() }

// firstTokens counts first tokens as they arrive, and sums their times to
// first token, for a live TTFT that includes requests still streaming.
type firstTokens struct {
	n, sumNS atomic.Int64
}

func (f *firstTokens) add(ttft time.Duration) {
	f.n.Add(1)
	f.sumNS.Add(int64(ttft))
}

// FirstTokens returns how many requests have received their first token so
// far and the sum of their times to first token, for live progress
// displays: the difference between two calls gives the mean TTFT of the
// first tokens in between, streams still running included. It is safe for
// concurrent use.
func (c *Client) FirstTokens() (n int64, sum time.Duration) {
	return c.firsts.n.Load(), time.Duration(c.firsts.sumNS.Load())
}

// ReaderStats sums how the reads of finished streams went: whether the
// readers kept up with the bytes or the bytes waited for them. A reader
// that keeps up spends its time waiting inside reads, each of which
// returns what little has arrived; a reader that is the bottleneck spends
// its time between reads (decoding, recording, or waiting for a CPU) and
// finds a full buffer at every read. All fields are totals since the
// Client was made; differences between two calls describe the streams
// that finished in between.
type ReaderStats struct {
	Streams   int64         // streams that read a body
	Reads     int64         // reads of stream bodies
	FullReads int64         // reads that found a full buffer's worth waiting
	InRead    time.Duration // time spent inside reads
	Reading   time.Duration // time from each stream's first read to its last read's end
}

// readerStats accumulates ReaderStats, one atomic add per field per stream.
type readerStats struct {
	streams, reads, full, inRead, reading atomic.Int64
}

func (r *readerStats) add(t *stampReader) {
	r.streams.Add(1)
	r.reads.Add(int64(t.reads))
	r.full.Add(int64(t.full))
	r.inRead.Add(int64(t.inRead))
	r.reading.Add(int64(t.at.Sub(t.first)))
}

// ReaderStats returns the reader figures of the streams finished so far.
// It is safe for concurrent use.
func (c *Client) ReaderStats() ReaderStats {
	return ReaderStats{Streams: c.readers.streams.Load(), Reads: c.readers.reads.Load(), FullReads: c.readers.full.Load(),
		InRead: time.Duration(c.readers.inRead.Load()), Reading: time.Duration(c.readers.reading.Load())}
}

// New validates cfg and builds a Client with a transport tuned for many
// concurrent streams: an idle pool of MaxConns connections to the one host,
// no compression, HTTP/1.1 only, no proxy, no redirects, loopback only.
func New(cfg Config) (*Client, error) {
	policy := loopback.Policy{AllowRemote: cfg.AllowRemote}
	root, err := normalizeBaseURL(cfg.BaseURL, policy)
	if err != nil {
		return nil, err
	}
	maxConns := cfg.MaxConns
	if maxConns <= 0 {
		maxConns = defaultMaxConns
	}
	epoch := cfg.Epoch
	if epoch.IsZero() {
		epoch = time.Now()
	}
	c := &Client{
		root:      root,
		apiKey:    cfg.APIKey,
		headers:   maps.Clone(cfg.Headers),
		redact:    redact.New(append(slices.Collect(maps.Values(cfg.Headers)), cfg.APIKey)...),
		epoch:     epoch,
		connect:   orDefault(cfg.Connect, defaultConnectTimeout),
		firstByte: orDefault(cfg.FirstByte, defaultFirstByteTimeout),
		idle:      orDefault(cfg.Idle, defaultIdleTimeout),
		total:     orDefault(cfg.Total, defaultTotalTimeout),
	}
	dialer := &net.Dialer{KeepAlive: 30 * time.Second, Control: policy.DialControl()}
	if c.connect > 0 {
		dialer.Timeout = c.connect
	}
	u, err := url.Parse(root)
	if err != nil {
		return nil, err
	}
	c.rootPath = u.Path
	c.chatPath, c.complPath, c.embedPath = u.Path+"/v1/chat/completions", u.Path+"/v1/completions", u.Path+"/v1/embeddings"
	if c.pool, err = newWirePool(root, maxConns, dialer, cfg.TLS); err != nil {
		return nil, err
	}
	if c.wireHeaders, c.headerSet, err = wireHeaderBlock(cfg.Headers); err != nil {
		return nil, fmt.Errorf("headers: %w", err)
	}
	c.transport = &http.Transport{
		Proxy:               nil, // never route load through a proxy from the environment
		DialContext:         dialer.DialContext,
		MaxIdleConns:        maxConns,
		MaxIdleConnsPerHost: maxConns,
		IdleConnTimeout:     idleConnExpiry,
		DisableCompression:  true, // compression would batch SSE events and cost CPU per chunk
		ForceAttemptHTTP2:   false,
		// A non-nil empty map disables HTTP/2 over TLS: one stream per
		// connection keeps a slow stream from delaying its neighbours.
		TLSNextProto:    map[string]func(string, *tls.Conn) http.RoundTripper{},
		TLSClientConfig: cfg.TLS,
		ReadBufferSize:  connReadBytes,
		WriteBufferSize: connWriteBytes,
	}
	c.http = &http.Client{
		Transport: c.transport,
		// A redirect could lead the load off loopback; a 3xx is reported as it is.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = root + "/v1"
	oc.HTTPClient = headerDoer{c}
	c.oa = openai.NewClientWithConfig(oc)
	c.streams.New = func() any { return newStream() }
	c.loadCounter = sync.OnceValues(func() (*tokenizer.Tokenizer, error) { return tokenizer.Load("") })
	return c, nil
}

// Close releases the idle connections of the pool. The Client must not be
// used afterwards.
func (c *Client) Close() {
	c.pool.closeIdle()
	c.transport.CloseIdleConnections()
}

// Epoch returns the run's epoch every Result offset counts from.
func (c *Client) Epoch() time.Time { return c.epoch }

// Models lists the model IDs the server serves (GET /v1/models), in the
// server's order. It is used to auto-detect the model when a scenario names
// none.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	list, err := c.oa.ListModels(ctx)
	var netErr *net.OpError
	switch {
	case errors.As(err, &netErr):
		return nil, fmt.Errorf("list models at %s: %w", c.root, err)
	case err != nil:
		// The server's answer may echo the key: its text is redacted (and
		// so not wrapped).
		return nil, fmt.Errorf("list models at %s: %s", c.root, c.redact.String(err.Error()))
	}
	ids := make([]string, 0, len(list.Models))
	for _, m := range list.Models {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// Warm is WarmUp that returns the number of connections opened.
func (c *Client) Warm(ctx context.Context, n int) (int, error) {
	w, err := c.WarmUp(ctx, n)
	return w.Opened, err
}

// Warm-up bounds: WarmUp gives up on the connections not yet answered
// once none has answered for warmIdle (or five times the time the last
// one took, if longer), and at warmDeadline in any case.
const (
	warmIdle     = 300 * time.Millisecond
	warmDeadline = 3 * time.Second
)

// WarmUp opens up to n connections to the server, at once, and leaves them
// in the idle pool of Do's connections (n is capped at the pool size,
// Config.MaxConns), so
// that the first n concurrent requests of a run do not pay for a dial, and
// a burst of dials does not inflate the first TTFTs. It holds n GET
// /v1/models requests open at once, so each has its own connection; any
// HTTP status will do.
//
// It cannot stall a run: a server that serves only so many connections at
// once (llama.cpp's llama-server, one per HTTP thread, holding an idle
// kept-alive one for seconds) leaves the others unanswered, and WarmUp
// stops waiting for them once answers stop coming (warmIdle, at most
// warmDeadline), cancels them, and keeps what it opened: the load opens
// more as it needs them. It reports what it did, with its duration; its
// error is the first one met when no connection could be opened.
func (c *Client) WarmUp(ctx context.Context, n int) (results.WarmUp, error) {
	n = min(n, c.pool.max)
	w := results.WarmUp{Wanted: max(n, 0)}
	if n <= 0 {
		return w, nil
	}
	began := time.Now()
	wctx, cancel := context.WithTimeout(ctx, warmDeadline)
	defer cancel()
	type answer struct {
		conn *wireConn
		err  error
	}
	head := c.getHead("/v1/models")
	answers := make(chan answer, n)
	for range n {
		go func() {
			conn, err := c.pool.dial(wctx)
			if err == nil {
				if err = conn.probe(wctx, head); err != nil {
					conn.nc.Close()
					conn = nil
				}
			}
			answers <- answer{conn, err}
		}()
	}
	var held []*wireConn
	var firstErr error
	idle := time.NewTimer(warmDeadline)
	defer idle.Stop()
	for got := 0; got < n; {
		select {
		case a := <-answers:
			got++
			switch {
			case a.err == nil && wctx.Err() == nil:
				held = append(held, a.conn)
				idle.Reset(max(warmIdle, 5*time.Since(began)))
			case a.err == nil:
				a.conn.nc.Close() // answered after the warm-up gave up
			case firstErr == nil && wctx.Err() == nil:
				firstErr = a.err
			}
		case <-idle.C:
			cancel() // the rest answer at once, canceled
		}
	}
	// Every answered request held its connection until now: they are
	// distinct, and go to the pool.
	for _, conn := range held {
		c.pool.put(conn)
	}
	w.Opened, w.Duration = len(held), time.Since(began)
	if len(held) == 0 && firstErr != nil {
		return w, fmt.Errorf("warm %d connections to %s: %w", n, c.root, firstErr)
	}
	return w, nil
}

// since returns the offset of now from the epoch, never zero (zero means
// "did not happen" in a Result).
func (c *Client) since(now time.Time) time.Duration {
	d := now.Sub(c.epoch)
	if d <= 0 {
		d = 1
	}
	return d
}

func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0 // disabled
	}
	return d
}

// setHeaders sets the API key and the configured headers on req.
func (c *Client) setHeaders(req *http.Request) {
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
}

// headerDoer sends go-openai's requests (model listing) with the
// configured headers.
type headerDoer struct{ c *Client }

func (d headerDoer) Do(req *http.Request) (*http.Response, error) {
	d.c.setHeaders(req)
	return d.c.http.Do(req)
}

// normalizeBaseURL returns the server root without a trailing slash or /v1.
func normalizeBaseURL(raw string, policy loopback.Policy) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("base URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("base URL %q: scheme must be http or https", raw)
	}
	if u.Host == "" {
		return "", fmt.Errorf("base URL %q: no host", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("base URL %q: must hold no credentials, query or fragment", raw)
	}
	if !policy.Host(u.Hostname()) {
		return "", fmt.Errorf("base URL %q: host %q: %w", raw, u.Hostname(), loopback.ErrNotLoopback)
	}
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/v1")
	return u.Scheme + "://" + u.Host + p, nil
}

// versionTimeout bounds ServerVersion: the answer is a nicety for the
// report, never worth delaying a run for.
const versionTimeout = 3 * time.Second

// ServerVersion asks the server for its version (GET /version, which vLLM
// and the simulator answer with {"version": "0.11.2"}) and returns it, or
// an error when the server does not answer that way within a few seconds.
// Not every server has the route: callers record the version when there is
// one and carry on without it otherwise.
func (c *Client) ServerVersion(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.root+"/version", nil)
	if err != nil {
		return "", err
	}
	c.setHeaders(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("server version from %s/version: %s", c.root, c.redact.String(err.Error()))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", fmt.Errorf("server version from %s/version: %w", c.root, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("server version from %s/version: HTTP %d", c.root, resp.StatusCode)
	}
	var v struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(body, &v); err != nil || strings.TrimSpace(v.Version) == "" {
		return "", fmt.Errorf("server version from %s/version: the answer holds no \"version\" string", c.root)
	}
	// A version is a short word; anything longer or with control
	// characters is not one, and would garble the report's header line.
	s := strings.TrimSpace(v.Version)
	if len(s) > 100 || strings.ContainsFunc(s, unicode.IsControl) {
		return "", fmt.Errorf("server version from %s/version: %q is not a version", c.root, s[:min(len(s), 100)])
	}
	return s, nil
}

// ModelError is a model the server does not serve: the run is refused
// before any load is sent, naming what the server serves.
type ModelError struct {
	Model  string
	Root   string   // the server's root URL
	Served []string // what GET /v1/models lists
}

func (e *ModelError) Error() string {
	q := make([]string, len(e.Served))
	for i, m := range e.Served {
		q[i] = strconv.Quote(m)
	}
	s := fmt.Sprintf("model %q is not served by %s", e.Model, e.Root)
	if len(q) == 0 {
		return s + ": its /v1/models lists no model"
	}
	if len(q) > 10 {
		q = append(q[:10], fmt.Sprintf("and %d more", len(e.Served)-10))
	}
	s += ": it serves " + strings.Join(q, ", ")
	if m, ok := closestModel(e.Model, e.Served); ok {
		s += fmt.Sprintf(" (did you mean %q?)", m)
	}
	return s + "; set target.model to one of them, or leave it empty to take the first"
}

// closestModel is the served model nearest to name: within two edits
// (case aside), or the one whose name contains it or ends with its last
// path element ("Qwen2.5-0.5B" for "Qwen/Qwen2.5-0.5B-Instruct").
func closestModel(name string, served []string) (string, bool) {
	if m, ok := suggest.Closest(name, served); ok {
		return m, true
	}
	lower := strings.ToLower(name)
	base := lower[strings.LastIndex(lower, "/")+1:]
	for _, m := range served {
		lm := strings.ToLower(m)
		mb := lm[strings.LastIndex(lm, "/")+1:]
		if len(base) >= 4 && strings.Contains(lm, base) || len(mb) >= 4 && strings.Contains(base, mb) {
			return m, true
		}
	}
	return "", false
}

// CheckModel asks the server's GET /v1/models whether it serves model,
// before a run sends load. It returns a *ModelError when the listing
// names other models only, and nil otherwise: when model is listed, or
// the listing could not be had (no route, no server: the connection
// warm-up and the requests themselves will tell).
func (c *Client) CheckModel(ctx context.Context, model string) error {
	served, err := c.Models(ctx)
	switch {
	case err != nil || len(served) == 0:
		return nil
	case slices.Contains(served, model):
		return nil
	}
	return &ModelError{Model: model, Root: c.root, Served: served}
}

// ServerSlots asks the server how many requests it runs at once, where it
// says: llama.cpp's GET /props (total_slots), else its GET /slots (one
// entry per slot). It returns 0 and "" when the server does not say
// (vLLM, SGLang: their batch limit is in their log), within a few
// seconds.
func (c *Client) ServerSlots(ctx context.Context) (slots int, source string) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	get := func(path string, out any) bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.root+path, nil)
		if err != nil {
			return false
		}
		c.setHeaders(req)
		resp, err := c.http.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return err == nil && resp.StatusCode == http.StatusOK && json.Unmarshal(body, out) == nil
	}
	var props struct {
		TotalSlots int `json:"total_slots"`
	}
	if get("/props", &props) && props.TotalSlots > 0 {
		return props.TotalSlots, "GET /props total_slots"
	}
	var list []struct {
		ID *int `json:"id"`
	}
	if get("/slots", &list) && len(list) > 0 && list[0].ID != nil {
		return len(list), "GET /slots"
	}
	return 0, ""
}
