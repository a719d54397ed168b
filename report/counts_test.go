package report

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestCounter(t *testing.T) {
	t.Parallel()
	t.Run("two-pass reference", func(t *testing.T) {
		t.Parallel()
		rng := rand.New(rand.NewPCG(1, 2))
		var c counter
		var vs []float64
		for range 10_000 {
			v := int64(64 + rng.IntN(129))
			c.add(v)
			vs = append(vs, float64(v))
		}
		var sum float64
		for _, v := range vs {
			sum += v
		}
		mean := sum / float64(len(vs))
		var ss float64
		for _, v := range vs {
			ss += (v - mean) * (v - mean)
		}
		got := c.counts()
		if math.Abs(got.Mean-mean) > 1e-3 || math.Abs(got.Std-math.Sqrt(ss/float64(len(vs)))) > 1e-3 ||
			got.Min != 64 || got.Max != 192 || got.Count != 10_000 {
			t.Errorf("counts = %+v, want mean %.3f std %.3f", got, mean, math.Sqrt(ss/float64(len(vs))))
		}
	})
	t.Run("large fixed values have no spread", func(t *testing.T) {
		t.Parallel()
		// A million requests of a million tokens: Σv² = 10¹⁸ overflows
		// nothing, and the spread stays exactly 0.
		var a, b counter
		for i := range 1_000_000 {
			if i%2 == 0 {
				a.add(1_000_000)
			} else {
				b.add(1_000_000)
			}
		}
		a.merge(&b)
		got := a.counts()
		if got.Std != 0 || got.Mean != 1_000_000 || got.Count != 1_000_000 {
			t.Errorf("counts = %+v", got)
		}
	})
	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		var c counter
		if c.counts() != nil {
			t.Error("an empty counter has counts")
		}
	})
}
