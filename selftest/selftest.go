// Package selftest measures servebench's own ingest ceiling, so that a user
// knows how much load one process can receive before the harness, not the
// server, sets the figures.
//
// It consumes a configuration (stream counts, a measured window, rounds,
// chunks per response, and optionally an external source) and produces
// one Row per stream count: the chunks per second the real client path
// (client.Do, with each record written to a results file and aggregated,
// as a run does) takes in from a zero-latency SSE source,
// beside a raw reader that only counts "data:" lines over the same kind
// of connections (HTTP/1.1 keep-alive, one stream each, 64 KiB reads),
// the CPU each spends per chunk, and the ratio of the two
// with its spread over rounds. The raw reader is the floor a Go program on
// this machine cannot beat, so the ratio is the share of the machine's
// ingest capacity servebench's measurements leave usable.
//
// The two sides are measured alike, so that the ratio cannot flatter: each
// round runs each side's streams for a warm-up (connections opened,
// buffers grown) and then counts the chunks that arrive within the window,
// finished responses or not; the sides alternate within and between
// rounds (raw first in odd rounds, the client first in even ones), each
// side keeping its connections across rounds; both read the same response
// of Chunks chunks (2,000 by default, so a window holds many responses
// per stream), from the built-in source or from Source, an external
// server (loopback unless AllowRemote), such as the server a run will
// load. With the built-in source the source's CPU is in this process and
// counts on both sides.
package selftest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/internal/loopback"
	"github.com/servebench/servebench/internal/openfiles"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
)

// Config configures Run. Zero fields take the defaults.
type Config struct {
	Streams  []int         // concurrent streams per measurement (default 1, 64, 1,000, 10,000)
	Duration time.Duration // measured window of each side in each round (default 3 s)
	Warmup   time.Duration // each side's run before its window (default 1 s)
	Rounds   int           // interleaved rounds (default 3)
	Chunks   int           // token chunks per response (default 2,000)
	// Source is an external OpenAI-compatible server to read from, for
	// example the one a run will load (http://127.0.0.1:8000); "" runs
	// the built-in zero-latency source in this process.
	Source string
	// AllowRemote lets Source be a host that is not loopback: only on the
	// user's explicit opt-in.
	AllowRemote bool
	// Model is the model named in the requests; "" takes the first the
	// source lists.
	Model string
}

func (c *Config) defaults() {
	if len(c.Streams) == 0 {
		c.Streams = []int{1, 64, 1000, 10000}
	}
	if c.Duration <= 0 {
		c.Duration = 3 * time.Second
	}
	if c.Warmup <= 0 {
		c.Warmup = time.Second
	}
	if c.Rounds <= 0 {
		c.Rounds = 3
	}
	if c.Chunks <= 0 {
		c.Chunks = 2000
	}
}

// Measure is one side's figures over one window.
type Measure struct {
	Chunks       int64   `json:"chunks"`           // token chunks read within the window
	Seconds      float64 `json:"seconds"`          // the window's wall time
	ChunksPerSec float64 `json:"chunks_per_s"`     // Chunks / Seconds
	CPUPerChunk  float64 `json:"cpu_ns_per_chunk"` // process CPU (user + system; the built-in source's share included) per chunk, ns
}

// Round is one round's pair of measures.
type Round struct {
	Client Measure `json:"servebench"`
	Raw    Measure `json:"raw_reader"`
	Ratio  float64 `json:"ratio"` // Client.ChunksPerSec / Raw.ChunksPerSec
}

// Row compares the client path with the raw reader at one stream count.
type Row struct {
	Streams int `json:"streams"`
	// Client and Raw are the medians over the rounds of each figure.
	Client Measure `json:"servebench"`
	Raw    Measure `json:"raw_reader"`
	// Ratio is the median of the rounds' ratios; RatioMin and RatioMax
	// their range: the spread to read the ratio with.
	Ratio    float64 `json:"ratio"`
	RatioMin float64 `json:"ratio_min"`
	RatioMax float64 `json:"ratio_max"`
	Rounds   []Round `json:"rounds"`
	// Skipped says why the stream count was not measured (this process
	// may not open a socket for each end of every stream).
	Skipped string `json:"skipped,omitempty"`
}

// Run measures every stream count of cfg in cfg.Rounds interleaved
// rounds, and calls progress (when not nil) with each finished Row. It
// returns when all are measured or ctx ends.
func Run(ctx context.Context, cfg Config, progress func(Row)) ([]Row, error) {
	cfg.defaults()
	url := cfg.Source
	sockets := 1 // per stream: the client's; the built-in source holds the other end
	if url == "" {
		src, err := newSource(cfg.Chunks)
		if err != nil {
			return nil, err
		}
		defer src.close()
		url, sockets = src.url, 2
	}
	policy := loopback.Policy{AllowRemote: cfg.AllowRemote}
	if err := policy.CheckURL(url); err != nil {
		return nil, fmt.Errorf("selftest: --source %w", err)
	}
	url = strings.TrimSuffix(strings.TrimRight(url, "/"), "/v1")
	if cfg.Model == "" {
		m, err := firstModel(ctx, url, cfg.AllowRemote)
		if err != nil {
			return nil, err
		}
		cfg.Model = m
	}
	var rows []Row
	for _, n := range cfg.Streams {
		if ctx.Err() != nil {
			break
		}
		r := Row{Streams: n}
		if err := openfiles.Check(sockets*n, fmt.Sprintf("%d streams (%d sockets each)", n, sockets)); err != nil {
			r.Skipped = err.Error()
		} else if err := measureRow(ctx, &cfg, url, policy, &r); err != nil {
			return rows, fmt.Errorf("selftest: %d streams: %w", n, err)
		}
		rows = append(rows, r)
		if progress != nil {
			progress(r)
		}
	}
	return rows, ctx.Err()
}

// firstModel asks the source for its first model.
func firstModel(ctx context.Context, url string, remote bool) (string, error) {
	c, err := client.New(client.Config{BaseURL: url, AllowRemote: remote, MaxConns: 1})
	if err != nil {
		return "", err
	}
	defer c.Close()
	ms, err := c.Models(ctx)
	if err != nil {
		return "", fmt.Errorf("selftest: %w (set the model with --model)", err)
	}
	if len(ms) == 0 {
		return "", fmt.Errorf("selftest: %s/v1/models lists no model (set the model with --model)", url)
	}
	return ms[0], nil
}

// side is one of the two readers: start runs n streams until ctx ends,
// counting the token chunks they read into count.
type side interface {
	start(ctx context.Context, n int, count *atomic.Int64) (wait func())
	close()
	failures() *failures
}

// failures counts a side's requests that failed (not those the window's
// end canceled) and keeps the first one's message.
type failures struct {
	n     atomic.Int64
	first atomic.Value // string
}

func (f *failures) add(msg string) {
	if f.n.Add(1) == 1 {
		f.first.Store(msg)
	}
}

func (f *failures) String() string {
	msg, _ := f.first.Load().(string)
	return fmt.Sprintf("%d requests failed, the first: %s", f.n.Load(), msg)
}

// measureRow runs cfg.Rounds rounds at r.Streams streams and fills r.
func measureRow(ctx context.Context, cfg *Config, url string, policy loopback.Policy, r *Row) error {
	n := r.Streams
	req := &client.Request{API: results.APIChat, Model: cfg.Model, Prompt: "x", MaxTokens: cfg.Chunks, IgnoreEOS: true,
		Stream: true, IncludeUsage: true}
	cl, err := newClientSide(ctx, url, n, req, cfg.AllowRemote)
	if err != nil {
		return err
	}
	defer cl.close()
	raw, err := newRawSide(url, n, req, policy)
	if err != nil {
		return err
	}
	defer raw.close()
	for i := range cfg.Rounds {
		order := []side{raw, cl}
		if i%2 == 1 {
			order = []side{cl, raw}
		}
		var ms [2]Measure
		for k, s := range order {
			m, err := window(ctx, s, n, cfg.Warmup, cfg.Duration)
			if err != nil {
				return err
			}
			ms[k] = m
		}
		if i%2 == 1 {
			ms[0], ms[1] = ms[1], ms[0]
		}
		rd := Round{Raw: ms[0], Client: ms[1]}
		if rd.Raw.ChunksPerSec > 0 {
			rd.Ratio = rd.Client.ChunksPerSec / rd.Raw.ChunksPerSec
		}
		r.Rounds = append(r.Rounds, rd)
	}
	r.summarize()
	return nil
}

// summarize sets r's medians and the ratio's range from its rounds.
func (r *Row) summarize() {
	med := func(f func(Round) float64) float64 {
		v := make([]float64, 0, len(r.Rounds))
		for _, rd := range r.Rounds {
			v = append(v, f(rd))
		}
		slices.Sort(v)
		if len(v) == 0 {
			return 0
		}
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	r.Client = Measure{Chunks: int64(med(func(x Round) float64 { return float64(x.Client.Chunks) })),
		Seconds: med(func(x Round) float64 { return x.Client.Seconds }), ChunksPerSec: med(func(x Round) float64 { return x.Client.ChunksPerSec }),
		CPUPerChunk: med(func(x Round) float64 { return x.Client.CPUPerChunk })}
	r.Raw = Measure{Chunks: int64(med(func(x Round) float64 { return float64(x.Raw.Chunks) })),
		Seconds: med(func(x Round) float64 { return x.Raw.Seconds }), ChunksPerSec: med(func(x Round) float64 { return x.Raw.ChunksPerSec }),
		CPUPerChunk: med(func(x Round) float64 { return x.Raw.CPUPerChunk })}
	r.Ratio = med(func(x Round) float64 { return x.Ratio })
	for i, rd := range r.Rounds {
		if i == 0 || rd.Ratio < r.RatioMin {
			r.RatioMin = rd.Ratio
		}
		r.RatioMax = max(r.RatioMax, rd.Ratio)
	}
}

// window runs one side's n streams for warmup, then counts what they read
// over d.
func window(ctx context.Context, s side, n int, warmup, d time.Duration) (Measure, error) {
	runCtx, cancel := context.WithCancel(ctx)
	var count atomic.Int64
	wait := s.start(runCtx, n, &count)
	defer func() { cancel(); wait() }()
	if !sleep(ctx, warmup) {
		return Measure{}, ctx.Err()
	}
	c0, cpu0, t0 := count.Load(), cpuTime(), time.Now()
	if !sleep(ctx, d) {
		return Measure{}, ctx.Err()
	}
	m := Measure{Chunks: count.Load() - c0, Seconds: time.Since(t0).Seconds()}
	if f := s.failures(); m.Chunks == 0 && f.n.Load() > 0 {
		return m, fmt.Errorf("no chunk read in %v: %v", d, f)
	}
	cpu := cpuTime() - cpu0
	if m.Seconds > 0 {
		m.ChunksPerSec = float64(m.Chunks) / m.Seconds
	}
	if m.Chunks > 0 {
		m.CPUPerChunk = float64(cpu.Nanoseconds()) / float64(m.Chunks)
	}
	return m, nil
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// loop runs n workers, each calling one until ctx ends.
func loop(ctx context.Context, n int, one func(context.Context)) (wait func()) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				one(ctx)
			}
		})
	}
	return wg.Wait
}

// clientSide is the real client path as a run uses it: client.Do per
// request, and every record handed to one writer goroutine that encodes
// it into a results file and adds it to a report.Aggregate, as a run's
// writer does; the client's chunk counter (Client.Chunks, the live count
// every run keeps) counts the token chunks as they arrive. Leaving out
// the record path would flatter the client: at a few million chunks a
// second, writing and aggregating them is a fifth of its work.
type clientSide struct {
	c    *client.Client
	req  *client.Request
	dir  string // where each window's results file goes (removed after)
	fail failures
}

func (s *clientSide) failures() *failures { return &s.fail }

func newClientSide(ctx context.Context, url string, n int, req *client.Request, remote bool) (*clientSide, error) {
	c, err := client.New(client.Config{BaseURL: url, MaxConns: n, AllowRemote: remote, Epoch: time.Now()})
	if err != nil {
		return nil, err
	}
	warmCtx, cancel := context.WithTimeout(ctx, warmTimeout)
	defer cancel()
	if _, err := c.Warm(warmCtx, n); err != nil && ctx.Err() == nil {
		c.Close()
		return nil, err
	}
	return &clientSide{c: c, req: req, dir: os.TempDir()}, nil
}

func (s *clientSide) start(ctx context.Context, n int, count *atomic.Int64) func() {
	base := s.c.Chunks()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the client's counter, copied into count
		defer close(done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			count.Store(s.c.Chunks() - base)
			select {
			case <-t.C:
			case <-stop:
				return
			}
		}
	}()
	records := make(chan results.Result, recordsBuffer)
	written := make(chan struct{})
	go s.write(records, written)
	wait := loop(ctx, n, func(ctx context.Context) {
		r := s.c.Do(ctx, s.req)
		if r.Outcome == results.Failed {
			s.fail.add(r.Error)
		}
		records <- r
	})
	return func() { wait(); close(records); <-written; close(stop); <-done }
}

// recordsBuffer is the records a run's writer may have waiting, as a run
// allows.
const recordsBuffer = 4096

// write is the run's writer, for the records of one window: each into a
// results file and an aggregate. The file is removed at the end.
func (s *clientSide) write(records <-chan results.Result, done chan<- struct{}) {
	defer close(done)
	f, err := os.CreateTemp(s.dir, "servebench-selftest-*.jsonl")
	var w *results.Writer
	if err == nil {
		defer os.Remove(f.Name())
		w = results.NewWriter(f)
		defer func() { w.Close(); f.Close() }()
	}
	agg := report.New()
	for r := range records {
		if w != nil {
			_ = w.Write(results.ResultRecord(&r))
		}
		agg.Add(&r)
	}
}

func (s *clientSide) close() { s.c.Close() }

// warmTimeout bounds opening the client's connections: a source that
// cannot accept them (no file descriptors left) must not stall the test.
const warmTimeout = 30 * time.Second

// rawSide posts the client's own request body with a plain net/http
// transport (an idle pool of n connections, no compression, the client's
// loopback check) and counts "data:" lines with 64 KiB buffers, doing
// nothing else: the floor of reading SSE in Go, as a hand-written raw
// reader does it (../shared/rigs/mocksse's rawclient reads alike), and
// the buffer the client gives a connection whose stream outpaces it.
type rawSide struct {
	url  string
	body []byte
	tr   *http.Transport
	hc   *http.Client
	fail failures
}

func (s *rawSide) failures() *failures { return &s.fail }

func newRawSide(url string, n int, req *client.Request, policy loopback.Policy) (*rawSide, error) {
	body, err := req.Body()
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{KeepAlive: 30 * time.Second, Control: policy.DialControl()}
	tr := &http.Transport{Proxy: nil, DialContext: dialer.DialContext, MaxIdleConns: n, MaxIdleConnsPerHost: n,
		DisableCompression: true, ReadBufferSize: rawBufferBytes, WriteBufferSize: client.ConnWriteBytes}
	return &rawSide{url: url + "/v1/chat/completions", body: body, tr: tr, hc: &http.Client{Transport: tr}}, nil
}

// rawBufferBytes is the raw reader's read buffer, of the connection and
// of its line reader alike.
const rawBufferBytes = 64 << 10

// rawBatch is how many lines a raw stream counts before adding them to
// the shared counter (the client batches its live count alike).
const rawBatch = 16

func (s *rawSide) start(ctx context.Context, n int, count *atomic.Int64) func() {
	return loop(ctx, n, func(ctx context.Context) { s.one(ctx, count) })
}

// one reads one response, counting its token chunks into count.
func (s *rawSide) one(ctx context.Context, count *atomic.Int64) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(s.body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			s.fail.add(err.Error())
		}
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.fail.add(resp.Status)
		return
	}
	br := bufio.NewReaderSize(resp.Body, rawBufferBytes)
	var pending int64
	for {
		line, err := br.ReadSlice('\n')
		if bytes.HasPrefix(line, []byte("data:")) {
			// Every data line but the role chunk, the usage chunk and
			// [DONE] is a token chunk: the raw reader cannot tell which
			// these are without reading them, so it counts all, a
			// difference of 3 in Chunks+3 in its favour.
			if pending++; pending == rawBatch {
				count.Add(pending)
				pending = 0
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
	}
	count.Add(pending)
}

func (s *rawSide) close() { s.tr.CloseIdleConnections() }

// source is the zero-latency SSE server: every response is the same
// pre-rendered vLLM-format stream, written in one write, so that the source
// costs next to nothing per chunk and the readers' per-chunk work is what
// is measured (a reader then finds many chunks in one socket read, as it
// does behind any busy server).
type source struct {
	srv  *http.Server
	ln   net.Listener
	url  string
	body []byte
}

func newSource(chunks int) (*source, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("selftest source: %w", err)
	}
	s := &source{ln: ln, url: "http://" + ln.Addr().String(), body: streamBody(chunks)}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"selftest","object":"model"}]}`)
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(s.body)))
		w.Write(s.body)
	})
	// Accept errors (too many open files) are retried by the server, which
	// would log each one: the stream count was checked against the limit.
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go s.srv.Serve(ln)
	return s, nil
}

// streamBody is a vLLM chat stream: a role chunk, chunks one-token content
// chunks (the last with finish_reason), a usage chunk and [DONE].
func streamBody(chunks int) []byte {
	const head = `data: {"id":"chatcmpl-selftest","object":"chat.completion.chunk","created":1763780000,"model":"selftest","choices":[{"index":0,"delta":`
	var b bytes.Buffer
	b.WriteString(head + `{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	for i := range chunks {
		fin := `null}]}`
		if i == chunks-1 {
			fin = `"length","stop_reason":null}]}`
		}
		fmt.Fprintf(&b, "%s{\"content\":\" tok%d\"},\"logprobs\":null,\"finish_reason\":%s\n\n", head, i%100, fin)
	}
	fmt.Fprintf(&b, `data: {"id":"chatcmpl-selftest","object":"chat.completion.chunk","created":1763780000,"model":"selftest","choices":[],"usage":{"prompt_tokens":1,"total_tokens":%d,"completion_tokens":%d}}`+"\n\ndata: [DONE]\n\n",
		chunks+1, chunks)
	return b.Bytes()
}

func (s *source) close() { s.srv.Close() }

// cpuTime is the process's user + system CPU time so far (0 if unknown).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// WriteText writes the rows as a table.
func WriteText(w io.Writer, rows []Row) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "streams\tservebench chunks/s\tCPU/chunk\traw reader chunks/s\tCPU/chunk\tratio\tspread\t")
	var skipped []string
	rounds := 0
	for _, r := range rows {
		if r.Skipped != "" {
			fmt.Fprintf(tw, "%d\t-\t\t-\t\t-\t\t\n", r.Streams)
			skipped = append(skipped, fmt.Sprintf("skipped: %s\n", r.Skipped))
			continue
		}
		rounds = max(rounds, len(r.Rounds))
		fmt.Fprintf(tw, "%d\t%.0f\t%.2f µs\t%.0f\t%.2f µs\t%.2f\t%.2f–%.2f\t\n", r.Streams, r.Client.ChunksPerSec, r.Client.CPUPerChunk/1e3,
			r.Raw.ChunksPerSec, r.Raw.CPUPerChunk/1e3, r.Ratio, r.RatioMin, r.RatioMax)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "(medians of %d interleaved rounds, both sides warmed; ratio = servebench ÷ raw reader, spread = its range over the rounds;\n", rounds)
	b.WriteString(" with the built-in source its CPU counts on both sides)\n")
	for _, s := range skipped {
		b.WriteString(s)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
