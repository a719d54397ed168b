package run

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/servebench/servebench/results"
)

// progress tracks a run for the live status line. It is fed by the results
// writer goroutine (add) and read by the drawing goroutine (line); both are
// guarded by mu, which is held for nanoseconds per record.
type progress struct {
	mu        sync.Mutex
	start     time.Time
	done      int64
	failed    int64
	dropped   int64
	outTokens int64
	inputs    int64                   // texts embedded (embeddings)
	embed     bool                    // an embeddings run: inputs/s and E2E rather than tok/s and TTFT
	ttft      *hdrhistogram.Histogram // µs, since the start (E2E for embeddings)
	inFlight  func() int64
	chunks    func() int64 // token-bearing chunks received so far (live, before requests finish)
	lastAt    time.Time    // the previous line's time and chunk count, for the current rate
	lastN     int64
}

func newProgress(start time.Time, inFlight, chunks func() int64) *progress {
	return &progress{start: start, ttft: hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 2),
		inFlight: inFlight, chunks: chunks, lastAt: start}
}

func (p *progress) add(r *results.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	switch r.Outcome {
	case results.Failed:
		p.failed++
	case results.Dropped:
		p.dropped++
	case results.OK:
		if r.API == results.APIEmbeddings {
			p.embed = true
			p.inputs += int64(r.Inputs)
			if d, ok := r.E2E(); ok {
				_ = p.ttft.RecordValue(max(1, d.Microseconds()))
			}
			return
		}
		p.outTokens += int64(r.OutputTokens)
		if d, ok := r.TTFT(); ok {
			_ = p.ttft.RecordValue(max(1, d.Microseconds()))
		}
	}
}

func (p *progress) line(now time.Time) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	el := now.Sub(p.start)
	secs := max(el.Seconds(), 1e-3)
	ttft := "-"
	if p.ttft.TotalCount() > 0 {
		ttft = fmt.Sprintf("%.0fms", float64(p.ttft.ValueAtQuantile(50))/1000)
	}
	var inflight int64
	if p.inFlight != nil {
		inflight = p.inFlight()
	}
	// The token rate is the live chunk rate since the previous line (one
	// token per chunk on most servers), so long streams show progress
	// before they finish; records carry the exact counts.
	rate := float64(p.outTokens) / secs
	if p.chunks != nil {
		n := p.chunks()
		if dt := now.Sub(p.lastAt).Seconds(); dt > 0 {
			rate = float64(n-p.lastN) / dt
		}
		p.lastAt, p.lastN = now, n
	}
	var s string
	if p.embed {
		s = fmt.Sprintf("%s  done %d  in-flight %d  %.1f req/s  %.0f inputs/s  E2E p50 %s  errors %d",
			el.Truncate(time.Second), p.done, inflight, float64(p.done)/secs, float64(p.inputs)/secs, ttft, p.failed)
	} else {
		s = fmt.Sprintf("%s  done %d  in-flight %d  %.1f req/s  %.0f tok/s  TTFT p50 %s  errors %d",
			el.Truncate(time.Second), p.done, inflight, float64(p.done)/secs, rate, ttft, p.failed)
	}
	if p.dropped > 0 {
		s += fmt.Sprintf("  dropped %d", p.dropped)
	}
	return s
}

// draw writes the status line until ctx ends: redrawn in place on a
// terminal, a plain line every plainEvery otherwise.
func (p *progress) draw(ctx context.Context, w io.Writer, terminal bool, plainEvery time.Duration) {
	every := plainEvery
	if terminal {
		every = 250 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if terminal {
				fmt.Fprintf(w, "\r\033[K%s\n", p.line(time.Now()))
			}
			return
		case now := <-t.C:
			if terminal {
				fmt.Fprintf(w, "\r\033[K%s", p.line(now))
			} else {
				fmt.Fprintf(w, "progress: %s\n", p.line(now))
			}
		}
	}
}
