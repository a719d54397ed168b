package replay

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/kvcapacity"
	"github.com/servebench/servebench/sim"
	"github.com/servebench/servebench/twin"
	"github.com/servebench/servebench/vllmlog"
)

// Replay is a load rebuilt from a log's stats lines: the requests, the
// simulator that serves them like the log's server, and what was assumed.
type Replay struct {
	Name    string // the scenario's name
	Source  string // the log file
	Run     *vllmlog.Run
	Engine  string // the engine whose stats lines are replayed ("000")
	Lines   []Line
	Origin  float64 // the log time (Line.At) of the first arrival: replay time 0
	Trace   []Arrival
	Config  sim.Config
	Assumed []string // what the replay read from the log and what it assumed
	Unknown []string // what the log does not tell
	// Span is the seconds from the first arrival to the expected end of
	// the last request.
	Span float64

	presetNotes []string // how the preset was made (a subset of Assumed)
}

// Arrival is one request of the replay's trace.
type Arrival struct {
	At     time.Duration // after the first arrival
	Input  int           // prompt tokens
	Output int           // output tokens (sent with ignore_eos)
}

// Build rebuilds the load of rep's server from its stats lines (the server
// start with the most of them, its first engine). A log with too few
// stats lines, or none with a timestamp or any work, is refused with an
// error wrapping ErrTooFew that says why.
func Build(rep *vllmlog.Report) (*Replay, error) {
	run, series, err := pick(rep)
	if err != nil {
		return nil, err
	}
	lines, intervalNotes, err := readLines(run, series)
	if err != nil {
		return nil, err
	}
	srv := preset(run, lines)
	b := &rebuild{lines: lines, cost: srv.cost, kv: srv.kv, budget: srv.cfg.MaxNumBatchedTokens}
	b.run()
	if len(b.all) == 0 {
		return nil, fmt.Errorf("%w: the stats lines of %s imply no request", ErrTooFew, run.File)
	}
	srv.cfg.Name = scenarioName(run.File)
	srv.fitRequests(b.all)
	r := &Replay{Name: srv.cfg.Name, Source: run.File, Run: run, Engine: series.Engine, Lines: lines, Config: srv.cfg, presetNotes: srv.notes}
	r.Assumed = append(append(intervalNotes, srv.notes...), b.notes...)
	r.Unknown = append(b.unknown, r.limits(srv.kv)...)
	clamped := r.arrivals(b.all)
	if clamped > 0 {
		r.Assumed = append(r.Assumed, fmt.Sprintf("%d request(s) would have outgrown max_model_len (%d): their output is cut to fit", clamped, r.Config.MaxModelLen))
	}
	if err := r.Config.Validate(); err != nil {
		return nil, fmt.Errorf("replay: the simulator built from %s is not valid: %w", run.File, err)
	}
	return r, nil
}

// arrivals turns the rebuilt requests into the trace, in arrival order,
// with the first at replay time 0 (moved back to a tenth of a second on
// the log's clock, so that the log's times fall on the check's grid). It
// returns how many outputs were cut to max_model_len.
func (r *Replay) arrivals(reqs []*request) int {
	slices.SortStableFunc(reqs, func(a, b *request) int { return cmp.Compare(a.arrive, b.arrive) })
	r.Origin = math.Floor(reqs[0].arrive*10) / 10
	reqs[0].arrive = r.Origin // a trace's offsets count from its first arrival
	last := r.Lines[len(r.Lines)-1]
	end := last.At + last.Interval
	clamped := 0
	for _, q := range reqs {
		in := max(1, int(math.Round(q.prompt)))
		in = min(in, r.Config.MaxModelLen-1)
		out := max(1, int(math.Round(q.out)))
		if in+out > r.Config.MaxModelLen {
			out, clamped = r.Config.MaxModelLen-in, clamped+1
		}
		at := time.Duration(math.Round((q.arrive-r.Origin)*1000)) * time.Millisecond
		r.Trace = append(r.Trace, Arrival{At: max(at, 0), Input: in, Output: out})
		if !math.IsNaN(q.depart) {
			end = max(end, q.depart)
		}
	}
	r.Span = end - r.Origin
	return clamped
}

// limits says what the replay cannot reproduce of this log.
func (r *Replay) limits(kv *kvModel) []string {
	out := []string{"which request was which: the replay's requests are interchangeable streams; when requests left, the oldest running one left first, and each arrival and departure is placed in its interval so that the interval's tokens take the time they would at the replay's decode speed"}
	hit := 0.0
	for _, l := range r.Lines {
		if !math.IsNaN(l.HitPerc) {
			hit = max(hit, l.HitPerc)
		}
	}
	if hit > 0 {
		out = append(out, fmt.Sprintf("which prompts shared prefixes (the log's prefix-cache hit rate reaches %.1f %%): every replayed prompt is its own, so the simulator's hit rate is 0 and its KV usage counts no shared blocks (the context the replay gives each request is what KV usage implies without sharing)", hit))
	}
	if n := len(r.Run.Runtime.Engines); n > 1 {
		out = append(out, fmt.Sprintf("the load of the other engines: the log has %d engines (data parallel); the replay's one simulated engine carries engine %s's", n, r.Engine))
	}
	if r.Run.Config.Generation == "V0" {
		out = append(out, "how V0 scheduled: the simulator schedules as vLLM's V1 engine does (chunked prefill beside decoding), not V0's prefill-first steps")
	}
	if kv.usable == 0 {
		out = append(out, "how full the KV cache was: the log states no KV-cache size")
	}
	return out
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// scenarioName is "replay-" and the log's base name without extension.
func scenarioName(file string) string {
	base := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	base = strings.Trim(unsafeName.ReplaceAllString(base, "-"), "-")
	if base == "" {
		base = "log"
	}
	return "replay-" + base
}

// fitRequests makes max_model_len, when the log does not state it, long
// enough for the longest request rebuilt (and no longer than the pool
// holds, up to twin.DefaultMaxModelLen), and the pool large enough for one
// request of max_model_len, as vLLM requires at start-up.
func (s *server) fitRequests(reqs []*request) {
	need := 0
	for _, q := range reqs {
		need = max(need, int(math.Ceil(q.prompt+q.out)))
	}
	c := &s.cfg
	if !s.mmlStated {
		pool := (c.NumGPUBlocksOverride - 1) * c.BlockSize
		c.MaxModelLen = max(need, min(twin.DefaultMaxModelLen, pool), 2)
		s.notes = append(s.notes, fmt.Sprintf("max_model_len = %s: the log does not state it; the replay takes what the pool holds, up to %s, and at least its longest request (%s tokens)",
			kvcapacity.Thousands(c.MaxModelLen), kvcapacity.Thousands(twin.DefaultMaxModelLen), kvcapacity.Thousands(need)))
	}
	k, err := c.Capacity()
	if err == nil && k.NumBlocks-1 < k.BlocksPerRequest {
		c.NumGPUBlocksOverride = k.BlocksPerRequest + 1
		if k2, err := c.Capacity(); err == nil {
			c.KVCacheMemoryBytes = int64(k2.NumBlocks) * k2.PageBytes * int64(k2.GroupSize)
		}
		s.notes = append(s.notes, fmt.Sprintf("the pool is raised to %s blocks, so that one request of max_model_len (%s tokens) fits, as vLLM requires at start-up; KV usage is then lower than the log's",
			kvcapacity.Thousands(k.BlocksPerRequest), kvcapacity.Thousands(c.MaxModelLen)))
		s.kv.usable = float64(k.BlocksPerRequest)
	}
}
