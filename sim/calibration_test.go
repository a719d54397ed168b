package sim

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// seedPoint is one periodic log line of seed 000/001 (gpt-oss-120b, six
// streams): KV usage in percent and average generation throughput.
type seedPoint struct{ usagePerc, tokensPerSec float64 }

var seedDecay = []seedPoint{
	{4.3, 544.8}, {21.5, 468.0}, {31.6, 426.6}, {41.0, 396.0}, {51.1, 367.2}, {59.3, 348.6},
}

// seedDecayDuration is the time between the seed's first and last points
// (11:59:14 → 12:04:54).
const seedDecayDuration = 5*time.Minute + 40*time.Second

// Decay workload: six closed-loop streams sharing a 1,024-token prefix
// (64 full blocks) with 22 unique tokens each, so five of six requests hit
// 1,024 of 1,046 tokens: 5 × 1024 / (6 × 1046) = 81.6 % prefix-cache hits,
// as in the seed; outputs long enough to pass 59.3 % KV usage (≈ 62 % at the end).
const (
	decayStreams   = 6
	decayShared    = 1024
	decayPrompt    = 1046
	decayMaxTokens = 27000
)

// runDecay simulates the decay workload on the gpt-oss-120b preset in
// virtual time and returns its 10-second stat lines.
func runDecay(t testing.TB, cfg Config) []timedLine {
	s := newVSim(t, cfg)
	s.check = false // the invariant test covers the bookkeeping; this run is long
	s.logEvery(10 * time.Second)
	next := 0
	submit := func(at time.Duration) {
		r := &Request{ID: fmt.Sprint(next), Prompt: ids(decayPrompt, decayShared, uint32(next)), MaxTokens: decayMaxTokens, IgnoreEOS: true}
		next++
		s.at(at, r)
	}
	for range decayStreams {
		submit(0)
	}
	s.onOut = func(o Output) bool {
		return o.FinishReason == "" // stop at the first finished stream: the seed ends there
	}
	s.run(time.Hour, 10_000_000)
	return s.lines
}

// interpolate returns the throughput and time at which the lines' KV usage
// crosses usagePerc (linear between adjacent lines).
func interpolate(lines []timedLine, usagePerc float64) (tokensPerSec float64, at time.Duration, ok bool) {
	for i := 1; i < len(lines); i++ {
		a, b := lines[i-1], lines[i]
		if a.KVUsagePerc <= usagePerc && usagePerc <= b.KVUsagePerc && b.KVUsagePerc > a.KVUsagePerc {
			f := (usagePerc - a.KVUsagePerc) / (b.KVUsagePerc - a.KVUsagePerc)
			return a.GenerationTokensPerSec + f*(b.GenerationTokensPerSec-a.GenerationTokensPerSec),
				a.at + time.Duration(f*float64(b.at-a.at)), true
		}
	}
	return 0, 0, false
}

// TestDecayCalibration checks the gpt-oss-120b preset against the seed:
// each of the six (KV usage, generation throughput) points within ±5 %,
// the decay from the first to the last point within ±15 % of 5 min 40 s,
// and the prefix-cache hit rate at 81.6 %.
func TestDecayCalibration(t *testing.T) {
	t.Parallel()
	cfg, err := Preset("gpt-oss-120b-h100")
	if err != nil {
		t.Fatal(err)
	}
	lines := runDecay(t, cfg)
	if testing.Verbose() {
		for _, l := range lines {
			t.Logf("%6.0fs %s", l.at.Seconds(), l.StatLine)
		}
	}
	var first, last time.Duration
	for i, p := range seedDecay {
		got, at, ok := interpolate(lines, p.usagePerc)
		if !ok {
			t.Errorf("KV usage never crossed %.1f%%", p.usagePerc)
			continue
		}
		dev := (got - p.tokensPerSec) / p.tokensPerSec
		t.Logf("usage %4.1f%%: %5.1f tok/s (seed %5.1f, %+.1f%%) at %v", p.usagePerc, got, p.tokensPerSec, 100*dev, at.Round(time.Second))
		if math.Abs(dev) > 0.05 {
			t.Errorf("usage %.1f%%: %.1f tok/s, seed %.1f (%+.1f%%, allowed ±5%%)", p.usagePerc, got, p.tokensPerSec, 100*dev)
		}
		if i == 0 {
			first = at
		}
		last = at
	}
	d := last - first
	t.Logf("decay %.1f%% → %.1f%% took %v (seed %v)", seedDecay[0].usagePerc, seedDecay[len(seedDecay)-1].usagePerc, d.Round(time.Second), seedDecayDuration)
	if dev := (d.Seconds() - seedDecayDuration.Seconds()) / seedDecayDuration.Seconds(); math.Abs(dev) > 0.15 {
		t.Errorf("decay took %v, seed %v (%+.0f%%, allowed ±15%%)", d, seedDecayDuration, 100*dev)
	}
	if hr := lines[len(lines)-1].PrefixHitRatePerc; math.Abs(hr-81.6) > 0.1 {
		t.Errorf("prefix cache hit rate %.1f%%, seed 81.6%%", hr)
	}
}
