package report

import (
	"strings"
	"testing"

	"github.com/servebench/servebench/report/correlate"
)

// TestGPUFindings: each finding only when the figures show it, citing
// them; none from too few windows, and no memory-bound verdict without SM
// activity to set DRAM against.
func TestGPUFindings(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	healthy := correlate.GPU{Windows: 10, GPUs: 2, PowerW: f(500), LimitW: f(1400), Util: f(0.98), SM: f(0.7), DRAM: f(0.65),
		SMSource: "DCGM_FI_PROF_SM_ACTIVE", DRAMSource: "DCGM_FI_PROF_DRAM_ACTIVE", UtilSource: "DCGM_FI_DEV_GPU_UTIL", InFlight: 12}
	tests := []struct {
		name string
		edit func(g *correlate.GPU)
		want []string // substrings, one finding each, in order
	}{
		{"healthy", func(*correlate.GPU) {}, nil},
		{"power-limited", func(g *correlate.GPU) { g.PowerW, g.NearLimit = f(1360), 7 }, []string{"power-limited: in 7 of 10 windows", "1,360 W against 1,400 W"}},
		{"power cap", func(g *correlate.GPU) { g.LimitW, g.Capped = nil, f(0.8) }, []string{"power cap held their clocks down 80.0 %"}},
		{"memory-bound", func(g *correlate.GPU) { g.SM, g.DRAM = f(0.3), f(0.8) }, []string{"memory-bound: the memory interface was active 80.0 % of the cycles while the SMs were active 30.0 % (DCGM_FI_PROF_DRAM_ACTIVE, DCGM_FI_PROF_SM_ACTIVE"}},
		{"no SM activity", func(g *correlate.GPU) { g.SM, g.DRAM = nil, f(0.9) }, nil},
		{"underutilised", func(g *correlate.GPU) { g.Util = f(0.31) }, []string{"underutilised: busy 31.0 % of the time (DCGM_FI_DEV_GPU_UTIL) over 10 windows with 12 requests in flight"}},
		{"too few windows", func(g *correlate.GPU) { g.Windows, g.Util, g.SM = 2, f(0.1), nil }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := healthy
			tc.edit(&g)
			got := gpuFindings(&correlate.Correlation{GPU: &g})
			n := len(tc.want)
			if tc.name == "power-limited" {
				n = 1 // two pieces of one finding
			}
			if len(got) != n {
				t.Fatalf("findings %q, want %d", got, len(tc.want))
			}
			all := strings.Join(got, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("findings %q lack %q", got, w)
				}
			}
		})
	}
}
