package scenario

import (
	"math"
	"math/rand/v2"
	"time"
)

// Schedule is the arrival process of an open-loop stage: the intended
// offsets, from the stage's start, of its arrivals. It has no clock and no
// goroutines: Offset and Next are pure functions of their arguments and the
// stage's parameters and seed, so a schedule is reproducible and is tested
// without sleeping.
//
// The first arrival is at offset 0. Then the gaps are
//
//	constant: exactly 1/rate
//	poisson:  exponential with mean 1/rate
//	gamma:    gamma with shape burstiness and scale 1/(rate·burstiness),
//	          so the mean stays 1/rate (vLLM's --burstiness; 1 is poisson,
//	          below 1 burstier, above 1 more regular)
//
// A Schedule caches its last computed offset so sequential calls cost O(1);
// it is not safe for concurrent use.
type Schedule struct {
	arrival  string
	rate     float64 // requests per second
	shape    float64 // gamma shape
	seed     uint64
	requests uint64        // 0: unbounded
	duration time.Duration // 0: unbounded

	// Memo of the random walk: the offset of arrival n, in seconds, and the
	// generator positioned to draw the gap after it.
	rng *rand.Rand
	pcg rand.PCG
	n   uint64
	at  float64
}

// NewSchedule returns the arrival schedule of an open-loop stage whose
// defaults are applied. seed selects the random gaps; the runner derives it
// from the scenario's seed and the stage's index.
func NewSchedule(st *Stage, seed uint64) *Schedule {
	s := &Schedule{
		arrival:  st.Arrival,
		rate:     st.RatePerSec,
		shape:    st.Burstiness,
		seed:     seed,
		requests: uint64(max(st.Requests, 0)),
		duration: st.Duration.D(),
	}
	if s.arrival == ArrivalPoisson || s.shape <= 0 {
		s.shape = 1
	}
	s.reset()
	return s
}

func (s *Schedule) reset() {
	s.pcg.Seed(s.seed, 0x5eed_a77a_1ba1)
	s.rng = rand.New(&s.pcg)
	s.n, s.at = 0, 0
}

// Offset returns the intended time of arrival i (0-based) from the stage's
// start. Calls with increasing i cost O(1) each; going back recomputes the
// walk from the start.
func (s *Schedule) Offset(i uint64) time.Duration {
	if s.arrival == ArrivalConstant {
		return seconds(float64(i) / s.rate)
	}
	if i < s.n {
		s.reset()
	}
	for s.n < i {
		s.at += s.gap()
		s.n++
	}
	return seconds(s.at)
}

// Next returns how long to wait, at elapsed time since the stage's start,
// before sending arrival number sent (0-based; the count of arrivals so
// far, dropped ones included). wait is 0 when the arrival is already due or
// late. stop reports that the stage's request count is reached or that the
// next arrival falls at or after the stage's duration.
func (s *Schedule) Next(elapsed time.Duration, sent uint64) (wait time.Duration, stop bool) {
	if s.requests > 0 && sent >= s.requests {
		return 0, true
	}
	at := s.Offset(sent)
	if s.duration > 0 && at >= s.duration {
		return 0, true
	}
	return max(at-elapsed, 0), false
}

// gap draws the next inter-arrival gap in seconds.
func (s *Schedule) gap() float64 {
	if s.shape == 1 {
		return s.rng.ExpFloat64() / s.rate
	}
	return gammaVariate(s.rng, s.shape) / (s.rate * s.shape)
}

// gammaVariate draws from a gamma distribution of the given shape and
// scale 1 (Marsaglia and Tsang, "A simple method for generating gamma
// variables", 2000; shapes below 1 use the boost X·U^(1/shape)).
func gammaVariate(r *rand.Rand, shape float64) float64 {
	if shape < 1 {
		return gammaVariate(r, shape+1) * math.Pow(r.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	// Each try is accepted with probability above 0.95; the bound only
	// guards against a broken generator.
	for range 1000 {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
	return shape
}

// seconds converts seconds to a Duration, saturating.
func seconds(s float64) time.Duration {
	if s >= float64(math.MaxInt64)/1e9 {
		return math.MaxInt64
	}
	return time.Duration(s * 1e9)
}

// ArrivalSeed is the seed of stage idx's arrival schedule (NewSchedule):
// a pure function of the scenario's prompt seed and the stage index, so
// that a run's arrivals are reproducible.
func (sc *Scenario) ArrivalSeed(idx int) uint64 { return mix(sc.Prompts.Seed ^ mix(uint64(idx))) }

// mix is the SplitMix64 finaliser: it spreads nearby inputs (sequence
// numbers, stage indexes) over the whole 64-bit range before they seed a
// generator.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
