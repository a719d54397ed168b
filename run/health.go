package run

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/servebench/servebench/results"
)

// health watches the load generator itself, so that a harness bottleneck
// is reported rather than silently measured as server latency: the time
// request goroutines spent blocked handing records to the writer, and the
// CPU the process used.
type health struct {
	start    time.Time
	cpuStart time.Duration
	blocked  atomic.Int64 // ns spent blocked on a full records channel
	records  atomic.Int64
	simHere  bool // the simulator runs in this process and shares its CPU
}

func startHealth(start time.Time, simHere bool) *health {
	return &health{start: start, cpuStart: cpuTime(), simHere: simHere}
}

// send hands a record to the writer, timing only the slow path.
func (h *health) send(ch chan<- results.Record, r *results.Result) {
	h.records.Add(1)
	rec := results.ResultRecord(r)
	select {
	case ch <- rec:
		return
	default:
	}
	t0 := time.Now()
	ch <- rec
	h.blocked.Add(int64(time.Since(t0)))
}

// Thresholds above which the harness warns.
const (
	blockedWarnShare = 0.01 // of the run's wall time, summed over request goroutines
	cpuWarnShare     = 0.8  // of the cores available to the process
)

// finish returns the warnings to record, if any.
func (h *health) finish() []string {
	var out []string
	wall := time.Since(h.start)
	if b := time.Duration(h.blocked.Load()); wall > 0 && float64(b) > blockedWarnShare*float64(wall) {
		out = append(out, fmt.Sprintf("request goroutines waited %v in total for the results writer "+
			"(%d records): the disk or the writer is a bottleneck and latencies may include it", b.Round(time.Millisecond), h.records.Load()))
	}
	cores := runtime.GOMAXPROCS(0)
	if cpu := cpuTime() - h.cpuStart; wall > time.Second && cpu > 0 {
		share := cpu.Seconds() / (wall.Seconds() * float64(cores))
		if share > cpuWarnShare {
			who := "the load generator"
			if h.simHere {
				who = "the load generator and the in-process simulator"
			}
			out = append(out, fmt.Sprintf("%s used %.0f%% of %d cores: client-side delays may "+
				"inflate TTFT and ITL; run fewer streams per machine or merge results from several machines", who, share*100, cores))
		}
	}
	return out
}

// cpuTime is the process's user + system CPU time so far (0 if unknown).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
