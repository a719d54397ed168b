package selftest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/internal/loopback"
	"github.com/servebench/servebench/internal/openfiles"
	"github.com/servebench/servebench/results"
)

// TestRun measures one small stream count briefly, in two rounds: both
// sides read chunks in every round, the row's figures are the rounds'
// medians and the ratio's spread holds it.
func TestRun(t *testing.T) {
	t.Parallel()
	rows, err := Run(context.Background(), Config{Streams: []int{4}, Duration: 400 * time.Millisecond, Warmup: 200 * time.Millisecond,
		Rounds: 2, Chunks: 64}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	if len(r.Rounds) != 2 || r.Client.Chunks == 0 || r.Raw.Chunks == 0 || r.Ratio <= 0 || r.RatioMin > r.Ratio || r.RatioMax < r.Ratio {
		t.Errorf("row %+v", r)
	}
	for i, rd := range r.Rounds {
		if rd.Client.Chunks == 0 || rd.Raw.Chunks == 0 || rd.Client.Seconds < 0.35 {
			t.Errorf("round %d: %+v", i, rd)
		}
	}
	var b strings.Builder
	if err := WriteText(&b, rows); err != nil || !strings.Contains(b.String(), "spread") || !strings.Contains(b.String(), "2 interleaved rounds") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
}

// TestExternalSource reads from a server outside the package's own
// source (here an httptest server, as a user's would be): the model is
// taken from its list, both sides read its chunks; a host that is not
// loopback is refused without the opt-in.
func TestExternalSource(t *testing.T) {
	t.Parallel()
	body := streamBody(100)
	var asked atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			io.WriteString(w, `{"object":"list","data":[{"id":"their-model","object":"model"}]}`)
			return
		}
		b, _ := io.ReadAll(r.Body)
		asked.Store(string(b))
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(body)
	}))
	defer srv.Close()
	rows, err := Run(context.Background(), Config{Streams: []int{2}, Duration: 400 * time.Millisecond, Warmup: 200 * time.Millisecond,
		Rounds: 1, Chunks: 100, Source: srv.URL + "/v1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[0]; r.Client.Chunks == 0 || r.Raw.Chunks == 0 {
		t.Errorf("row %+v", r)
	}
	if b, _ := asked.Load().(string); !strings.Contains(b, `"model":"their-model"`) || !strings.Contains(b, `"max_tokens":100`) {
		t.Errorf("request body %s", b)
	}
	_, err = Run(context.Background(), Config{Streams: []int{1}, Source: "http://192.0.2.1:8000"}, nil)
	if err == nil || !strings.Contains(err.Error(), loopback.ErrNotLoopback.Error()) {
		t.Errorf("a remote source without the opt-in: %v", err)
	}
}

// TestWindowCountsCutResponses: a side's window counts every chunk read
// within it, finished responses or not, so that a long response cut by
// the window's end is not lost (a response longer than the window still
// counts).
func TestWindowCountsCutResponses(t *testing.T) {
	t.Parallel()
	src, err := newSource(400_000) // about 80 MB a response: longer than any window here, even under the race detector
	if err != nil {
		t.Fatal(err)
	}
	defer src.close()
	req := &client.Request{API: results.APIChat, Model: "selftest", Prompt: "x", MaxTokens: 200_000, Stream: true, IncludeUsage: true}
	raw, err := newRawSide(src.url, 1, req, loopback.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.close()
	cl, err := newClientSide(context.Background(), src.url, 1, req, false)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.close()
	for _, s := range []side{raw, cl} {
		m, err := window(context.Background(), s, 1, 200*time.Millisecond, 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if m.Chunks == 0 {
			t.Errorf("%T: no chunk counted in a window shorter than one response", s)
		}
	}
}

// benchmarkSide drives one side with 64 streams over the built-in source;
// the reported figure is ns per chunk.
func benchmarkSide(b *testing.B, mk func(url string, req *client.Request) (side, error)) {
	const streams, chunks = 64, 2000
	src, err := newSource(chunks)
	if err != nil {
		b.Fatal(err)
	}
	defer src.close()
	req := &client.Request{API: results.APIChat, Model: "selftest", Prompt: "x", MaxTokens: chunks, Stream: true, IncludeUsage: true}
	s, err := mk(src.url, req)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	var count atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	b.ResetTimer()
	wait := s.start(ctx, streams, &count)
	for count.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	cancel()
	wait()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(count.Load()), "ns/chunk")
}

// BenchmarkClientPath is the real client's ingest at 64 streams.
func BenchmarkClientPath(b *testing.B) {
	benchmarkSide(b, func(url string, req *client.Request) (side, error) {
		return newClientSide(context.Background(), url, 64, req, false)
	})
}

// BenchmarkRawReader is the floor: a reader that only counts data lines.
func BenchmarkRawReader(b *testing.B) {
	benchmarkSide(b, func(url string, req *client.Request) (side, error) {
		return newRawSide(url, 64, req, loopback.Policy{})
	})
}

// TestRunSkipsBeyondOpenFiles checks that a stream count this process
// cannot open sockets for is skipped, saying why, at once: it used to
// stall for good on "too many open files" (10,000 streams under a limit
// of 20,000 descriptors).
func TestRunSkipsBeyondOpenFiles(t *testing.T) {
	t.Parallel()
	limit, ok := openfiles.Limit()
	if !ok {
		t.Skip("the open-files limit is unknown on this system")
	}
	n := limit/2 + 1
	start := time.Now()
	rows, err := Run(context.Background(), Config{Streams: []int{n}, Duration: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || !strings.Contains(rows[0].Skipped, "ulimit -n") || rows[0].Client.Chunks != 0 {
		t.Fatalf("rows %+v: want %d streams skipped for the open-files limit", rows, n)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("skipping took %v", d)
	}
	var b strings.Builder
	if err := WriteText(&b, rows); err != nil || !strings.Contains(b.String(), "skipped: ") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
}

// TestFailingSourceSaid: a source that refuses every request is not
// measured as zero chunks a second: the self-test says why.
func TestFailingSourceSaid(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			return
		}
		http.Error(w, `{"error":{"message":"model overloaded"}}`, http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	_, err := Run(context.Background(), Config{Streams: []int{1}, Duration: 100 * time.Millisecond, Warmup: 50 * time.Millisecond,
		Rounds: 1, Source: srv.URL}, nil)
	if err == nil || !strings.Contains(err.Error(), "requests failed, the first: 503") {
		t.Errorf("a refusing source: %v", err)
	}
}
