package run

import (
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/servebench/servebench/results"
)

// health watches the load generator itself, so that a harness bottleneck
// is reported rather than silently measured as server latency:
//
//   - scheduling latency: how long the process's goroutines waited,
//     runnable, before they ran (the runtime's /sched/latencies:seconds).
//     When the process does not get the CPU in time (its own goroutines
//     queue on too few cores, or other processes hold them), a stream's
//     goroutine reads its chunk late and every timestamp the client takes
//     is late by about as much;
//   - the CPU the process used, as a share of the cores it may use;
//   - garbage-collection pauses;
//   - the time request goroutines spent blocked handing records to the
//     results writer.
//
// Any of them past its threshold makes the verdict "limited by the client".
type health struct {
	start    time.Time
	cpuStart time.Duration
	gcStart  runtime.MemStats
	blocked  atomic.Int64 // ns spent blocked on a full records channel
	records  atomic.Int64
	simHere  bool // the simulator runs in this process and shares its CPU

	sched []metrics.Sample // /sched/latencies:seconds at the start
}

// Thresholds of the harness verdict.
const (
	tickEvery        = 10 * time.Millisecond
	latenessLimit    = 5 * time.Millisecond // p99 wake-up lateness
	blockedWarnShare = 0.01                 // of the run's wall time, summed over request goroutines
	cpuWarnShare     = 0.8                  // of the cores available to the process
	gcPauseWarnShare = 0.05                 // of the run's wall time
)

func startHealth(start time.Time, simHere bool) *health {
	h := &health{start: start, cpuStart: cpuTime(), simHere: simHere,
		sched: []metrics.Sample{{Name: schedLatencies}}}
	runtime.ReadMemStats(&h.gcStart)
	metrics.Read(h.sched)
	return h
}

const schedLatencies = "/sched/latencies:seconds"

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

// finish returns the harness figures and verdict.
func (h *health) finish() *results.Harness {
	wall := time.Since(h.start)
	hs := &results.Harness{Cores: runtime.GOMAXPROCS(0), SimulatorInProcess: h.simHere,
		BlockedMS: ms(time.Duration(h.blocked.Load()))}
	if cpu := cpuTime() - h.cpuStart; wall > 0 && cpu > 0 {
		hs.CPUShare = math.Round(1000*cpu.Seconds()/(wall.Seconds()*float64(hs.Cores))) / 1000
	}
	var gc runtime.MemStats
	runtime.ReadMemStats(&gc)
	hs.GCPauseMS = ms(time.Duration(gc.PauseTotalNs - h.gcStart.PauseTotalNs))
	hs.GCCycles = int(gc.NumGC - h.gcStart.NumGC)
	now := []metrics.Sample{{Name: schedLatencies}}
	metrics.Read(now)
	if now[0].Value.Kind() == metrics.KindFloat64Histogram && h.sched[0].Value.Kind() == metrics.KindFloat64Histogram {
		d := histDelta(now[0].Value.Float64Histogram(), h.sched[0].Value.Float64Histogram())
		hs.LatenessP50MS, hs.LatenessP99MS, hs.LatenessMaxMS = 1e3*d.quantile(0.5), 1e3*d.quantile(0.99), 1e3*d.quantile(1)
		hs.LatenessP50MS, hs.LatenessP99MS, hs.LatenessMaxMS = round3(hs.LatenessP50MS), round3(hs.LatenessP99MS), round3(hs.LatenessMaxMS)
	}

	var why []string
	who := "the load generator"
	if h.simHere {
		who = "the load generator and the in-process simulator"
	}
	if hs.LatenessP99MS > ms(latenessLimit) {
		why = append(why, fmt.Sprintf("its goroutines waited %.1f ms at p99 to run (%.1f ms at p50): the process did not get the CPU in time, so the timestamps it took are late by as much",
			hs.LatenessP99MS, hs.LatenessP50MS))
	}
	if wall > time.Second && hs.CPUShare > cpuWarnShare {
		why = append(why, fmt.Sprintf("%s used %.0f %% of %d cores", who, 100*hs.CPUShare, hs.Cores))
	}
	if wall > 0 && float64(gc.PauseTotalNs-h.gcStart.PauseTotalNs) > gcPauseWarnShare*float64(wall) {
		why = append(why, fmt.Sprintf("garbage collection paused it for %.0f ms in all", hs.GCPauseMS))
	}
	if b := time.Duration(h.blocked.Load()); wall > 0 && float64(b) > blockedWarnShare*float64(wall) {
		why = append(why, fmt.Sprintf("request goroutines waited %v in all for the results writer (%d records): the disk or the writer is a bottleneck",
			b.Round(time.Millisecond), h.records.Load()))
	}
	if len(why) > 0 {
		hs.Limited = true
		hs.Reason = strings.Join(why, "; ")
	}
	return hs
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// cpuTime is the process's user + system CPU time so far (0 if unknown).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// hist is a histogram of the runtime's: counts per bucket, bucket bounds.
type hist struct {
	counts  []uint64
	buckets []float64 // len(counts)+1 bounds, seconds
}

// histDelta is now − then, bucket by bucket (same buckets).
func histDelta(now, then *metrics.Float64Histogram) hist {
	d := hist{counts: slices.Clone(now.Counts), buckets: now.Buckets}
	if len(then.Counts) == len(d.counts) {
		for i := range d.counts {
			d.counts[i] -= then.Counts[i]
		}
	}
	return d
}

// quantile returns the upper bound of the bucket holding quantile q, in
// seconds (the lower bound for the last, unbounded bucket); 0 when empty.
func (h hist) quantile(q float64) float64 {
	var total uint64
	for _, c := range h.counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= max(rank, 1) {
			if math.IsInf(h.buckets[i+1], 1) {
				return h.buckets[i]
			}
			return h.buckets[i+1]
		}
	}
	return h.buckets[len(h.buckets)-1]
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
