package replay

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// cost is the simulator's step-cost model (its four coefficients).
type cost struct {
	overheadUS, perSeqUS, perKVNS, perPrefillUS float64
}

// step is the time, in seconds, of a decode step of n streams that read
// read tokens of context in all (kvModel.read summed over the streams).
func (c cost) step(n, read float64) float64 {
	return (c.overheadUS + c.perSeqUS*n + c.perKVNS*read/1000) * 1e-6
}

// rate is the tokens per second of each of n streams of c tokens of
// context.
func (c cost) rate(n, ctx float64, kv *kvModel) float64 {
	n = max(n, 1)
	return 1 / c.step(n, n*kv.read(ctx))
}

// boundMargin is how much faster than the fastest decode a log shows the
// replay decodes when the log has no interval of steady decoding: a
// stream that ended inside an interval was faster than the interval's
// average, by how much the log does not tell.
const boundMargin = 0.05

// decodePoint is one interval of steady decoding: n streams decoding,
// seconds per step, and the context the step read.
type decodePoint struct {
	n, step, read float64
	line          int64
}

// steadyPoints are the intervals of steady decoding: requests running,
// the same number at both ends, no prompt prefilled, nothing waiting, and
// the KV cache growing no faster than the tokens generated explain (a
// long prompt prefilled in chunks fills it while its prompt tokens are
// not yet counted).
func steadyPoints(lines []Line, kv *kvModel) []decodePoint {
	var pts []decodePoint
	for i, l := range lines {
		if l.Gen <= 0 || l.Running <= 0 || l.Prompt > 0 || l.Waiting > 0 || (i > 0 && lines[i-1].Running != l.Running) {
			continue
		}
		if i > 0 && prefilling(lines[i-1], l, kv) {
			continue
		}
		// Context at the interval's middle: at the line, less half the
		// tokens the interval added.
		read := math.NaN()
		if c := kv.contextAt(l.KVPerc, l.Running); !math.IsNaN(c) {
			mid := max(c-l.Gen*l.Interval/2, l.Running) / l.Running
			read = l.Running * kv.read(mid)
		}
		pts = append(pts, decodePoint{n: l.Running, step: l.Running / l.Gen, read: read, line: l.LogLine})
	}
	return pts
}

// prefilling reports whether the context in flight grew by more than the
// tokens generated between lines p and l can explain: by half as much
// again, and two of KV usage's printed steps (0.1 %).
func prefilling(p, l Line, kv *kvModel) bool {
	a, b := kv.contextAt(p.KVPerc, p.Running), kv.contextAt(l.KVPerc, l.Running)
	if math.IsNaN(a) || math.IsNaN(b) {
		return false
	}
	generated := (p.Gen + l.Gen) / 2 * (l.At - p.At)
	slack := kv.contextAt(p.KVPerc+0.2, p.Running) - a
	return b-a > 1.5*generated+slack
}

// fitCost fits the step cost to the log's intervals of steady decoding,
// and says how. With none, the fastest decode the log shows bounds it.
func fitCost(lines []Line, kv *kvModel, defaults cost) (cost, []string) {
	c := defaults
	pts := steadyPoints(lines, kv)
	if len(pts) == 0 {
		return boundCost(lines, kv, c)
	}
	useKV := len(pts) >= 3
	var reads, ns []float64
	for _, p := range pts {
		useKV = useKV && !math.IsNaN(p.read)
		reads = append(reads, p.read)
		ns = append(ns, p.n)
	}
	if useKV && (slices.Max(reads)-slices.Min(reads)) < 0.05*slices.Max(reads) {
		useKV = false
	}
	useN := len(pts) >= 3 && slices.Min(ns) != slices.Max(ns)
	beta, ok := leastSquares(pts, useN, useKV)
	for ok && ((useKV && beta[2] < 0) || (useN && beta[1] < 0)) {
		if useKV && beta[2] < 0 {
			useKV = false
		} else {
			useN = false
		}
		beta, ok = leastSquares(pts, useN, useKV)
	}
	if !ok || beta[0] <= 0 {
		mean := 0.0
		for _, p := range pts {
			mean += p.step / float64(len(pts))
		}
		beta, useN, useKV = []float64{mean * 1e6, 0, 0}, false, false
	}
	c.overheadUS, c.perSeqUS, c.perKVNS = beta[0], beta[1], beta[2]
	lineNos := make([]string, len(pts))
	for i, p := range pts {
		lineNos[i] = fmt.Sprint(p.line)
	}
	notes := []string{fmt.Sprintf("decode step cost fitted to %d interval(s) of steady decoding (lines %s): %.0f µs per step%s%s",
		len(pts), joinShort(lineNos), c.overheadUS, map[bool]string{true: fmt.Sprintf(" + %.1f µs per request", c.perSeqUS)}[useN],
		map[bool]string{true: fmt.Sprintf(" + %.1f ns per token of context read", c.perKVNS)}[useKV])}
	if !useN {
		notes = append(notes, fmt.Sprintf("the steady intervals all had %g request(s) running: the log does not tell a request's own cost from a step's, so the replay's step costs the same at any batch size", pts[0].n))
	}
	if !useKV {
		notes = append(notes, "the steady intervals do not show how context slows decoding (too few, too little change in KV usage, or no KV figures): the replay's step cost does not grow with context")
	}
	return c, notes
}

// boundCost is the step cost when no interval shows steady decoding: the
// fastest decode of an interval without prompt tokens or a chunked
// prefill (which slows the steps beside it) bounds a stream's speed from below; with none, the
// simulator's default cost stays.
func boundCost(lines []Line, kv *kvModel, c cost) (cost, []string) {
	best, at := 0.0, int64(0)
	for i, l := range lines {
		if l.Prompt > 0 || (i > 0 && prefilling(lines[i-1], l, kv)) {
			continue
		}
		n := l.Running
		if i > 0 {
			n = max(n, lines[i-1].Running)
		}
		if r := l.Gen / max(n, 1); r > best {
			best, at = r, l.LogLine
		}
	}
	if best == 0 {
		return c, []string{fmt.Sprintf("no interval shows decoding alone (every interval with tokens also prefilled prompts, counted or in chunks): the step costs the simulator's default, %.0f µs + %.0f µs per request, and the log does not tell the decode speed", c.overheadUS, c.perSeqUS)}
	}
	c.overheadUS, c.perSeqUS, c.perKVNS = 1e6/(best*(1+boundMargin)), 0, 0
	return c, []string{fmt.Sprintf("no interval of steady decoding (the same requests running at both ends, no prompt, nothing waiting): "+
		"a stream decodes at %.1f tokens/s, %.0f %% above the fastest the log shows without prefill (%.1f tokens/s per request at line %d, a lower bound when the interval held an arrival or a departure); "+
		"the log does not tell how much faster it was, nor how the speed changes with more requests or a longer context",
		best*(1+boundMargin), 100*boundMargin, best, at)}
}

// leastSquares fits step (µs) = b0 + b1·n + b2·read/1000 over pts, with the
// columns chosen; unused coefficients are 0.
func leastSquares(pts []decodePoint, useN, useKV bool) ([]float64, bool) {
	cols := []func(p decodePoint) float64{func(decodePoint) float64 { return 1 }}
	idx := []int{0}
	if useN {
		cols, idx = append(cols, func(p decodePoint) float64 { return p.n }), append(idx, 1)
	}
	if useKV {
		cols, idx = append(cols, func(p decodePoint) float64 { return p.read / 1000 }), append(idx, 2)
	}
	k := len(cols)
	a := make([][]float64, k)
	for i := range a {
		a[i] = make([]float64, k+1)
	}
	for _, p := range pts {
		y := p.step * 1e6
		for i := range k {
			for j := range k {
				a[i][j] += cols[i](p) * cols[j](p)
			}
			a[i][k] += cols[i](p) * y
		}
	}
	x, ok := solve(a)
	if !ok {
		return nil, false
	}
	beta := make([]float64, 3)
	for i, j := range idx {
		beta[j] = x[i]
	}
	return beta, true
}

// solve solves the augmented system a (k rows of k+1) by Gaussian
// elimination with partial pivoting.
func solve(a [][]float64) ([]float64, bool) {
	k := len(a)
	for c := range k {
		p := c
		for r := c + 1; r < k; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		if math.Abs(a[p][c]) < 1e-12*(1+math.Abs(a[c][c])) {
			return nil, false
		}
		a[c], a[p] = a[p], a[c]
		for r := c + 1; r < k; r++ {
			f := a[r][c] / a[c][c]
			for j := c; j <= k; j++ {
				a[r][j] -= f * a[c][j]
			}
		}
	}
	x := make([]float64, k)
	for r := k - 1; r >= 0; r-- {
		s := a[r][k]
		for j := r + 1; j < k; j++ {
			s -= a[r][j] * x[j]
		}
		x[r] = s / a[r][r]
	}
	return x, true
}

// fitPrefill estimates the cost of a prompt token from the intervals in
// which the engine was never idle and prefilled prompts (requests waiting
// at both ends): the interval's time less its decode steps' time, per
// prompt token. It returns false when no interval shows it.
func fitPrefill(lines []Line, c cost, kv *kvModel) (float64, []string, bool) {
	var per []float64
	for i := 1; i < len(lines); i++ {
		l, p := lines[i], lines[i-1]
		if l.Waiting <= 0 || p.Waiting <= 0 || l.Prompt <= 0 || l.Gen <= 0 {
			continue
		}
		n := (l.Running + p.Running) / 2
		if n < 1 {
			continue
		}
		ctx := kv.contextAt(l.KVPerc, l.Running) / l.Running
		if math.IsNaN(ctx) {
			ctx = 0
		}
		steps := l.Gen * l.Interval / n
		rest := l.Interval - steps*c.step(n, n*kv.read(ctx))
		if rest > 0 {
			per = append(per, rest/(l.Prompt*l.Interval)*1e6)
		}
	}
	if len(per) == 0 {
		return 0, nil, false
	}
	slices.Sort(per)
	v := per[len(per)/2]
	return v, []string{fmt.Sprintf("prefill cost %.1f µs per prompt token, from %d interval(s) in which requests waited throughout (the interval's time less its decode steps', per prompt token)", v, len(per))}, true
}

func joinShort(xs []string) string {
	if len(xs) <= 6 {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:3], ", ") + " … " + strings.Join(xs[len(xs)-2:], ", ")
}
