package report

import (
	"fmt"

	"github.com/servebench/servebench/report/correlate"
)

// Thresholds of the GPU findings, each on the means over the full windows
// with requests in flight.
const (
	minGPUWindows   = 3   // fewer windows say nothing
	powerLimitShare = 0.5 // power-limited: this share of the windows at ≥ 95 % of the limit
	cappedShare     = 0.5 // … or the power cap held the clocks down this share of the time
	dramHigh        = 0.6 // memory-bound: DRAM active at least this …
	smLow           = 0.5 // … while SMs were active at most this
	underUsed       = 0.5 // underutilised: the GPU busy (a kernel running) less than this share of the time
)

// gpuFindings says what the GPU telemetry shows under load, only where
// its numbers show it: the GPUs power-limited, memory-bound (DRAM busy,
// SMs not), or underutilised while requests were in flight. Each cites
// the figures and the series they came from.
func gpuFindings(c *correlate.Correlation) []string {
	g := c.GPU
	if g == nil || g.Windows < minGPUWindows {
		return nil
	}
	var out []string
	switch {
	case g.LimitW != nil && g.PowerW != nil && float64(g.NearLimit) >= powerLimitShare*float64(g.Windows):
		out = append(out, fmt.Sprintf(
			"The GPUs were power-limited: in %d of %d windows under load they drew at least 95 %% of their power limit (mean %s W against %s W): more throughput needs a higher power limit or fewer watts per token, not more load.",
			g.NearLimit, g.Windows, num(*g.PowerW), num(*g.LimitW)))
	case g.Capped != nil && *g.Capped >= cappedShare:
		out = append(out, fmt.Sprintf(
			"The GPUs were power-limited: the power cap held their clocks down %s of the time under load (nvidia-smi clocks_event_reasons.sw_power_cap, over %d windows).",
			pct(*g.Capped), g.Windows))
	}
	if g.SM != nil && g.DRAM != nil && *g.DRAM >= dramHigh && *g.SM <= smLow {
		out = append(out, fmt.Sprintf(
			"The GPUs were memory-bound: the memory interface was active %s of the cycles while the SMs were active %s (%s, %s; means over %d windows under load): decoding waits on memory bandwidth, so larger batches, not faster compute, raise throughput.",
			pct(*g.DRAM), pct(*g.SM), g.DRAMSource, g.SMSource, g.Windows))
	}
	// Utilisation is the share of time a kernel ran: low SM activity
	// with the GPU busy is a memory-bound GPU, not an idle one.
	if busy, source := g.Util, g.UtilSource; busy != nil && *busy < underUsed {
		out = append(out, fmt.Sprintf(
			"The GPUs were underutilised: busy %s of the time (%s) over %d windows with %s requests in flight on average: the GPU did not limit the throughput; the load offered or the server's work outside the GPU did.",
			pct(*busy), source, g.Windows, num(g.InFlight)))
	}
	return out
}
