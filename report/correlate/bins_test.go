package correlate

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
)

// event is one change of a step quantity, or tokens received.
type event struct {
	q     int // a step quantity, or −1 for tokens
	t     time.Duration
	delta float64
}

// exact integrates the events over [from, to) directly: the integral of
// each step quantity and the tokens inside.
func exact(evs []event, from, to time.Duration) (steps [numSteps]float64, tokens float64) {
	for _, e := range evs {
		if e.q < 0 {
			if e.t >= from && e.t < to {
				tokens += e.delta
			}
			continue
		}
		// A change at t holds from t on.
		if lo := max(e.t, from); lo < to {
			steps[e.q] += e.delta * (to - lo).Seconds()
		}
	}
	return steps, tokens
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// TestBinsExact adds random events in random order, with a bin limit small
// enough to coarsen several times, and checks that windows aligned on the
// final bin width integrate exactly what the events give directly, and
// that the whole timeline does.
func TestBinsExact(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 9))
		var evs []event
		span := time.Duration(1+rng.IntN(200)) * time.Second
		for range 300 {
			a := time.Duration(rng.Int64N(int64(span)))
			b := a + time.Duration(rng.Int64N(int64(5*time.Second)))
			q := rng.IntN(numSteps)
			v := float64(rng.IntN(100) + 1)
			evs = append(evs, event{q, a, v}, event{q, b, -v}, event{-1, a + (b-a)/3, float64(rng.IntN(5))})
		}
		rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
		s := &bins{limit: 16 + rng.IntN(64)}
		for _, e := range evs {
			if e.q < 0 {
				s.point(pTokens, e.t, e.delta)
			} else {
				s.step(e.q, e.t, e.delta)
			}
		}
		if len(s.b) > s.max() {
			t.Fatalf("seed %d: %d bins over the limit %d", seed, len(s.b), s.max())
		}
		w := s.width
		lo, hi := time.Duration(s.base)*w, time.Duration(s.base+int64(len(s.b)))*w
		cur := s.cursor()
		for from := lo; from < hi; {
			to := min(from+w*time.Duration(1+rng.IntN(5)), hi)
			got, gotPts := cur.integrals(from, to)
			gotTok := gotPts[pTokens]
			want, wantTok := exact(evs, from, to)
			for q := range numSteps {
				if !near(got[q], want[q]) {
					t.Fatalf("seed %d, [%v, %v), quantity %d: %g, want %g", seed, from, to, q, got[q], want[q])
				}
			}
			if !near(gotTok, wantTok) {
				t.Fatalf("seed %d, [%v, %v): %g tokens, want %g", seed, from, to, gotTok, wantTok)
			}
			from = to
		}
		total := s.total()
		want, _ := exact(evs, lo, hi)
		for q := range numSteps {
			if !near(total[q], want[q]) {
				t.Fatalf("seed %d: total of quantity %d is %g, want %g", seed, q, total[q], want[q])
			}
		}
	}
}

// TestBinsUnaligned checks a window that cuts bins: the cut bins count in
// proportion, so a constant level integrates exactly.
func TestBinsUnaligned(t *testing.T) {
	t.Parallel()
	s := &bins{}
	s.step(qFlight, 0, 3)
	s.step(qFlight, 10*time.Second, -3)
	got, _ := s.cursor().integrals(1234*time.Millisecond+500*time.Microsecond, 2*time.Second)
	if want := 3 * (765.5 / 1000); !near(got[qFlight], want) {
		t.Errorf("integral = %g, want %g", got[qFlight], want)
	}
}

// TestChunksAsOneByOne: adding a request's chunks a bin at a time gives
// the timeline adding them one by one gives (to rounding).
func TestChunksAsOneByOne(t *testing.T) {
	r := &results.Result{Sent: 3 * time.Millisecond, OutputTokens: 700}
	at := time.Duration(0)
	for i := range 300 {
		at += time.Duration(i%17) * 150 * time.Microsecond // bursts and gaps, across many 10 ms bins
		r.ChunkTimes = append(r.ChunkTimes, at)
	}
	var batched, single bins
	total := batched.chunks(r, 0.5)
	for i, d := range r.ChunkTimes {
		k := float64(r.ChunkTokensAt(i))
		single.step(qCtx, r.Sent+d, k)
		single.point(pTokens, r.Sent+d, k)
		single.point(pWarmTokens, r.Sent+d, 0.5*k)
	}
	if total != 700 || batched.base != single.base || len(batched.b) != len(single.b) {
		t.Fatalf("total %v, bins %d+%d against %d+%d", total, batched.base, len(batched.b), single.base, len(single.b))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }
	for i := range single.b {
		x, y := batched.b[i], single.b[i]
		if !near(x.d[qCtx], y.d[qCtx]) || !near(x.p[qCtx], y.p[qCtx]) || !near(x.points[pTokens], y.points[pTokens]) ||
			!near(x.points[pWarmTokens], y.points[pWarmTokens]) {
			t.Errorf("bin %d: %+v, one by one %+v", i, x, y)
		}
	}
}
