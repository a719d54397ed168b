package report

import (
	"math"
	"math/big"
	"math/bits"
)

// Counts summarises per-request token counts: how many requests, their
// mean, standard deviation (of the population, as numpy's std, which vLLM
// reports), smallest and largest.
type Counts struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	Std   float64 `json:"std"`
	Min   int64   `json:"min"`
	Max   int64   `json:"max"`
}

// counter accumulates Counts exactly: integer sums (the sum of squares in
// 128 bits, so a million requests of a million tokens cannot overflow),
// whence the same summary whatever the order the values came in.
type counter struct {
	n, sum   int64
	sqHi     uint64 // sum of squares, high and low 64 bits
	sqLo     uint64
	min, max int64
}

func (c *counter) add(v int64) {
	if v < 0 {
		return
	}
	if c.n == 0 || v < c.min {
		c.min = v
	}
	if c.n == 0 || v > c.max {
		c.max = v
	}
	c.n++
	c.sum += v
	hi, lo := bits.Mul64(uint64(v), uint64(v))
	var carry uint64
	c.sqLo, carry = bits.Add64(c.sqLo, lo, 0)
	c.sqHi, _ = bits.Add64(c.sqHi, hi, carry)
}

func (c *counter) merge(o *counter) {
	if o.n == 0 {
		return
	}
	if c.n == 0 || o.min < c.min {
		c.min = o.min
	}
	if c.n == 0 || o.max > c.max {
		c.max = o.max
	}
	c.n += o.n
	c.sum += o.sum
	var carry uint64
	c.sqLo, carry = bits.Add64(c.sqLo, o.sqLo, 0)
	c.sqHi, _ = bits.Add64(c.sqHi, o.sqHi, carry)
}

// counts returns the summary, or nil when nothing was added.
func (c *counter) counts() *Counts {
	if c.n == 0 {
		return nil
	}
	// Variance = (n·Σv² − (Σv)²) / n², in exact integers: the difference
	// of two floats this large would cancel into noise (a fixed length of
	// 100,000 tokens would show a spread).
	sq := new(big.Int).Lsh(new(big.Int).SetUint64(c.sqHi), 64)
	sq.Or(sq, new(big.Int).SetUint64(c.sqLo))
	n, sum := big.NewInt(c.n), big.NewInt(c.sum)
	num := new(big.Int).Sub(new(big.Int).Mul(n, sq), new(big.Int).Mul(sum, sum))
	v, _ := new(big.Float).Quo(new(big.Float).SetInt(num), new(big.Float).SetInt(new(big.Int).Mul(n, n))).Float64()
	mean := float64(c.sum) / float64(c.n)
	return &Counts{Count: c.n, Mean: round(mean, 3), Std: round(math.Sqrt(max(v, 0)), 3), Min: c.min, Max: c.max}
}
