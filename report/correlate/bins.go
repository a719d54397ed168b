package correlate

import (
	"time"

	"github.com/servebench/servebench/results"
)

// Bin sizes: the timeline is kept in bins of baseBin, doubled (pairs of
// bins merged) whenever a stage would need more than maxBins, so memory is
// bounded by the number of stages, not by the number of requests or
// tokens: a stage of up to 21 minutes keeps 10 ms bins, an hour 40 ms, a
// day 1.28 s. Windows are at least a second long, so a bin is at most a
// few percent of one until a stage runs for many hours.
const (
	baseBin = 10 * time.Millisecond
	maxBins = 1 << 17
)

// Step quantities kept per bin: piecewise constant in time (a count or a
// token sum that changes at events); their bins hold time integrals.
const (
	qFlight = iota // requests in flight (sent → end)
	qDec           // streams decoding (first token → end)
	qCtx           // context in flight: prompt + tokens so far, summed over decoding streams
	qTTFT          // measured requests waiting for their first token (sent → first token)
	numSteps
)

// Point quantities kept per bin: events counted in the bin of their time.
const (
	pTokens     = iota // output tokens received, from every request
	pWarmTokens        // output tokens received by warmup requests
	pWarmPrompt        // prompt tokens of warmup requests whose prefill completed (first token, or the end of a whole response)
	pDone              // measured requests completed ok, at their end
	pTTFTSum           // TTFT of measured ok requests, seconds, at their send
	pTTFTCount         // measured ok requests with a TTFT, at their send
	pEndTokens         // output tokens a request received, counted at its end (every sent request)
	numPoints
)

// bin holds, for each step quantity, D: the sum of the level changes that
// happened inside the bin, and P: the integral, over the rest of the bin,
// of those changes (Δ × (bin end − t)); and the tokens received in it. The
// integral of a step quantity over bin k is then
// (Σ_{j<k} D[j]) × width + P[k].
type bin struct {
	d      [numSteps]float64
	p      [numSteps]float64
	points [numPoints]float64
}

// bins is one stage's timeline. Bin k covers [k·width, (k+1)·width) on the
// run's clock; bins[i] is bin base+i. The zero value is empty, with width
// baseBin.
type bins struct {
	width time.Duration
	base  int64
	b     []bin
	limit int // most bins before coarsening; 0 means maxBins
}

func (s *bins) max() int {
	if s.limit > 0 {
		return s.limit
	}
	return maxBins
}

func (s *bins) w() time.Duration {
	if s.width == 0 {
		s.width = baseBin
	}
	return s.width
}

// at returns the index in s.b of the bin holding t, growing (and
// coarsening) the timeline as needed.
func (s *bins) at(t time.Duration) int {
	t = max(t, 0)
	k := int64(t / s.w())
	for {
		switch {
		case len(s.b) == 0:
			s.base = k
			s.b = make([]bin, 1, 64)
			return 0
		case k < s.base:
			if int(s.base+int64(len(s.b))-k) > s.max() {
				s.coarsen()
				k = int64(t / s.width)
				continue
			}
			grow := int(s.base - k)
			// Prepend with headroom, so records arriving in reverse order
			// do not copy the timeline each time.
			head := min(max(grow, len(s.b)), s.max()-len(s.b))
			nb := make([]bin, head+len(s.b), head+cap(s.b))
			copy(nb[head:], s.b)
			s.b, s.base = nb, s.base-int64(head)
			return int(k - s.base)
		case k >= s.base+int64(len(s.b)):
			if int(k-s.base+1) > s.max() {
				s.coarsen()
				k = int64(t / s.width)
				continue
			}
			for int64(len(s.b)) <= k-s.base {
				s.b = append(s.b, bin{})
			}
			return int(k - s.base)
		default:
			return int(k - s.base)
		}
	}
}

// coarsen doubles the bin width, merging bins 2j and 2j+1 into bin j.
func (s *bins) coarsen() {
	w := float64(s.w()) / float64(time.Second)
	base := floorDiv(s.base, 2)
	last := floorDiv(s.base+int64(len(s.b))-1, 2)
	nb := make([]bin, last-base+1)
	for i := range s.b {
		k := s.base + int64(i)
		o := &s.b[i]
		n := &nb[floorDiv(k, 2)-base]
		for q := range numSteps {
			n.d[q] += o.d[q]
			n.p[q] += o.p[q]
			if k%2 == 0 {
				// Changes inside the first half hold over the second.
				n.p[q] += o.d[q] * w
			}
		}
		for q := range numPoints {
			n.points[q] += o.points[q]
		}
	}
	s.b, s.base, s.width = nb, base, 2*s.w()
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// step changes step quantity q by delta at time t.
func (s *bins) step(q int, t time.Duration, delta float64) {
	if delta == 0 {
		return
	}
	i := s.at(t)
	b := &s.b[i]
	end := time.Duration(s.base+int64(i)+1) * s.width
	b.d[q] += delta
	b.p[q] += delta * (end - max(t, 0)).Seconds()
}

// chunks adds r's token-bearing chunks: each raises the context in flight
// (qCtx) by its tokens at its time and counts them received (pTokens, and
// pWarmTokens times warm), as step and point would one by one; the chunks
// that fall in one bin are summed first (a fast stream's come by the
// hundred in one bin). It returns the tokens added.
func (s *bins) chunks(r *results.Result, warm float64) float64 {
	total := 0.0
	n := len(r.ChunkTimes)
	for i := 0; i < n; {
		bi := s.at(r.Sent + r.ChunkTimes[i])
		start := time.Duration(s.base+int64(bi)) * s.width
		end := start + s.width
		var d, p float64
		for j := i; i < n; i++ {
			t := max(r.Sent+r.ChunkTimes[i], 0) // at's own clamp
			if i > j && (t < start || t >= end) {
				break
			}
			k := float64(r.ChunkTokensAt(i))
			d += k
			p += k * (end - t).Seconds()
		}
		b := &s.b[bi]
		b.d[qCtx] += d
		b.p[qCtx] += p
		b.points[pTokens] += d
		b.points[pWarmTokens] += warm * d
		total += d
	}
	return total
}

// point adds n to point quantity q at time t.
func (s *bins) point(q int, t time.Duration, n float64) {
	if n != 0 {
		s.b[s.at(t)].points[q] += n
	}
}

// cursor integrates a stage's timeline over windows taken in increasing
// order of start: it walks the bins once, keeping the level reached.
type cursor struct {
	s     *bins
	k     int64 // next bin whose changes are not yet in level
	level [numSteps]float64
}

func (s *bins) cursor() *cursor { return &cursor{s: s, k: s.base} }

// integrals returns, over [from, to), the time integral (value·seconds) of
// every step quantity and the sum of every point quantity. A bin cut by
// from or to counts in proportion to the part inside (what happened within
// a bin is taken as spread evenly). from must not decrease between calls.
func (c *cursor) integrals(from, to time.Duration) (steps [numSteps]float64, points [numPoints]float64) {
	s := c.s
	if len(s.b) == 0 || to <= from {
		return steps, points
	}
	width := s.w()
	ws := width.Seconds()
	end := s.base + int64(len(s.b))
	for ; c.k < end && time.Duration(c.k+1)*width <= from; c.k++ {
		for q := range numSteps {
			c.level[q] += s.b[c.k-s.base].d[q]
		}
	}
	level := c.level
	for k := c.k; k < end; k++ {
		lo, hi := time.Duration(k)*width, time.Duration(k+1)*width
		if lo >= to {
			break
		}
		b := &s.b[k-s.base]
		if frac := (min(hi, to) - max(lo, from)).Seconds() / ws; frac > 0 {
			for q := range numSteps {
				steps[q] += frac * (level[q]*ws + b.p[q])
			}
			for q := range numPoints {
				points[q] += frac * b.points[q]
			}
		}
		for q := range numSteps {
			level[q] += b.d[q]
		}
	}
	return steps, points
}

// total returns the time integral of every step quantity over the whole
// timeline.
func (s *bins) total() (steps [numSteps]float64) {
	if len(s.b) == 0 {
		return steps
	}
	ws := s.w().Seconds()
	var level [numSteps]float64
	for i := range s.b {
		for q := range numSteps {
			steps[q] += level[q]*ws + s.b[i].p[q]
			level[q] += s.b[i].d[q]
		}
	}
	return steps
}

// peakInFlight returns the most requests in flight at a bin boundary
// inside [from, to]: a request shorter than a bin, inside one, is not
// seen.
func (s *bins) peakInFlight(from, to time.Duration) float64 {
	var level, peak float64
	w := s.w()
	for i := range s.b {
		lo := time.Duration(s.base+int64(i)) * w
		if lo >= from && lo <= to {
			peak = max(peak, level)
		}
		level += s.b[i].d[qFlight]
		if hi := lo + w; hi >= from && hi <= to {
			peak = max(peak, level)
		}
	}
	return peak
}

// shareAtLeast returns the share of [from, to) during which the mean of
// step quantity q over a bin was at least level (bins cut by from or to
// count in proportion); 0 for an empty interval.
func (s *bins) shareAtLeast(q int, from, to time.Duration, level float64) float64 {
	if len(s.b) == 0 || to <= from {
		return 0
	}
	w := s.w()
	ws := w.Seconds()
	var cur, in float64
	for i := range s.b {
		lo := time.Duration(s.base+int64(i)) * w
		hi := lo + w
		mean := cur + s.b[i].p[q]/ws
		cur += s.b[i].d[q]
		if hi <= from || lo >= to {
			continue
		}
		if mean >= level {
			in += (min(hi, to) - max(lo, from)).Seconds()
		}
	}
	return in / (to - from).Seconds()
}

// firstPoint returns the start of the first bin holding point quantity q.
func (s *bins) firstPoint(q int) (time.Duration, bool) {
	for i := range s.b {
		if s.b[i].points[q] != 0 {
			return time.Duration(s.base+int64(i)) * s.w(), true
		}
	}
	return 0, false
}
