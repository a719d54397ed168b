// Package selftest measures servebench's own ingest ceiling, so that a user
// knows how much load one process can receive before the harness, not the
// server, sets the figures.
//
// It consumes a configuration (stream counts, a duration per measurement,
// chunks per response) and produces one Row per stream count: the chunks
// per second the real client path (client.Do, as a run uses it) takes in
// from a zero-latency SSE source on loopback, beside a raw reader that only
// counts "data:" lines over the same kind of connections, and the CPU each
// spends per chunk. The source, the client and the reader share this
// process and its cores; the raw reader is the floor a Go program on this
// machine cannot beat, so the ratio of the two rates is the share of the
// machine's ingest capacity servebench's measurements leave usable.
package selftest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/internal/openfiles"
	"github.com/servebench/servebench/results"
)

// Config configures Run. Zero fields take the defaults.
type Config struct {
	Streams  []int         // concurrent streams per measurement (default 1, 64, 1,000, 10,000)
	Duration time.Duration // length of each measurement (default 2 s)
	Chunks   int           // token chunks per response (default 256)
}

// Measure is one side's figures at one stream count.
type Measure struct {
	Chunks       int64   `json:"chunks"`           // token chunks read
	Seconds      float64 `json:"seconds"`          // wall time of the measurement
	ChunksPerSec float64 `json:"chunks_per_s"`     // Chunks / Seconds
	CPUPerChunk  float64 `json:"cpu_ns_per_chunk"` // process CPU (user + system, the source's share included) per chunk, ns
}

// Row compares the client path with the raw reader at one stream count.
type Row struct {
	Streams int     `json:"streams"`
	Client  Measure `json:"servebench"`
	Raw     Measure `json:"raw_reader"`
	Ratio   float64 `json:"ratio"` // Client.ChunksPerSec / Raw.ChunksPerSec
	// Skipped says why the stream count was not measured (this process
	// may not open a socket for each end of every stream).
	Skipped string `json:"skipped,omitempty"`
}

// Run measures every stream count of cfg, the raw reader first, then the
// client path, each for cfg.Duration, and calls progress (when not nil)
// with each finished Row. It returns when all are measured or ctx ends.
func Run(ctx context.Context, cfg Config, progress func(Row)) ([]Row, error) {
	if len(cfg.Streams) == 0 {
		cfg.Streams = []int{1, 64, 1000, 10000}
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 2 * time.Second
	}
	if cfg.Chunks <= 0 {
		cfg.Chunks = 256
	}
	src, err := newSource(cfg.Chunks)
	if err != nil {
		return nil, err
	}
	defer src.close()
	var rows []Row
	for _, n := range cfg.Streams {
		if ctx.Err() != nil {
			break
		}
		// Each stream holds two sockets here: the client's and the source's.
		if err := openfiles.Check(2*n, fmt.Sprintf("%d streams with the source in this process", n)); err != nil {
			r := Row{Streams: n, Skipped: err.Error()}
			rows = append(rows, r)
			if progress != nil {
				progress(r)
			}
			continue
		}
		raw, err := measure(ctx, cfg.Duration, func(ctx context.Context) (func(context.Context) int64, func(), error) {
			return rawReader(src.url, n)
		}, n)
		if err != nil {
			return rows, fmt.Errorf("selftest: raw reader at %d streams: %w", n, err)
		}
		cl, err := measure(ctx, cfg.Duration, func(ctx context.Context) (func(context.Context) int64, func(), error) {
			return clientPath(ctx, src.url, n, cfg.Chunks)
		}, n)
		if err != nil {
			return rows, fmt.Errorf("selftest: client at %d streams: %w", n, err)
		}
		r := Row{Streams: n, Client: cl, Raw: raw}
		if raw.ChunksPerSec > 0 {
			r.Ratio = cl.ChunksPerSec / raw.ChunksPerSec
		}
		rows = append(rows, r)
		if progress != nil {
			progress(r)
		}
	}
	return rows, ctx.Err()
}

// measure runs n workers of one side for d and reports what they read.
// setup returns the work of one request (the chunks it read) and a cleanup.
func measure(ctx context.Context, d time.Duration, setup func(context.Context) (func(context.Context) int64, func(), error), n int) (Measure, error) {
	one, cleanup, err := setup(ctx)
	if err != nil {
		return Measure{}, err
	}
	defer cleanup()
	var chunks atomic.Int64
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	cpu0, t0 := cpuTime(), time.Now()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for runCtx.Err() == nil {
				chunks.Add(one(runCtx))
			}
		})
	}
	wg.Wait()
	secs, cpu := time.Since(t0).Seconds(), cpuTime()-cpu0
	m := Measure{Chunks: chunks.Load(), Seconds: secs}
	if secs > 0 {
		m.ChunksPerSec = float64(m.Chunks) / secs
	}
	if m.Chunks > 0 {
		m.CPUPerChunk = float64(cpu.Nanoseconds()) / float64(m.Chunks)
	}
	return m, nil
}

// clientPath is the real client: one client.Do per request, counting the
// token chunks the record holds.
func clientPath(ctx context.Context, url string, n, chunks int) (func(context.Context) int64, func(), error) {
	c, err := client.New(client.Config{BaseURL: url, MaxConns: n, Epoch: time.Now()})
	if err != nil {
		return nil, nil, err
	}
	warmCtx, cancel := context.WithTimeout(ctx, warmTimeout)
	defer cancel()
	if _, err := c.Warm(warmCtx, n); err != nil && ctx.Err() == nil {
		c.Close()
		return nil, nil, err
	}
	one := func(ctx context.Context) int64 {
		r := c.Do(ctx, &client.Request{API: results.APIChat, Model: "selftest", Prompt: "x", MaxTokens: chunks,
			Stream: true, IncludeUsage: true})
		if r.Outcome != results.OK {
			return 0
		}
		return int64(len(r.ChunkTimes))
	}
	return one, c.Close, nil
}

// warmTimeout bounds opening the client's connections: a source that
// cannot accept them (no file descriptors left) must not stall the test.
const warmTimeout = 30 * time.Second

// rawReader posts the same request with a plain net/http client and counts
// "data:" lines, doing nothing else: the floor of reading SSE in Go.
func rawReader(url string, n int) (func(context.Context) int64, func(), error) {
	tr := &http.Transport{MaxIdleConns: n, MaxIdleConnsPerHost: n, DisableCompression: true,
		DialContext: (&net.Dialer{}).DialContext}
	hc := &http.Client{Transport: tr}
	body := []byte(`{"model":"selftest","messages":[{"role":"user","content":"x"}],"stream":true}`)
	one := func(ctx context.Context) int64 {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(body))
		if err != nil {
			return 0
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var lines int64
		done := false
		for sc.Scan() {
			if bytes.HasPrefix(sc.Bytes(), []byte("data:")) {
				lines++
				done = bytes.Equal(sc.Bytes(), []byte("data: [DONE]"))
			}
		}
		if !done || sc.Err() != nil {
			return 0 // cut off by the end of the measurement, like the client's canceled requests
		}
		// The raw count includes the usage chunk and [DONE]; the client
		// counts token chunks only.
		return max(lines-2, 0)
	}
	return one, tr.CloseIdleConnections, nil
}

// source is the zero-latency SSE server: every response is the same
// pre-rendered vLLM-format stream, written in one write, so that the source
// costs next to nothing per chunk and the readers' per-chunk work is what
// is measured (a reader then finds many chunks in one socket read, as it
// does behind any busy server).
type source struct {
	srv    *http.Server
	ln     net.Listener
	url    string
	body   []byte
	chunks [][]byte
}

func newSource(chunks int) (*source, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("selftest source: %w", err)
	}
	s := &source{ln: ln, url: "http://" + ln.Addr().String()}
	for i := range chunks {
		s.chunks = append(s.chunks, fmt.Appendf(nil,
			`data: {"id":"chatcmpl-selftest","object":"chat.completion.chunk","created":1763780000,"model":"selftest","choices":[{"index":0,"delta":{"content":"tok%d"},"logprobs":null,"finish_reason":null}]}`+"\n\n", i%100))
	}
	s.chunks[chunks-1] = bytes.Replace(s.chunks[chunks-1], []byte(`"finish_reason":null`), []byte(`"finish_reason":"length"`), 1)
	s.chunks = append(s.chunks, fmt.Appendf(nil,
		`data: {"id":"chatcmpl-selftest","object":"chat.completion.chunk","created":1763780000,"model":"selftest","choices":[],"usage":{"prompt_tokens":1,"total_tokens":%d,"completion_tokens":%d}}`+"\n\ndata: [DONE]\n\n",
		chunks+1, chunks))
	s.body = bytes.Join(s.chunks, nil)
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
	fmt.Fprintln(tw, "streams\tservebench chunks/s\tCPU/chunk\traw reader chunks/s\tCPU/chunk\tratio\t")
	var skipped []string
	for _, r := range rows {
		if r.Skipped != "" {
			fmt.Fprintf(tw, "%d\t-\t\t-\t\t-\t\n", r.Streams)
			skipped = append(skipped, fmt.Sprintf("skipped: %s\n", r.Skipped))
			continue
		}
		fmt.Fprintf(tw, "%d\t%.0f\t%.2f µs\t%.0f\t%.2f µs\t%.2f\t\n", r.Streams, r.Client.ChunksPerSec, r.Client.CPUPerChunk/1e3,
			r.Raw.ChunksPerSec, r.Raw.CPUPerChunk/1e3, r.Ratio)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("(one process: the source's CPU counts on both sides; ratio = servebench ÷ raw reader)\n")
	for _, s := range skipped {
		b.WriteString(s)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
