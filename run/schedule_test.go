package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/load"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// streamServer is an httptest server that streams chat completions as vLLM
// does: first token after ttft, then one token every itl. It records what
// it saw: requests started, the most in flight at once, and the bodies.
type streamServer struct {
	*httptest.Server
	ttft, itl time.Duration
	tokens    int

	started, inFlight, maxInFlight atomic.Int64
	mu                             sync.Mutex
	bodies                         []map[string]any
}

func newStreamServer(t testing.TB, ttft, itl time.Duration, tokens int) *streamServer {
	t.Helper()
	s := &streamServer{ttft: ttft, itl: itl, tokens: tokens}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *streamServer) serve(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	s.started.Add(1)
	n := s.inFlight.Add(1)
	for m := s.maxInFlight.Load(); n > m && !s.maxInFlight.CompareAndSwap(m, n); m = s.maxInFlight.Load() {
	}
	// Leave the in-flight count before the last write, so the client
	// cannot start its next request while this one still counts.
	left := false
	leave := func() {
		if !left {
			left = true
			s.inFlight.Add(-1)
		}
	}
	defer leave()

	var body map[string]any
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &body)
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	f := w.(http.Flusher)
	f.Flush()
	const head = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,`
	io.WriteString(w, head+`"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n")
	f.Flush()
	for i := range s.tokens {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(time.Until(t0.Add(s.ttft + time.Duration(i)*s.itl))):
		}
		finish := "null"
		if i == s.tokens-1 {
			finish = `"length"`
		}
		fmt.Fprintf(w, head+`"delta":{"content":" tok"},"finish_reason":%s}]}`+"\n\n", finish)
		f.Flush()
	}
	fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":8,"total_tokens":%d,"completion_tokens":%d}}`+"\n\n", 8+s.tokens, s.tokens)
	leave()
	io.WriteString(w, "data: [DONE]\n\n")
	f.Flush()
}

// collector is a concurrency-safe emit function.
type collector struct {
	mu   sync.Mutex
	recs []results.Result
}

func (c *collector) emit(r results.Result) {
	c.mu.Lock()
	c.recs = append(c.recs, r)
	c.mu.Unlock()
}

// sorted returns the records in Seq order.
func (c *collector) sorted() []results.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.recs)
	slices.SortFunc(out, func(a, b results.Result) int { return int(a.Seq) - int(b.Seq) })
	return out
}

// runScenario loads doc, points it at srv with the real client and runs it
// with ctx.
func runScenario(t *testing.T, ctx context.Context, srv *streamServer, doc string, opts ...option) (*wallClock, []results.Result, error) {
	t.Helper()
	sc, err := scenario.Parse("run.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Set("target.url", srv.URL); err != nil {
		t.Fatal(err)
	}
	epoch := time.Now()
	cl, err := client.New(client.Config{BaseURL: srv.URL, Epoch: epoch, MaxConns: sc.MaxConcurrency()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	r, err := newWallClock(sc, cl, append([]option{withEpoch(epoch)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	var c collector
	err = r.Run(ctx, c.emit)
	return r, c.sorted(), err
}

// checkRecords asserts the invariants every run keeps: one record per
// scheduled request, Seq 0..n-1 each once, Scheduled non-decreasing in Seq
// order, and Sent never before Scheduled.
func checkRecords(t *testing.T, r *wallClock, recs []results.Result) {
	t.Helper()
	p := r.counters()
	if uint64(len(recs)) != p.Scheduled || p.Done != p.Scheduled || p.InFlight != 0 {
		t.Errorf("%d records; progress %+v", len(recs), p)
	}
	if got := p.OK + p.Failed + p.Canceled + p.Dropped; got != p.Done {
		t.Errorf("outcome counters sum to %d, Done is %d", got, p.Done)
	}
	for i, rec := range recs {
		if rec.Seq != uint64(i) {
			t.Fatalf("record %d has Seq %d: sequence numbers are not 0..n-1 once each", i, rec.Seq)
		}
		if rec.Scheduled <= 0 {
			t.Errorf("seq %d: scheduled %v", rec.Seq, rec.Scheduled)
		}
		if i > 0 && rec.Scheduled < recs[i-1].Scheduled {
			t.Errorf("seq %d scheduled at %v, before seq %d at %v", rec.Seq, rec.Scheduled, i-1, recs[i-1].Scheduled)
		}
		if rec.Outcome != results.Dropped && rec.Sent < rec.Scheduled {
			t.Errorf("seq %d sent at %v, before its schedule %v", rec.Seq, rec.Sent, rec.Scheduled)
		}
	}
}

func count(recs []results.Result, o results.Outcome) int {
	n := 0
	for _, r := range recs {
		if r.Outcome == o {
			n++
		}
	}
	return n
}

// TestClosedLoopConcurrency: a closed loop at concurrency N never has more
// than N requests in flight at the server, and reaches N.
func TestClosedLoopConcurrency(t *testing.T) {
	t.Parallel()
	srv := newStreamServer(t, 5*time.Millisecond, 2*time.Millisecond, 5)
	r, recs, err := runScenario(t, t.Context(), srv, `
name: closed
prompts: {input_tokens: 32, output_tokens: 5}
request: {temperature: 0, extra: {top_k: 3}}
load:
  stages:
    - concurrency: 4
      requests: 40
      warmup: {requests: 6}
`)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, r, recs)
	if len(recs) != 40 || count(recs, results.OK) != 40 {
		t.Fatalf("%d records, %d ok; want 40 ok", len(recs), count(recs, results.OK))
	}
	if m := srv.maxInFlight.Load(); m != 4 {
		t.Errorf("at most %d requests in flight at the server, want exactly 4", m)
	}
	for _, rec := range recs {
		if rec.Warmup != (rec.Seq < 6) || rec.Stage != 0 || rec.InputTokens != 32 || rec.MaxTokens != 5 || rec.OutputTokens != 5 {
			t.Errorf("seq %d: warmup %v stage %d input %d max %d output %d", rec.Seq, rec.Warmup, rec.Stage, rec.InputTokens, rec.MaxTokens, rec.OutputTokens)
		}
	}
	// The scenario's request options reach the server.
	srv.mu.Lock()
	body := srv.bodies[0]
	srv.mu.Unlock()
	if body["temperature"] != 0.0 || body["top_k"] != 3.0 || body["ignore_eos"] != true || body["max_tokens"] != 5.0 {
		t.Errorf("request body %v", body)
	}
	if p := r.counters(); p.OK != 40 || p.OutputTokens != 200 || p.Stage != 1 {
		t.Errorf("progress %+v", p)
	}
}

// TestOpenLoopDrops: an open loop at 50 req/s Poisson against a server
// slower than the offered load drops the arrivals that find max_concurrency
// requests in flight, never waits for responses, and latency measured from
// the scheduled time exceeds latency measured from the send.
func TestOpenLoopDrops(t *testing.T) {
	t.Parallel()
	// 4 slots × (150 ms + 5 × 20 ms) per request ≈ 16 req/s of capacity.
	srv := newStreamServer(t, 150*time.Millisecond, 20*time.Millisecond, 5)
	start := time.Now()
	r, recs, err := runScenario(t, t.Context(), srv, `
name: open
prompts: {seed: 5, input_tokens: 16, output_tokens: 5}
load:
  stages:
    - rate: 50
      arrival: poisson
      max_concurrency: 4
      duration: 2s
`)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, r, recs)
	dropped, ok := count(recs, results.Dropped), count(recs, results.OK)
	t.Logf("%d arrivals in %v: %d ok, %d dropped", len(recs), time.Since(start).Round(time.Millisecond), ok, dropped)
	if len(recs) < 60 || len(recs) > 150 {
		t.Errorf("%d arrivals in 2 s at 50/s Poisson", len(recs))
	}
	if dropped == 0 || ok == 0 || ok+dropped != len(recs) {
		t.Errorf("%d ok, %d dropped of %d", ok, dropped, len(recs))
	}
	if uint64(dropped) != r.counters().Dropped {
		t.Errorf("progress counts %d dropped, records %d", r.counters().Dropped, dropped)
	}
	if m := srv.maxInFlight.Load(); m > 4 {
		t.Errorf("%d requests in flight at the server, max_concurrency is 4", m)
	}
	var fromSchedule, fromSend time.Duration
	for _, rec := range recs {
		if rec.Outcome == results.Dropped {
			if rec.Sent != 0 || rec.End != 0 {
				t.Errorf("dropped seq %d has send times", rec.Seq)
			}
			continue
		}
		fromSchedule += rec.End - rec.Scheduled
		fromSend += rec.End - rec.Sent
	}
	if fromSchedule <= fromSend {
		t.Errorf("latency from schedule %v does not exceed latency from send %v", fromSchedule, fromSend)
	}
	// Scheduled times follow the arrival process, not the server: the
	// arrivals span the stage's 2 s although most could not be sent.
	if last := recs[len(recs)-1].Scheduled - recs[0].Scheduled; last < 1500*time.Millisecond {
		t.Errorf("arrivals span only %v", last)
	}
}

// cancelWhenStarted calls cancel once the server has started n requests
// (or after 10 s), then after a further delay; it sends the time of the
// cancel on the returned channel. Waiting for the server rather than a
// fixed time keeps the tests independent of setup time (loading the
// tokenizer takes a second under the race detector).
func cancelWhenStarted(srv *streamServer, n int64, delay time.Duration, cancel func()) <-chan time.Time {
	at := make(chan time.Time, 1)
	go func() {
		for deadline := time.Now().Add(10 * time.Second); srv.started.Load() < n && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(delay)
		cancel()
		at <- time.Now()
	}()
	return at
}

// TestCancelMidRun: canceling the run stops new requests, and every
// request that was started ends as exactly one record (Canceled once the
// grace period expired); the arrivals never started are not recorded.
func TestCancelMidRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, stage string }{
		{"closed", "{concurrency: 4, requests: 1000}"},
		{"open", "{rate: 40, arrival: constant, max_concurrency: 100, requests: 1000}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Streams of 10 s: none can finish before the cancel.
			srv := newStreamServer(t, 10*time.Millisecond, 100*time.Millisecond, 100)
			ctx, cancel := context.WithCancel(t.Context())
			canceled := cancelWhenStarted(srv, 4, 300*time.Millisecond, cancel)
			r, recs, err := runScenario(t, ctx, srv, "name: cancel\nload: {stages: ["+tc.stage+"]}\n", withGrace(100*time.Millisecond))
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run returned %v, want context.Canceled", err)
			}
			if d := time.Since(<-canceled); d > 5*time.Second {
				t.Errorf("Run ended %v after the cancel, with 100 ms of grace", d)
			}
			checkRecords(t, r, recs)
			// A request written just before the cancel reaches its handler
			// a moment later on a busy machine: wait for the server to
			// catch up with what was sent (bounded) before counting.
			for deadline := time.Now().Add(5 * time.Second); srv.started.Load() < int64(len(recs)) && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			if len(recs) == 0 || int64(len(recs)) != srv.started.Load() {
				t.Errorf("%d records for %d requests the server started", len(recs), srv.started.Load())
			}
			if c := count(recs, results.Canceled); c != len(recs) {
				t.Errorf("%d of %d records canceled", c, len(recs))
			}
			for _, rec := range recs {
				if rec.ErrorClass != results.ErrCanceled {
					t.Errorf("seq %d: class %q (%s)", rec.Seq, rec.ErrorClass, rec.Error)
				}
			}
		})
	}
}

// TestGraceLetsRequestsFinish: after a cancel, in-flight requests that end
// within the grace period end OK.
func TestGraceLetsRequestsFinish(t *testing.T) {
	t.Parallel()
	srv := newStreamServer(t, 50*time.Millisecond, 10*time.Millisecond, 20) // 250 ms each
	ctx, cancel := context.WithCancel(t.Context())
	cancelWhenStarted(srv, 3, 0, cancel)
	r, recs, err := runScenario(t, ctx, srv, "name: grace\nload: {stages: [{concurrency: 3, requests: 100}]}\n", withGrace(3*time.Second))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
	checkRecords(t, r, recs)
	// The cancel comes once three requests reached the server; on a busy
	// machine a worker may start another first. Whatever was in flight
	// finishes within the grace period, and nothing starts after.
	if n := len(recs); n < 3 || count(recs, results.OK) != n || int64(n) != srv.started.Load() {
		t.Errorf("%d records, %d ok, %d started at the server; want every request in flight to finish", n, count(recs, results.OK), srv.started.Load())
	}
}

// TestStagesInOrder: stages run one after the other, and each ends when its
// in-flight requests have finished, so no two stages' requests overlap.
// The run ends by max_duration in its last, unbounded-looking stage.
func TestStagesInOrder(t *testing.T) {
	t.Parallel()
	srv := newStreamServer(t, 20*time.Millisecond, 5*time.Millisecond, 4)
	r, recs, err := runScenario(t, t.Context(), srv, `
name: stages
load:
  max_duration: 1500ms
  stages:
    - {concurrency: 2, requests: 6}
    - {rate: 40, arrival: constant, requests: 8, warmup: {duration: 60ms}}
    - {concurrency: 1, duration: 1h}
`, withGrace(0))
	if !errors.Is(err, load.ErrMaxDuration) {
		t.Fatalf("Run returned %v, want load.ErrMaxDuration", err)
	}
	checkRecords(t, r, recs)
	byStage := map[int][]results.Result{}
	for _, rec := range recs {
		byStage[rec.Stage] = append(byStage[rec.Stage], rec)
	}
	if len(byStage[0]) != 6 || len(byStage[1]) != 8 || len(byStage[2]) == 0 {
		t.Fatalf("records per stage: %d, %d, %d", len(byStage[0]), len(byStage[1]), len(byStage[2]))
	}
	for s := 1; s < 3; s++ {
		var prevEnd time.Duration
		for _, rec := range byStage[s-1] {
			prevEnd = max(prevEnd, rec.End)
		}
		if first := byStage[s][0].Scheduled; first < prevEnd {
			t.Errorf("stage %d starts at %v, before stage %d's last request ended at %v", s, first, s-1, prevEnd)
		}
	}
	// Open-loop warmup by duration: the arrivals at 0, 25 and 50 ms.
	for i, rec := range byStage[1] {
		if rec.Warmup != (i < 3) {
			t.Errorf("stage 1 arrival %d: warmup %v", i, rec.Warmup)
		}
	}
	last := byStage[2][len(byStage[2])-1]
	if last.Outcome != results.Canceled && last.Outcome != results.OK {
		t.Errorf("last record %+v", last)
	}
}

func TestRunTwice(t *testing.T) {
	t.Parallel()
	srv := newStreamServer(t, 0, 0, 1)
	r, _, err := runScenario(t, t.Context(), srv, "name: twice\nload: {stages: [{concurrency: 1, requests: 1}]}\n")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(t.Context(), func(results.Result) {}); err == nil {
		t.Error("a second Run succeeded")
	}
}

func TestNewRunnerRefusesInvalid(t *testing.T) {
	t.Parallel()
	sc := &scenario.Scenario{Name: "raw"} // no Defaults, no stages
	if _, err := newWallClock(sc, &client.Client{}); err == nil {
		t.Error("newScheduler accepted a scenario that does not validate")
	}
}

// BenchmarkRunner measures the whole harness path per request (prompt,
// client, loopback HTTP, a 1-token stream, emit): closed loop at
// concurrency 32, and open loop at 2,000 req/s, where lag-µs/req is how
// late requests went out relative to their schedule. The runner and prompt
// generation must not be what limits a run.
func BenchmarkRunner(b *testing.B) {
	for _, bc := range []struct{ name, stage string }{
		{"closed32", "{concurrency: 32, requests: %d}"},
		{"open2000", "{rate: 2000, arrival: constant, max_concurrency: 256, requests: %d}"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv := newStreamServer(b, 0, 0, 1)
			sc, err := scenario.Parse("bench.yaml", []byte("name: bench\nprompts: {input_tokens: {dist: uniform, min: 256, max: 1024}, shared_prefix_tokens: 128, output_tokens: 1}\nload: {stages: [{concurrency: 1, requests: 1}]}\n"))
			if err != nil {
				b.Fatal(err)
			}
			if err := sc.Override("target.url="+srv.URL, "load.stages[0]="+fmt.Sprintf(bc.stage, max(b.N, 1))); err != nil {
				b.Fatal(err)
			}
			prompts, err := scenario.NewPrompts(b.Context(), sc)
			if err != nil {
				b.Fatal(err)
			}
			epoch := time.Now()
			cl, err := client.New(client.Config{BaseURL: srv.URL, Epoch: epoch, MaxConns: sc.MaxConcurrency()})
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			r, err := newWallClock(sc, cl, withEpoch(epoch), withPrompts(prompts))
			if err != nil {
				b.Fatal(err)
			}
			var lag time.Duration
			var sent int
			var mu sync.Mutex
			b.ResetTimer()
			start := time.Now()
			if err := r.Run(context.Background(), func(res results.Result) {
				mu.Lock()
				if res.Outcome != results.Dropped {
					lag += res.Sent - res.Scheduled
					sent++
				}
				mu.Unlock()
			}); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
			b.ReportMetric(float64(lag.Microseconds())/float64(max(sent, 1)), "lag-µs/req")
			b.ReportMetric(float64(r.counters().Dropped), "dropped")
		})
	}
}

func TestNewRunnerNeedsDefaults(t *testing.T) {
	t.Parallel()
	sc := &scenario.Scenario{Name: "hand", Load: scenario.LoadSpec{Stages: []scenario.Stage{{Concurrency: 1, Requests: 1}}}}
	if _, err := newWallClock(sc, &client.Client{}); err == nil || !strings.Contains(err.Error(), "apply Defaults") {
		t.Errorf("newScheduler without Defaults: err = %v", err)
	}
	sc.Defaults()
	if _, err := newWallClock(sc, &client.Client{}); err != nil {
		t.Errorf("newScheduler after Defaults: %v", err)
	}
}

// TestShardsSplitTheLoad runs three shards of one scenario against one
// server and checks the split: sequence numbers unique across shards and
// strided by the shard count; each closed-loop shard its share of the
// requests and warmup; and in the open loop, each shard's arrivals exactly
// the unsharded schedule's arrivals k ≡ shard (mod 3), warmup flags
// included, so that together they are the scenario's schedule.
func TestShardsSplitTheLoad(t *testing.T) {
	t.Parallel()
	srv := newStreamServer(t, time.Millisecond, time.Millisecond, 2)
	const doc = `
name: shards
prompts: {seed: 9, input_tokens: 16, output_tokens: 2}
load:
  stages:
    - {name: closed, concurrency: 5, requests: 20, warmup: {requests: 4}}
    - {name: open, rate: 400, arrival: poisson, max_concurrency: 30, requests: 31, warmup: {requests: 3}}
`
	sc, err := scenario.Parse("run.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	open := &sc.Load.Stages[1]
	sched := scenario.NewSchedule(open, sc.ArrivalSeed(1))
	const n = 3
	seen := map[uint64]int{}
	arrivals := 0
	for i := range n {
		sh := scenario.Shard{Index: i, Count: n}
		r, recs, err := runScenario(t, t.Context(), srv, doc, withShard(sh))
		if err != nil {
			t.Fatal(err)
		}
		var closed, closedWarm int
		var opened []results.Result
		for _, rec := range recs {
			if o, dup := seen[rec.Seq]; dup {
				t.Fatalf("seq %d sent by shards %d and %d", rec.Seq, o, i)
			}
			seen[rec.Seq] = i
			if rec.Seq%n != uint64(i) {
				t.Errorf("shard %d numbered a request %d", i, rec.Seq)
			}
			if rec.Stage == 0 {
				closed++
				if rec.Warmup {
					closedWarm++
				}
			} else {
				opened = append(opened, rec)
			}
		}
		if closed != sh.Share(20) || closedWarm != sh.Share(4) {
			t.Errorf("shard %d: %d closed-loop requests (%d warmup), want %d (%d)", i, closed, closedWarm, sh.Share(20), sh.Share(4))
		}
		if p := r.counters(); uint64(len(recs)) != p.Scheduled {
			t.Errorf("shard %d: %d records, %d scheduled", i, len(recs), p.Scheduled)
		}
		slices.SortFunc(opened, func(a, b results.Result) int { return int(a.Scheduled - b.Scheduled) })
		if len(opened) != sh.Share(31) {
			t.Fatalf("shard %d: %d arrivals, want %d", i, len(opened), sh.Share(31))
		}
		arrivals += len(opened)
		for j, rec := range opened {
			k := uint64(i + n*j)
			if got, want := rec.Scheduled-opened[0].Scheduled, sched.Offset(k)-sched.Offset(uint64(i)); got != want {
				t.Errorf("shard %d, its arrival %d (the stage's %d): at +%v, want +%v", i, j, k, got, want)
			}
			if rec.Warmup != (k < 3) {
				t.Errorf("shard %d: the stage's arrival %d has warmup %v", i, k, rec.Warmup)
			}
		}
	}
	if len(seen) != 20+31 || arrivals != 31 {
		t.Errorf("the shards sent %d requests (%d arrivals), want 51 (31)", len(seen), arrivals)
	}
}
