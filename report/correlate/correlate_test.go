package correlate

import (
	"math"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
)

// stream is an ok streamed request sent at sent: first token after 50 ms,
// then n tokens one per gap.
func stream(seq uint64, sent time.Duration, n int, gap time.Duration) *results.Result {
	r := &results.Result{Seq: seq, Outcome: results.OK, Stream: true, Scheduled: sent, Sent: sent,
		PromptTokens: 100, OutputTokens: n}
	for i := range n {
		r.ChunkTimes = append(r.ChunkTimes, 50*time.Millisecond+time.Duration(i)*gap)
	}
	r.FirstToken, r.LastToken = sent+r.ChunkTimes[0], sent+r.ChunkTimes[n-1]
	r.End = r.LastToken + time.Millisecond
	return r
}

func sample(i int, at time.Duration, tokens float64, atEnd bool) results.Sample {
	return results.Sample{Index: uint64(i), Target: "t", At: at, OK: true, Reading: results.Reading{
		Profile: "p", CountersAtEnd: atEnd, Snapshot: results.Snapshot{Values: results.Values{
			results.GenerationTokens: tokens, results.Waiting: 0, results.KVUsage: 0.5}}}}
}

// TestTailWindowMerged is issue 9's tail window: the last scrape comes a
// few milliseconds after the one before it, when the load ends. That sliver
// must not become a window of its own (a steady window of any throughput at
// all): it joins the window before.
func TestTailWindowMerged(t *testing.T) {
	t.Parallel()
	c := New()
	// Four streams of 50 tok/s for about 5 s.
	for i := range 4 {
		c.AddResult(stream(uint64(i), 10*time.Millisecond, 250, 20*time.Millisecond))
	}
	var tokens float64
	for i := 0; i <= 5; i++ {
		c.AddSample(sample(i, time.Duration(i)*time.Second, tokens, false))
		tokens += 200
	}
	c.AddSample(sample(6, 5*time.Second+4*time.Millisecond, tokens-200+1, false))
	ws := c.Windows()
	for _, w := range ws {
		if w.Seconds() < 0.5 {
			t.Errorf("window [%v, %v) is %.3f s long", w.From, w.To, w.Seconds())
		}
		if w.Steady && w.OutputTokensPerSec > 4*50*1.1 {
			t.Errorf("steady window [%v, %v) at %.0f tok/s: 4 streams cannot exceed 200", w.From, w.To, w.OutputTokensPerSec)
		}
	}
	if last := ws[len(ws)-1]; last.To != 5*time.Second+4*time.Millisecond {
		t.Errorf("last window ends at %v", last.To)
	}
}

// TestCountersAtEnd: a server whose generation counter moves only when a
// request ends (llama.cpp). Per-window server rates are not given (they
// would spike to the whole request's tokens in one window); the whole-run
// cross-check still holds.
func TestCountersAtEnd(t *testing.T) {
	t.Parallel()
	c := New()
	// Requests of 50 tokens over 1 s, one after another: the counter jumps
	// by 50 when each ends.
	for i := range 6 {
		c.AddResult(stream(uint64(i), time.Duration(i)*1100*time.Millisecond+time.Millisecond, 50, 20*time.Millisecond))
	}
	var tokens float64
	for i := 0; i <= 14; i++ {
		at := time.Duration(i) * 500 * time.Millisecond
		// Requests that ended by then.
		tokens = 0
		for k := range 6 {
			if end := time.Duration(k)*1100*time.Millisecond + time.Millisecond + 50*time.Millisecond + 49*20*time.Millisecond + time.Millisecond; end <= at {
				tokens += 50
			}
		}
		c.AddSample(sample(i, at, tokens, true))
	}
	for _, w := range c.Windows() {
		if !math.IsNaN(w.ServerTokensPerSec) {
			t.Errorf("window [%v, %v): server rate %g, want none", w.From, w.To, w.ServerTokensPerSec)
		}
	}
	corr := c.Correlation(nil)
	if corr.CrossCheck == nil || corr.CrossCheck.Flagged || math.Abs(corr.CrossCheck.Difference) > 0.02 {
		t.Errorf("cross-check = %+v, want agreement over the run", corr.CrossCheck)
	}
}

// TestWholeResponses is issue 9's stream: false run: no chunk times, so
// the tokens count when each response ends, and the client and the server
// agree over the run instead of the client reading −100 %.
func TestWholeResponses(t *testing.T) {
	t.Parallel()
	c := New()
	for i := range 8 {
		sent := time.Duration(i)*500*time.Millisecond + time.Millisecond
		c.AddResult(&results.Result{Seq: uint64(i), Outcome: results.OK, Scheduled: sent, Sent: sent,
			End: sent + 400*time.Millisecond, PromptTokens: 10, OutputTokens: 40})
	}
	for i := 0; i <= 9; i++ {
		// The server generates 40 tokens over each request's 400 ms: 100 tok/s.
		at := time.Duration(i) * 500 * time.Millisecond
		c.AddSample(sample(i, at, math.Min(float64(i)*40, 320), false))
	}
	corr := c.Correlation(nil)
	if corr.CrossCheck == nil || math.Abs(corr.CrossCheck.Difference) > 0.05 {
		t.Fatalf("cross-check = %+v", corr.CrossCheck)
	}
	if corr.WholeResponses != 8 {
		t.Errorf("whole responses = %d, want 8", corr.WholeResponses)
	}
}

// TestStallFloor: a request whose chunks come in bursts microseconds apart
// (a fast server, a median gap of zero) has no stall, and one with a real
// pause among steady gaps has it, largest first.
func TestStallFloor(t *testing.T) {
	const us, ms = time.Microsecond, time.Millisecond
	var bursty []time.Duration
	for i := range 200 {
		bursty = append(bursty, time.Duration(i/20)*40*us)
	}
	if spans, _ := p99Spans(0, bursty, nil); len(spans) != 0 {
		t.Errorf("bursts of microseconds gave stalls %v", spans)
	}
	var paced []time.Duration
	at := 10 * ms
	for i := range 200 {
		if i == 100 {
			at += 300 * ms // a recompute
		}
		paced = append(paced, at)
		at += 20 * ms
	}
	spans, _ := p99Spans(time.Second, paced, nil)
	if len(spans) != 1 || spans[0].to-spans[0].from != 320*ms || spans[0].from != time.Second+paced[99] {
		t.Errorf("a 320 ms pause among 20 ms gaps: spans %v", spans)
	}
}
