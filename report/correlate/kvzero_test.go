package correlate

import (
	"math"
	"testing"
)

// TestKVZeroOnly: a KV-cache gauge that read 0 in every window while
// requests ran does not measure the cache (a running request holds blocks),
// so the stage has no KV-usage maximum and says why; a gauge that moved, or
// one read while nothing ran, is kept.
func TestKVZeroOnly(t *testing.T) {
	win := func(running, kv float64) Window {
		return Window{Stage: 0, Running: running, KVUsagePerc: kv, Preemptions: math.NaN(),
			ContextSum: math.NaN()}
	}
	cases := []struct {
		name     string
		ws       []Window
		zeroOnly bool
		kvMax    float64 // -1: absent
	}{
		{"zero while running", []Window{win(4, 0), win(4, 0), win(3, 0)}, true, -1},
		{"moved", []Window{win(4, 0), win(4, 12.5)}, false, 12.5},
		{"idle zero", []Window{win(0, 0), win(0, 0)}, false, 0},
		{"not exported", []Window{win(4, math.NaN())}, false, -1},
	}
	for _, c := range cases {
		sc := stageCorrelation(0, "s", c.ws)
		if sc.KVZeroOnly != c.zeroOnly {
			t.Errorf("%s: KVZeroOnly = %v, want %v", c.name, sc.KVZeroOnly, c.zeroOnly)
		}
		switch {
		case c.kvMax < 0 && sc.KVUsageMax != nil:
			t.Errorf("%s: KVUsageMax = %v, want absent", c.name, *sc.KVUsageMax)
		case c.kvMax >= 0 && (sc.KVUsageMax == nil || *sc.KVUsageMax != c.kvMax):
			t.Errorf("%s: KVUsageMax = %v, want %v", c.name, sc.KVUsageMax, c.kvMax)
		}
	}
}
