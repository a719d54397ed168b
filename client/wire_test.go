package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
)

// TestHotConnectionsGetBigBuffers: a stream whose reads find a full
// buffer waiting (a zero-latency server) leaves its connection a big read
// buffer for the next request; a paced stream gives it back; the pool
// counts them.
func TestHotConnectionsGetBigBuffers(t *testing.T) {
	t.Parallel()
	var fast strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&fast, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" t%d\"},\"finish_reason\":null}]}\n\n", i)
	}
	fast.WriteString("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if r.Header.Get("X-Paced") == "" {
			io.WriteString(w, fast.String())
			return
		}
		for i := range 40 { // one chunk a read
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" t%d\"},\"finish_reason\":null}]}\n\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(time.Millisecond)
		}
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	do := func(c *Client) {
		t.Helper()
		if r := c.Do(context.Background(), &Request{API: results.APIChat, Model: "m", Prompt: "x", Stream: true}); r.Outcome != results.OK {
			t.Fatalf("%s: %s", r.Outcome, r.Error)
		}
		// the connection goes back to the pool in the background
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			c.pool.mu.Lock()
			n := len(c.pool.idle)
			c.pool.mu.Unlock()
			if n == 1 {
				return
			}
		}
		t.Fatal("the connection did not come back to the pool")
	}
	bigIdle := func(c *Client) bool {
		c.pool.mu.Lock()
		defer c.pool.mu.Unlock()
		return len(c.pool.idle) == 1 && c.pool.idle[0].big && c.pool.idle[0].br.Size() == bigConnReadBytes
	}
	c := newTestClient(t, srv.URL, Config{MaxConns: 1})
	do(c)
	if !bigIdle(c) || c.pool.bigs.Load() != 1 {
		t.Fatalf("after a zero-latency stream: big %v, %d big buffers", bigIdle(c), c.pool.bigs.Load())
	}
	paced := newTestClient(t, srv.URL, Config{MaxConns: 1, Headers: map[string]string{"X-Paced": "1"}})
	do(paced)
	if bigIdle(paced) || paced.pool.bigs.Load() != 0 {
		t.Fatalf("after a paced stream: big %v", bigIdle(paced))
	}
	// The fast connection, paced now, gives its big buffer back.
	c.headerSet["X-Paced"] = true
	c.wireHeaders = []byte("\r\nX-Paced: 1")
	do(c)
	if bigIdle(c) || c.pool.bigs.Load() != 0 {
		t.Fatalf("a hot connection turned paced kept its big buffer (%d counted)", c.pool.bigs.Load())
	}
}

// TestInformationalResponseSkipped: a 103 Early Hints before the answer
// is skipped, as net/http's transport skips it.
func TestInformationalResponseSkipped(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, Config{MaxConns: 1})
	r := c.Do(context.Background(), &Request{API: results.APIChat, Model: "m", Prompt: "x", Stream: true})
	if r.Outcome != results.OK || r.Status != http.StatusOK || len(r.ChunkTimes) != 1 {
		t.Fatalf("%s (status %d, %d chunks): %s", r.Outcome, r.Status, len(r.ChunkTimes), r.Error)
	}
}
