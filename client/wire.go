package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The request path's own HTTP/1.1 connections. net/http's transport runs
// two goroutines per connection (a reader and a writer) beside the
// caller's, each with its stack, and layers its reads; a run holds
// thousands of streams, each on its own connection, so Do sends on
// connections of its own instead: one goroutine per stream (the caller's),
// the request written in one write, the response head read with
// http.ReadResponse (which also decodes a chunked body) from one buffer
// per connection. The other calls (models, version, tokenize) use
// net/http: they are few.

// wireConn is one connection of the pool.
type wireConn struct {
	big    bool // br is a big buffer (bigConnReadBytes)
	nc     net.Conn
	raw    syscall.Conn // the TCP connection under nc, for liveness checks; nil when unknown
	br     *bufio.Reader
	idleAt time.Time // when it went back to the pool
}

// alive reports whether an idle connection is still open: a peek that
// does not wait finds nothing to read (a closed one reads its end, and
// an idle one should have nothing else). A server that closes idle
// connections (llama.cpp's closes each after its response) is found out
// here rather than by a request sent into the void.
func (c *wireConn) alive() bool {
	if c.br.Buffered() > 0 {
		return false
	}
	if c.raw == nil {
		return true
	}
	return peekOpen(c.raw)
}

// wirePool keeps idle connections to the one host, most recent first.
type wirePool struct {
	mu   sync.Mutex
	idle []*wireConn
	max  int
	bigs atomic.Int32 // connections with a big buffer

	// Connections still draining the end of a finished stream's body in
	// the background (see awaitIdle): how many; the requests waiting for
	// one and a channel closed and replaced (both under mu) when one comes
	// back or is dropped while any waits; whether the last one could not
	// be reused.
	draining atomic.Int32
	waiters  int
	back     chan struct{}
	noReturn atomic.Bool

	addr    string // host:port to dial
	host    string // Host header
	dialer  *net.Dialer
	tlsConf *tls.Config // nil for http
}

func newWirePool(root string, max int, dialer *net.Dialer, tlsConf *tls.Config) (*wirePool, error) {
	u, err := url.Parse(root)
	if err != nil {
		return nil, err
	}
	p := &wirePool{max: max, host: u.Host, dialer: dialer, back: make(chan struct{})}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	p.addr = net.JoinHostPort(u.Hostname(), port)
	if u.Scheme == "https" {
		p.tlsConf = tlsConf.Clone()
		if p.tlsConf == nil {
			p.tlsConf = &tls.Config{}
		}
		if p.tlsConf.ServerName == "" {
			p.tlsConf.ServerName = u.Hostname()
		}
		p.tlsConf.NextProtos = []string{"http/1.1"}
	}
	return p, nil
}

// returnWait bounds how long awaitIdle waits for a draining connection:
// the drain itself is bounded by the watchdog's grace (drainGrace), after
// which the connection comes back or is dropped.
const returnWait = drainGrace + 50*time.Millisecond

// awaitIdle takes an idle connection; when the pool has none and one is
// still draining the end of a finished stream's body, it waits for one
// to come back, while any is draining (at most returnWait). It returns nil
// when there is none to take: the request dials. The end of a body after [DONE]
// normally arrives within microseconds, but the goroutine that reads it
// can run after the worker's next request asks for a connection: dialing
// then opens one connection more than the workers, and a server that
// serves only so many at once (llama.cpp's HTTP threads, each holding an
// idle kept-alive connection for 5 s) leaves it unserved until it drops
// an idle one. It does not wait when the last drained connection could
// not be reused (a server that keeps the body open after [DONE], or
// closes the connection): a dial is needed anyway. Do calls it before the
// request's send time is taken, so the wait is the client's, not the
// server's, and hands what it took to send.
func (p *wirePool) awaitIdle(ctx context.Context) *wireConn {
	var timeout <-chan time.Time // made when a wait begins: most requests find a connection idle
	for {
		if c := p.takeIdle(); c != nil {
			return c
		}
		p.mu.Lock()
		if len(p.idle) > 0 {
			p.mu.Unlock()
			continue // one came back meanwhile
		}
		if p.draining.Load() == 0 || p.noReturn.Load() {
			p.mu.Unlock()
			return nil
		}
		back := p.back
		p.waiters++
		p.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(returnWait)
			defer t.Stop()
			timeout = t.C
		}
		woke := true
		select {
		case <-back:
		case <-timeout:
			woke = false
		case <-ctx.Done():
			woke = false
		}
		p.mu.Lock()
		p.waiters--
		p.mu.Unlock()
		if !woke {
			return nil
		}
	}
}

// drained notes that a draining connection came back to the pool
// (reused) or was dropped, and wakes the requests waiting for one.
func (p *wirePool) drained(reused bool) {
	p.noReturn.Store(!reused)
	p.mu.Lock()
	p.draining.Add(-1)
	if p.waiters > 0 { // most returns find nobody waiting: no channel to replace
		close(p.back)
		p.back = make(chan struct{})
	}
	p.mu.Unlock()
}

// get returns an idle connection (reused true) or a new one.
func (p *wirePool) get(ctx context.Context) (c *wireConn, reused bool, err error) {
	if c = p.takeIdle(); c != nil {
		return c, true, nil
	}
	c, err = p.dial(ctx)
	return c, false, err
}

// takeIdle takes the most recent idle connection that is still open, or
// returns nil; the expired and the closed ones it meets are dropped.
func (p *wirePool) takeIdle() *wireConn {
	p.mu.Lock()
	for len(p.idle) > 0 {
		c := p.idle[len(p.idle)-1]
		p.idle[len(p.idle)-1] = nil
		p.idle = p.idle[:len(p.idle)-1]
		if time.Since(c.idleAt) < idleConnExpiry {
			p.mu.Unlock()
			if c.alive() {
				return c
			}
			p.drop(c)
			p.mu.Lock()
			continue
		}
		p.drop(c)
	}
	p.mu.Unlock()
	return nil
}

func (p *wirePool) dial(ctx context.Context) (*wireConn, error) {
	nc, err := p.dialer.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	raw, _ := nc.(syscall.Conn)
	if p.tlsConf != nil {
		tc := tls.Client(nc, p.tlsConf)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	return &wireConn{nc: nc, raw: raw, br: bufio.NewReaderSize(nc, connReadBytes)}, nil
}

// put returns c to the pool, or closes it when the pool is full.
func (p *wirePool) put(c *wireConn) {
	c.idleAt = time.Now()
	p.mu.Lock()
	if len(p.idle) < p.max {
		p.idle = append(p.idle, c)
		c = nil
	}
	p.mu.Unlock()
	if c != nil {
		p.drop(c)
	}
}

// closeIdle closes every idle connection.
func (p *wirePool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		p.drop(c)
	}
}

// probe sends head (a GET) on c and reads the answer to its end: any
// status will do, as long as the connection can serve another request.
// ctx's end aborts it.
func (c *wireConn) probe(ctx context.Context, head []byte) error {
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(aLongTimeAgo) })
	defer stop()
	if _, err := c.nc.Write(head); err != nil {
		return err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)); err != nil {
		return err
	}
	if resp.Close || c.br.Buffered() > 0 || ctx.Err() != nil {
		return fmt.Errorf("warm-up: %s did not keep the connection open", resp.Status)
	}
	return nil
}

// exchange is one request's use of a connection: the response, and what
// decides whether the connection can serve another request.
type exchange struct {
	hot  bool // most reads of the response found a full buffer waiting (see release)
	pool *wirePool
	conn *wireConn
	resp *http.Response
	body *eofReader
	stop func() bool // stops the cancellation hook; false when it ran

	inDrain bool // the end of the body drains in the background (see draining)
}

// draining marks x's connection as draining the end of its body in the
// background: a request may wait for it (awaitIdle) until release.
func (x *exchange) draining() {
	x.inDrain = true
	x.pool.draining.Add(1)
}

// eofReader notes whether its reader reached its end.
type eofReader struct {
	r   io.Reader
	eof bool
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if errors.Is(err, io.EOF) {
		e.eof = true
	}
	return n, err
}

// release returns the connection to the pool when the response was read
// to its end and both sides keep it alive, else closes it.
//
// A connection whose stream was hot (its reads found a full buffer
// waiting: the data came faster than the client read it) gets a big read
// buffer for its next request, so that a fast server is read in a few
// large reads rather than many small ones; one that was not goes back to
// the small buffer. Big buffers are counted against maxBigConns, so that
// thousands of slow streams keep their small ones.
func (x *exchange) release() {
	hooked := x.stop()
	c := x.conn
	reuse := hooked && x.body.eof && !x.resp.Close && c.br.Buffered() == 0
	if x.inDrain {
		defer x.pool.drained(reuse)
	}
	if !reuse {
		x.pool.drop(c)
		return
	}
	switch {
	case x.hot && !c.big && x.pool.bigs.Add(1) <= maxBigConns:
		c.br, c.big = bufio.NewReaderSize(c.nc, bigConnReadBytes), true
	case x.hot && !c.big:
		x.pool.bigs.Add(-1)
	case !x.hot && c.big:
		c.br, c.big = bufio.NewReaderSize(c.nc, connReadBytes), false
		x.pool.bigs.Add(-1)
	}
	x.pool.put(c)
}

// Big read buffers: their size, how many connections may hold one, and
// the reads of a stream that tell it is hot.
const (
	bigConnReadBytes = 64 << 10
	maxBigConns      = 128
	hotReads         = 32
)

// drop closes c, which leaves the pool.
func (p *wirePool) drop(c *wireConn) {
	if c.big {
		p.bigs.Add(-1)
		c.big = false
	}
	c.nc.Close()
}

// aLongTimeAgo is a deadline in the past: it makes blocked reads and
// writes on a connection return at once.
var aLongTimeAgo = time.Unix(1, 0)

// send writes the request head and body on a connection and reads the
// response head. A request that fails on a reused connection before any
// byte of a response (the server closed the kept-alive connection, as
// llama.cpp's does after each response) is sent once more on a new
// connection. A first send that was not written whole, or whose
// connection was reset (the server closed it with the request unread),
// was not processed; one written whole on a connection the server closed
// in order may have been (a server that closes a connection while it
// works on its request): resentWritten counts those. ctx's end aborts it,
// and any later read of the body. conns is the number of connections it
// took; written is called when the request has been written. The first
// attempt goes on first when it is not nil (a connection awaitIdle took),
// else on one from get.
func (p *wirePool) send(ctx context.Context, first *wireConn, head, body []byte, written func()) (x *exchange, conns, resentWritten int, err error) {
	for attempt := 0; ; attempt++ {
		var c *wireConn
		reused := false
		switch {
		case attempt == 0 && first != nil:
			c, reused = first, true
		case attempt == 0:
			c, reused, err = p.get(ctx)
		default:
			c, err = p.dial(ctx) // the retry goes on a new connection
		}
		if err != nil {
			return nil, conns, resentWritten, err
		}
		conns++
		stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(aLongTimeAgo) })
		bufs := net.Buffers{head, body}
		_, err = bufs.WriteTo(c.nc)
		var resp *http.Response
		answered, whole := false, err == nil
		if err == nil {
			written()
			// The first byte apart: an error before it means the server
			// never answered (ReadResponse calls an early end "unexpected").
			if _, err = c.br.Peek(1); err == nil {
				answered = true
				resp, err = readFinal(c.br)
			}
		}
		if err == nil {
			er := &eofReader{r: resp.Body}
			resp.Body = io.NopCloser(er)
			return &exchange{pool: p, conn: c, resp: resp, body: er, stop: stop}, conns, resentWritten, nil
		}
		stop()
		p.drop(c)
		if ctx.Err() != nil {
			return nil, conns, resentWritten, ctx.Err()
		}
		if !reused || attempt > 0 || answered || !unanswered(err) {
			return nil, conns, resentWritten, err
		}
		if whole && !errors.Is(err, syscall.ECONNRESET) {
			resentWritten++
		}
	}
}

// readFinal reads a response head, skipping informational (1xx) ones as
// net/http's transport does: the final answer is the one that counts.
func readFinal(br *bufio.Reader) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, err
		}
	}
}

// unanswered reports whether a request's error on a reused connection
// shows the server closed it before answering: the end of the stream or a
// reset before any byte of a response.
func unanswered(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// getHead builds the head of a GET of path (under the root's own path),
// with the key and the configured headers.
func (c *Client) getHead(path string) []byte {
	b := make([]byte, 0, 128+len(c.wireHeaders))
	b = append(b, "GET "...)
	b = append(b, c.rootPath...)
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, c.pool.host...)
	b = append(b, "\r\nUser-Agent: servebench"...)
	if c.apiKey != "" && !c.headerSet["Authorization"] {
		b = append(b, "\r\nAuthorization: Bearer "...)
		b = append(b, c.apiKey...)
	}
	b = append(b, c.wireHeaders...)
	return append(b, "\r\n\r\n"...)
}

// requestHead builds the head of a POST of n body bytes to path, with the
// client's own headers, then the configured ones (which replace an own
// header of the same name).
func (c *Client) requestHead(path string, n int, stream bool) []byte {
	b := make([]byte, 0, 256+len(c.wireHeaders))
	b = append(b, "POST "...)
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, c.pool.host...)
	b = append(b, "\r\nUser-Agent: servebench\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(n), 10)
	own := func(name, value string) {
		if c.headerSet[name] {
			return // replaced by a configured header
		}
		b = append(append(append(append(b, "\r\n"...), name...), ": "...), value...)
	}
	own("Content-Type", "application/json")
	if stream {
		own("Accept", "text/event-stream")
	}
	own("Idempotency-Key", c.requestKey())
	if c.apiKey != "" {
		own("Authorization", "Bearer "+c.apiKey)
	}
	b = append(b, c.wireHeaders...)
	return append(b, "\r\n\r\n"...)
}

// wireHeaderBlock renders the configured headers once, each as
// "\r\nName: value", and the set of their canonical names; a name or
// value that could break the request's head is an error.
func wireHeaderBlock(h map[string]string) ([]byte, map[string]bool, error) {
	var b []byte
	set := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		v := h[k]
		if k == "" || strings.ContainsAny(k, " \t\r\n:") || strings.ContainsAny(v, "\r\n\x00") {
			return nil, nil, fmt.Errorf("header %q: a name without spaces or colons and a value on one line", k)
		}
		name := textproto.CanonicalMIMEHeaderKey(k)
		if name == "Host" || name == "Content-Length" || name == "Transfer-Encoding" || name == "Connection" {
			return nil, nil, fmt.Errorf("header %q is the client's to set", k)
		}
		set[name] = true
		b = append(append(append(append(b, "\r\n"...), name...), ": "...), v...)
	}
	return b, set, nil
}
