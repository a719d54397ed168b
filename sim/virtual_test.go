package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// vsim drives an Engine in virtual time: arrivals are submitted at their
// own virtual instants, each step advances the clock to its deadline, and
// invariants are checked after every step.
type vsim struct {
	t      testing.TB
	e      *Engine
	clk    *VirtualClock
	start  time.Time
	queue  []arrival // sorted by at
	steps  int
	check  bool
	onStep func(b *Batch)      // after Schedule, before Complete
	onOut  func(o Output) bool // after Complete; return false to stop
	stats  *statLogger
	lines  []timedLine
	every  time.Duration
	nextLn time.Time
}

type arrival struct {
	at time.Duration
	r  *Request
}

type timedLine struct {
	at time.Duration
	StatLine
}

// testEpoch is virtual time zero: the seed's first request.
var testEpoch = time.Date(2025, 11, 28, 11, 58, 53, 0, time.UTC)

func newVSim(t testing.TB, cfg Config) *vsim {
	t.Helper()
	start := testEpoch
	clk := NewVirtualClock(start)
	e, err := NewEngine(cfg, clk, rand.New(rand.NewPCG(cfg.Seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return &vsim{t: t, e: e, clk: clk, start: start, check: true}
}

// logEvery makes the run record a periodic stat line every d.
func (s *vsim) logEvery(d time.Duration) {
	s.every = d
	s.stats = newStatLogger(s.clk.Now())
	s.nextLn = s.clk.Now().Add(d)
}

func (s *vsim) now() time.Duration { return s.clk.Now().Sub(s.start) }

// at queues r to arrive at virtual offset d.
func (s *vsim) at(d time.Duration, r *Request) {
	i, _ := slices.BinarySearchFunc(s.queue, d, func(a arrival, d time.Duration) int { return int(a.at - d) })
	for i < len(s.queue) && s.queue[i].at <= d {
		i++
	}
	s.queue = slices.Insert(s.queue, i, arrival{d, r})
}

func (s *vsim) submitDue(until time.Time) {
	for len(s.queue) > 0 && !s.start.Add(s.queue[0].at).After(until) {
		a := s.queue[0]
		s.queue = s.queue[1:]
		s.clk.Set(s.start.Add(a.at))
		if err := s.e.Submit(a.r); err != nil {
			s.t.Fatal(err)
		}
	}
}

func (s *vsim) emitLines(until time.Time) {
	for s.stats != nil && !s.nextLn.After(until) {
		line, _ := s.stats.next(s.nextLn, s.e.Stats())
		s.lines = append(s.lines, timedLine{s.nextLn.Sub(s.start), line})
		s.nextLn = s.nextLn.Add(s.every)
	}
}

// run steps the engine until it is idle with nothing queued, limit of
// virtual time passes, maxSteps steps run, or onOut returns false.
func (s *vsim) run(limit time.Duration, maxSteps int) {
	s.t.Helper()
	for s.steps < maxSteps && s.now() < limit {
		s.submitDue(s.clk.Now())
		b, err := s.e.Schedule()
		if err != nil {
			s.t.Fatal(err)
		}
		if b == nil {
			if len(s.queue) == 0 {
				return
			}
			next := s.start.Add(s.queue[0].at)
			s.emitLines(next)
			s.clk.Set(next)
			continue
		}
		s.steps++
		if s.check {
			if err := s.e.checkInvariants(b); err != nil {
				s.t.Fatalf("step %d (t=%v): %v", s.steps, s.now(), err)
			}
		}
		if s.onStep != nil {
			s.onStep(b)
		}
		s.submitDue(b.End)
		// Stats lines fall between steps; the engine's state is that of
		// the last completed step, as vLLM's scheduler stats are.
		s.emitLines(b.End.Add(-1))
		s.clk.Set(b.End)
		outs, err := s.e.Complete(b)
		if err != nil {
			s.t.Fatal(err)
		}
		if s.check {
			if err := s.e.checkInvariants(nil); err != nil {
				s.t.Fatalf("after step %d (t=%v): %v", s.steps, s.now(), err)
			}
		}
		for _, o := range outs {
			if s.onOut != nil && !s.onOut(o) {
				return
			}
		}
	}
}

// ids returns n token IDs: the first shared from a common prefix stream
// (IDs 1…), the rest unique to tag.
func ids(n, shared int, tag uint32) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		if i < shared {
			out[i] = uint32(i + 1)
		} else {
			out[i] = uint32(mix64(uint64(tag)<<32|uint64(i)) | 1<<31)
		}
	}
	return out
}
