package run

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/servebench/servebench/load"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// progress tracks a run for the live status line. It is fed by the results
// writer goroutine (add) and read by the drawing goroutine (line); both are
// guarded by mu, which is held for nanoseconds per record.
type progress struct {
	mu        sync.Mutex
	start     time.Time
	stages    []scenario.Stage // this process's share of each stage
	done      int64
	failed    int64
	errors    map[string]int64 // failed requests by error class
	dropped   int64
	outTokens int64
	inputs    int64                   // texts embedded (embeddings)
	embed     bool                    // an embeddings run: inputs/s and E2E rather than tok/s and TTFT
	ttft      *hdrhistogram.Histogram // µs, finished requests since the start (E2E for embeddings)
	live      liveSource
	lastAt    time.Time // the previous line's time and live counts, for the current rates
	lastN     int64
	lastFirst int64
	lastSum   time.Duration
}

// counters is a snapshot of a run's live counters: the load's, and the
// time since the epoch.
type counters struct {
	load.Counters
	Elapsed time.Duration
}

// liveSource is what the status line reads while requests stream.
type liveSource struct {
	counters func() counters                     // the load's
	chunks   func() int64                        // token-bearing chunks received so far
	firsts   func() (n int64, sum time.Duration) // first tokens received so far, and their TTFT sum
}

func newProgress(start time.Time, stages []scenario.Stage, live liveSource) *progress {
	return &progress{start: start, stages: stages, errors: map[string]int64{},
		ttft: hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 2), live: live, lastAt: start}
}

func (p *progress) add(r *results.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	switch r.Outcome {
	case results.Failed:
		p.failed++
		p.errors[string(r.ErrorClass)]++
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

// stageDone is how far the running stage is, from 0 to 1, by whichever of
// its bounds (requests, duration) ends it first, and the time left at the
// current pace; ok is false when the stage is unbounded or not running.
func (p *progress) stageDone(c counters) (frac float64, left time.Duration, ok bool) {
	if c.Stage < 0 || c.Stage >= len(p.stages) {
		return 0, 0, false
	}
	st := &p.stages[c.Stage]
	in := c.Elapsed - c.StageStarted
	if st.Duration > 0 {
		frac = float64(in) / float64(st.Duration.D())
		ok = true
	}
	if st.Requests > 0 {
		frac = max(frac, float64(c.Scheduled-c.StageBefore)/float64(st.Requests))
		ok = true
	}
	if !ok || frac <= 0 {
		return 0, 0, ok
	}
	frac = min(frac, 1)
	return frac, time.Duration(float64(in) * (1 - frac) / frac), true
}

func (p *progress) line(now time.Time) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	el := now.Sub(p.start)
	secs := max(el.Seconds(), 1e-3)
	var b strings.Builder
	b.WriteString(el.Truncate(time.Second).String())
	var c counters
	if p.live.counters != nil {
		c = p.live.counters()
		if c.Stage >= 0 && c.Stage < len(p.stages) {
			fmt.Fprintf(&b, "  stage %d/%d %q", c.Stage+1, len(p.stages), p.stages[c.Stage].Name)
			if frac, left, ok := p.stageDone(c); ok {
				fmt.Fprintf(&b, " %.0f%%", 100*frac)
				if frac > 0 {
					fmt.Fprintf(&b, " ETA %s", left.Round(time.Second))
				}
			}
		}
	}
	// The token rate is the live chunk rate since the previous line (one
	// token per chunk on most servers), so long streams show progress
	// before they finish; records carry the exact counts.
	rate := float64(p.outTokens) / secs
	if p.live.chunks != nil {
		n := p.live.chunks()
		if dt := now.Sub(p.lastAt).Seconds(); dt > 0 {
			rate = float64(n-p.lastN) / dt
		}
		p.lastN = n
	}
	// The live TTFT is the mean over the first tokens that arrived since
	// the previous line, streams still running included: it moves when
	// the server starts queueing, before those requests finish.
	now1 := "-"
	if p.live.firsts != nil {
		n, sum := p.live.firsts()
		if dn := n - p.lastFirst; dn > 0 {
			now1 = fmt.Sprintf("%.0fms", float64(sum-p.lastSum)/float64(dn)/1e6)
		}
		p.lastFirst, p.lastSum = n, sum
	}
	p.lastAt = now
	ttft := "-"
	if p.ttft.TotalCount() > 0 {
		ttft = fmt.Sprintf("%.0fms", float64(p.ttft.ValueAtQuantile(50))/1000)
	}
	if p.embed {
		fmt.Fprintf(&b, "  done %d  in-flight %d  %.1f req/s  %.0f inputs/s  E2E p50 %s  errors %d",
			p.done, c.InFlight, float64(p.done)/secs, float64(p.inputs)/secs, ttft, p.failed)
	} else {
		fmt.Fprintf(&b, "  done %d  in-flight %d  %.1f req/s  %.0f tok/s  TTFT now %s, p50 %s  errors %d",
			p.done, c.InFlight, float64(p.done)/secs, rate, now1, ttft, p.failed)
	}
	if p.failed > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(p.errors)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, p.errors[k]))
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	if p.dropped > 0 {
		fmt.Fprintf(&b, "  dropped %d", p.dropped)
	}
	return b.String()
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
