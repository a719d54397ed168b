package client

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/realtime"
	"github.com/servebench/servebench/internal/slotserver"
	"github.com/servebench/servebench/results"
)

// TestClosedLoopKeepsItsConnections: a closed loop of as many workers as
// a server serves connections, against a server that ends each body 5 ms
// after [DONE] and keeps an idle connection 5 s. The worker's next request
// comes while its last connection is still draining; it must wait for
// that connection rather than dial one more, which the server would leave
// unserved until it dropped an idle one 5 s later: a 5 s TTFT charged to
// the server. Every request is quick and the server sees two connections.
func TestClosedLoopKeepsItsConnections(t *testing.T) {
	t.Parallel()
	const slots, each = 2, 6
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t%d\"}}]}\n\n", i)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(5 * time.Millisecond) // the body's end comes a moment later
	}))
	srv.Listener = slotserver.LimitListener(srv.Listener, slots)
	var opened atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Config.IdleTimeout = 5 * time.Second
	srv.Start()
	defer srv.Close()
	c := newTestClient(t, srv.URL, Config{MaxConns: 64})

	watch := realtime.Watch()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slow []string
	for w := range slots {
		wg.Go(func() {
			for i := range each {
				res := c.Do(context.Background(), &Request{API: results.APIChat, Prompt: "x", Stream: true})
				e2e, _ := res.E2E()
				if res.Outcome != results.OK || e2e > time.Second {
					mu.Lock()
					slow = append(slow, fmt.Sprintf("worker %d request %d: %s in %v", w, i, res.Outcome, e2e))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	late := watch()
	if (len(slow) > 0 || opened.Load() != slots) && late > realtime.TooBusy {
		// A request waits for a draining connection only so long (the
		// drain grace): on a machine that wakes goroutines that late,
		// dialing is the client's right answer.
		t.Skipf("the machine could not keep a real-time schedule (%.0f %% of 1 ms sleeps woke late): %d connections, slow %q", 100*late, opened.Load(), slow)
	}
	if len(slow) > 0 || opened.Load() != slots {
		t.Errorf("the server saw %d connections (want %d); failed or slow requests: %q", opened.Load(), slots, slow)
	}
}
