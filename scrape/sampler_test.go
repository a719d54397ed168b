//go:build unix

package scrape

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
)

// fakeSMI is a stand-in for nvidia-smi, written to a directory put on the
// sampler's PATH. It records its arguments and pid, refuses the newer
// field names when told to, prints a header in nvidia-smi's --format=csv,nounits
// shape and two GPUs' rows every 20 ms, with timestamps 100 ms apart from
// 2025/01/02 03:04:00.000, until it is stopped. With IGNORE_INT it ignores
// the interrupt, so only a kill stops it; it also starts a child that
// sleeps, which must be stopped with it.
const fakeSMI = `#!/bin/sh
dir=$(dirname "$0")
echo "$@" > "$dir/args"
echo $$ > "$dir/pid"
case "$*" in *clocks_event_reasons*) if [ -e "$dir/old-driver" ]; then
  echo 'Field "clocks_event_reasons.sw_power_cap" is not a valid field to query.'; exit 2; fi;; esac
if [ -e "$dir/ignore-int" ]; then trap '' INT; fi
sleep 600 &
echo $! > "$dir/child"
echo "timestamp, index, uuid, name, power.draw, power.limit, utilization.gpu, utilization.memory, memory.used, clocks.sm, clocks_event_reasons.sw_power_cap"
i=0
while :; do
  s=$((i / 10)); ms=$(( (i % 10) * 100 ))
  ts=$(printf '2025/01/02 03:04:%02d.%03d' $s $ms)
  echo "$ts, 0, GPU-a, Fake H100, $((300 + i)).5, 700.00, 90, 40, 1000, 1980, Not Active"
  echo "$ts, 1, GPU-b, Fake H100, 200.5, 700.00, 50, 20, 2000, 1980, Active"
  i=$((i + 1))
  sleep 0.02
done
`

func writeFake(t *testing.T, flags ...string) string {
	t.Helper()
	return writeFakeTool(t, "nvidia-smi", fakeSMI, flags...)
}

// writeFakeTool writes script as the program name in a new directory, with
// an empty file for each flag the script looks for, and returns the
// directory (the sampler's PATH).
func writeFakeTool(t *testing.T, name, script string, flags ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range flags {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func pidOf(t *testing.T, dir, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// gone reports whether pid no longer runs: kill finds no such process,
// or it is a zombie waiting for a parent (init, in a container, may be
// slow to reap the orphans).
func gone(pid int) bool {
	// A killed process takes a moment to die: allow it 5 s.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if exited(pid) {
			return true
		}
	}
	return false
}

func exited(pid int) bool {
	if syscall.Kill(pid, 0) == syscall.ESRCH {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(after, "Z")
}

type collected struct {
	mu sync.Mutex
	s  []results.Sample
}

func (c *collected) add(s results.Sample) { c.mu.Lock(); c.s = append(c.s, s); c.mu.Unlock() }
func (c *collected) n() int               { c.mu.Lock(); defer c.mu.Unlock(); return len(c.s) }

var epoch = time.Date(2025, 1, 2, 3, 4, 0, 0, time.UTC)

// runFake starts a sampler on the fake and stops it once it has n samples.
func runFake(t *testing.T, dir string, n int, cfg SamplerConfig) (*Sampler, *collected, time.Duration) {
	t.Helper()
	cfg.Path, cfg.Epoch, cfg.Location, cfg.Interval = dir, epoch, time.UTC, 100*time.Millisecond
	s, err := NewSampler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, took := runSampler(t, s, n, nil)
	return s, got, took
}

// runSampler runs s until it has n samples or stop says so (nil: never),
// or until Run returns by itself; it then ends the run and returns the
// samples and how long Run took to return after it (0: by itself).
func runSampler(t *testing.T, s *Sampler, n int, stop func() bool) (*collected, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got collected
	done := make(chan struct{})
	go func() {
		if err := s.Run(ctx, got.add); err != nil {
			t.Error(err)
		}
		close(done)
	}()
	deadline := time.After(30 * time.Second)
	for got.n() < n && (stop == nil || !stop()) {
		select {
		case <-deadline:
			t.Fatalf("%d samples after 30 s, want %d; warnings %v", got.n(), n, s.Warnings())
		case <-done:
			return &got, 0
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	t0 := time.Now()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return 30 s after the run ended")
	}
	return &got, time.Since(t0)
}

// TestSamplerFakeSMI runs a fake nvidia-smi found on the sampler's PATH:
// the query and interval it is given, its rows as samples on the run's
// timeline, and the process and its child gone when the run ends.
func TestSamplerFakeSMI(t *testing.T) {
	t.Parallel()
	dir := writeFake(t)
	s, got, _ := runFake(t, dir, 3, SamplerConfig{GPUs: []string{"0", "1"}})
	args, _ := os.ReadFile(filepath.Join(dir, "args"))
	for _, want := range []string{"--query-gpu=timestamp,index,", "--format=csv,nounits", "-lms 100", "-i 0,1"} {
		if !strings.Contains(string(args), want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	smp := got.s[1]
	if smp.At != 100*time.Millisecond || !smp.OK || !smp.GPU || smp.Target != "nvidia-smi" {
		t.Errorf("second sample at %v ok %v gpu %v target %q; want 100ms, ok, a GPU reading of nvidia-smi", smp.At, smp.OK, smp.GPU, smp.Target)
	}
	if v := smp.Values; v[results.GPUPowerW] != 301.5+200.5 || v[results.GPUPowerCapped] != 0.5 || v[results.GPUMemUsedBytes] != 3000<<20 {
		t.Errorf("second sample values = %v", v)
	}
	if pid, child := pidOf(t, dir, "pid"), pidOf(t, dir, "child"); !gone(pid) || !gone(child) {
		t.Errorf("after the run: sampler %d gone %v, its child %d gone %v", pid, gone(pid), child, gone(child))
	}
	if w := s.Warnings(); len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}
}

// TestSamplerKillsStubborn: a sampler that ignores the interrupt is killed
// after StopTimeout, its child with it.
func TestSamplerKillsStubborn(t *testing.T) {
	t.Parallel()
	dir := writeFake(t, "ignore-int")
	_, _, took := runFake(t, dir, 2, SamplerConfig{StopTimeout: 300 * time.Millisecond})
	if pid, child := pidOf(t, dir, "pid"), pidOf(t, dir, "child"); !gone(pid) || !gone(child) {
		t.Errorf("sampler %d gone %v, child %d gone %v", pid, gone(pid), child, gone(child))
	}
	if took < 300*time.Millisecond {
		t.Errorf("Run returned %v after the run ended, before the stop timeout: was it killed?", took)
	}
}

// TestSamplerBounded: MaxSamples stops the sampler without the run ending.
func TestSamplerBounded(t *testing.T) {
	t.Parallel()
	dir := writeFake(t)
	s, got, _ := runFake(t, dir, 1000, SamplerConfig{MaxSamples: 4})
	if got.n() != 4 {
		t.Errorf("%d samples, want 4", got.n())
	}
	if !gone(pidOf(t, dir, "pid")) {
		t.Error("the sampler still runs after its last sample")
	}
	if w := s.Warnings(); len(w) != 1 || !strings.Contains(w[0].Error(), "stopped after 4 samples") {
		t.Errorf("warnings = %v", w)
	}
}

// TestSamplerOldDriver: a driver that refuses clocks_event_reasons gets
// the older names.
func TestSamplerOldDriver(t *testing.T) {
	t.Parallel()
	dir := writeFake(t, "old-driver")
	runFake(t, dir, 1, SamplerConfig{})
	args, _ := os.ReadFile(filepath.Join(dir, "args"))
	if !strings.Contains(string(args), "clocks_throttle_reasons.sw_power_cap") {
		t.Errorf("second try's args = %q, want the older field names", args)
	}
}

// TestSamplerMissing: no nvidia-smi on the PATH fails at once, naming it.
func TestSamplerMissing(t *testing.T) {
	t.Parallel()
	_, err := NewSampler(SamplerConfig{Path: t.TempDir(), Epoch: epoch})
	if err == nil || !strings.Contains(err.Error(), "nvidia-smi not found on PATH") {
		t.Errorf("err = %v", err)
	}
}
