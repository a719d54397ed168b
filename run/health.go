package run

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/servebench/servebench/client"
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
//   - the stream readers (client.ReaderStats): a reader that keeps up waits
//     inside its reads, each returning what little has arrived (a chunk or
//     a few); one that is the bottleneck finds a full buffer waiting at
//     each. This catches one goroutine saturating one core, which the
//     process's CPU share on a machine of several cores never shows;
//   - the CPU the process used during the load (from its start to its
//     end, not the set-up nor the outputs), as a share of the cores it may
//     use less those other processes used meanwhile (Linux's /proc/stat);
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

	readers     func() client.ReaderStats // nil: not watched
	readStart   client.ReaderStats
	machineBusy float64 // the machine's busy CPU seconds at the start, all processes; NaN when unknown

	sched []metrics.Sample // /sched/latencies:seconds at the start
}

// Thresholds of the harness verdict.
const (
	tickEvery        = 10 * time.Millisecond
	latenessLimit    = 5 * time.Millisecond // p99 wake-up lateness
	blockedWarnShare = 0.01                 // of the run's wall time, summed over request goroutines
	cpuWarnShare     = 0.8                  // of the cores available to the process
	cpuWarnCores     = 0.5                  // … when it used at least this many
	gcPauseWarnShare = 0.05                 // of the run's wall time
	readerFullShare  = 0.75                 // of the stream reads, finding a full buffer waiting
	readerMinReads   = 200                  // fewer reads cannot tell
)

// startHealth starts watching the process; readers, when not nil, gives
// the client's stream-reader figures. Call begin when the load starts.
func startHealth(start time.Time, simHere bool, readers func() client.ReaderStats) *health {
	h := &health{simHere: simHere, readers: readers, sched: []metrics.Sample{{Name: schedLatencies}}}
	h.begin(start)
	return h
}

// begin (re)starts the measurement at now, the load's start: what the
// process did before (warm-up, prompts, the first scrape) is left out.
func (h *health) begin(now time.Time) {
	h.start, h.cpuStart, h.machineBusy = now, cpuTime(), machineBusySeconds()
	runtime.ReadMemStats(&h.gcStart)
	metrics.Read(h.sched)
	if h.readers != nil {
		h.readStart = h.readers()
	}
}

const schedLatencies = "/sched/latencies:seconds"

// send hands a record to the writer, timing only the slow path.
func (h *health) send(ch chan<- results.Record, rec results.Record) {
	h.records.Add(1)
	select {
	case ch <- rec:
		return
	default:
	}
	t0 := time.Now()
	ch <- rec
	h.blocked.Add(int64(time.Since(t0)))
}

// finish returns the harness figures and verdict over the load.
func (h *health) finish() *results.Harness {
	wall := time.Since(h.start)
	cpu := cpuTime() - h.cpuStart
	hs := &results.Harness{Cores: runtime.GOMAXPROCS(0), SimulatorInProcess: h.simHere,
		BlockedMS: ms(time.Duration(h.blocked.Load()))}
	if wall > 0 && cpu > 0 {
		hs.CPUShare = round3(cpu.Seconds() / (wall.Seconds() * float64(hs.Cores)))
	}
	if busy := machineBusySeconds(); wall > 0 && !math.IsNaN(busy) && !math.IsNaN(h.machineBusy) {
		hs.OtherCores = round3(max(busy-h.machineBusy-cpu.Seconds(), 0) / wall.Seconds())
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
	reads := h.readerFigures(hs)
	why := h.reasons(hs, wall, reads, time.Duration(gc.PauseTotalNs-h.gcStart.PauseTotalNs))
	if len(why) > 0 {
		hs.Limited = true
		hs.Reason = strings.Join(why, "; ")
	}
	return hs
}

// reasons says which of the harness figures of hs, over a load of wall
// time wall, with reads stream reads and gc of pauses, are past their
// thresholds, and what that means.
func (h *health) reasons(hs *results.Harness, wall time.Duration, reads int64, gc time.Duration) []string {
	var why []string
	who := "the load generator"
	if h.simHere {
		who = "the load generator and the in-process simulator"
	}
	if hs.LatenessP99MS > ms(latenessLimit) {
		why = append(why, fmt.Sprintf("its goroutines waited %.1f ms at p99 to run (%.1f ms at p50): the process did not get the CPU in time, so the timestamps it took are late by as much",
			hs.LatenessP99MS, hs.LatenessP50MS))
	}
	if reads >= readerMinReads && hs.FullReadShare >= readerFullShare {
		why = append(why, fmt.Sprintf("its stream readers were the bottleneck: %.0f %% of their %d reads found a full buffer waiting (they spent %.0f %% of their reading time between reads, decoding, recording or waiting for a CPU), so the chunks came faster than it read them and their times are its own pace",
			100*hs.FullReadShare, reads, 100*hs.ReaderBusyShare))
	}
	if used, avail := hs.CPUShare*float64(hs.Cores), float64(hs.Cores)-hs.OtherCores; wall > time.Second && used >= cpuWarnCores && used > cpuWarnShare*avail {
		msg := fmt.Sprintf("%s used %.1f of its %d cores during the load", who, used, hs.Cores)
		if hs.OtherCores >= 0.05 {
			msg = fmt.Sprintf("%s used %.1f cores during the load, of the %.1f of its %d that other processes left it", who, used, max(avail, used), hs.Cores)
		}
		why = append(why, msg)
	}
	if wall > 0 && float64(gc) > gcPauseWarnShare*float64(wall) {
		why = append(why, fmt.Sprintf("garbage collection paused it for %.0f ms in all", hs.GCPauseMS))
	}
	if b := time.Duration(h.blocked.Load()); wall > 0 && float64(b) > blockedWarnShare*float64(wall) {
		why = append(why, fmt.Sprintf("request goroutines waited %v in all for the results writer (%d records): the disk or the writer is a bottleneck",
			b.Round(time.Millisecond), h.records.Load()))
	}
	return why
}

// readerFigures fills the stream readers' shares of hs over the load and
// returns the number of reads they rest on.
func (h *health) readerFigures(hs *results.Harness) int64 {
	if h.readers == nil {
		return 0
	}
	r := h.readers()
	reads, full := r.Reads-h.readStart.Reads, r.FullReads-h.readStart.FullReads
	reading, in := r.Reading-h.readStart.Reading, r.InRead-h.readStart.InRead
	if reads <= 0 || reading <= 0 {
		return 0
	}
	hs.FullReadShare = round3(float64(full) / float64(reads))
	hs.ReaderBusyShare = round3(max(float64(reading-in), 0) / float64(reading))
	return reads
}

// userHZ is the unit of /proc/stat's CPU times (USER_HZ, 100 on every
// Linux architecture Go supports).
const userHZ = 100

// machineBusySeconds is the CPU time all processes have used since boot,
// from /proc/stat's first line (every state but idle and iowait), in
// seconds; NaN where it cannot be read.
func machineBusySeconds() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return math.NaN()
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return math.NaN()
	}
	var busy float64
	for i, v := range f[1:] {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return math.NaN()
		}
		// user nice system idle iowait irq softirq steal guest guest_nice;
		// guest time is already counted in user.
		if i != 3 && i != 4 && i < 8 {
			busy += n
		}
	}
	return busy / userHZ
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
