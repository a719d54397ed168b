package realtime

import (
	"testing"
	"time"
)

// TestWatchReportsAShare: a watch over a quiet stretch reports a share
// between 0 and 1 from the samples it took; stopping at once reports 0.
func TestWatchReportsAShare(t *testing.T) {
	if got := Watch()(); got != 0 {
		t.Errorf("a watch stopped at once: %v, want 0", got)
	}
	stop := Watch()
	time.Sleep(200 * time.Millisecond)
	if got := stop(); got < 0 || got > 1 {
		t.Errorf("share %v outside [0, 1]", got)
	}
}
