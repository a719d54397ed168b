package sim

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// logger writes vLLM-format log records:
// "(APIServer pid=N) INFO 11-28 11:59:14 [loggers.py:236] message".
// Safe for concurrent use.
type logger struct {
	mu  sync.Mutex
	w   io.Writer
	pid int
	now func() time.Time
}

// Process names vLLM prefixes its records with.
const (
	procAPI    = "APIServer"
	procEngine = "EngineCore_DP0"
)

func (l *logger) printf(proc, level, src, format string, args ...any) {
	if l == nil || l.w == nil || l.w == io.Discard {
		return
	}
	msg := fmt.Sprintf(format, args...)
	line := fmt.Sprintf("(%s pid=%d) %s %s [%s] %s\n", proc, l.pid, level, l.now().Format("01-02 15:04:05"), src, msg)
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.w, line)
}

// access writes a uvicorn access-log record.
func (l *logger) access(remote, method, path, proto string, status int, text string) {
	if l == nil || l.w == nil || l.w == io.Discard {
		return
	}
	line := fmt.Sprintf("(%s pid=%d) INFO:     %s - \"%s %s %s\" %d %s\n", procAPI, l.pid, remote, method, path, proto, status, text)
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.w, line)
}

// startup writes the start-up records a vLLM server prints, including the
// three KV-capacity lines.
func (l *logger) startup(cfg Config, k Capacity) {
	l.printf(procAPI, "INFO", "api_server.py:1977", "vLLM API server version %s", cfg.VLLMVersion)
	l.printf(procAPI, "INFO", "utils.py:253", "non-default args: {'model': '%s', 'max_model_len': %d, 'served_model_name': ['%s'], 'gpu_memory_utilization': %g, 'max_num_seqs': %d}",
		cfg.Model, cfg.MaxModelLen, cfg.ServedModelName, cfg.GPUMemoryUtilization, cfg.MaxNumSeqs)
	l.printf(procAPI, "INFO", "model.py:631", "Resolved architecture: %s", cfg.Architecture)
	l.printf(procAPI, "INFO", "model.py:1745", "Using max model len %d", cfg.MaxModelLen)
	if cfg.EnableChunkedPrefill {
		l.printf(procAPI, "INFO", "scheduler.py:216", "Chunked prefill is enabled with max_num_batched_tokens=%d.", cfg.MaxNumBatchedTokens)
	}
	l.printf(procEngine, "INFO", "core.py:93", "Initializing a V1 LLM engine (v%s) with config: model='%s', max_seq_len=%d, served_model_name=%s, enable_prefix_caching=%s, enable_chunked_prefill=%s, seed=%d (servebench simulator, preset %s)",
		cfg.VLLMVersion, cfg.Model, cfg.MaxModelLen, cfg.ServedModelName, pyBool(cfg.EnablePrefixCaching), pyBool(cfg.EnableChunkedPrefill), cfg.Seed, cfg.Name)
	lines := k.StartupLines(cfg)
	l.printf(procEngine, "INFO", "gpu_worker.py:359", "%s", lines[0])
	l.printf(procEngine, "INFO", "kv_cache_utils.py:1229", "%s", lines[1])
	l.printf(procEngine, "INFO", "kv_cache_utils.py:1234", "%s", lines[2])
}

// statLogger produces vLLM's periodic "Engine 000: …" line from successive
// Stats snapshots, as LoggingStatLogger does: throughputs are tokens since
// the previous line ÷ seconds since it; running, waiting and usage are the
// latest values; the hit rate covers the most recent requests.
type statLogger struct {
	last        time.Time
	prompt, gen int64
	preemptions int
	prevIdle    bool
}

func newStatLogger(start time.Time) *statLogger { return &statLogger{last: start} }

// StatLine is one periodic log line's figures.
type StatLine struct {
	PromptTokensPerSec     float64
	GenerationTokensPerSec float64
	Running, Waiting       int
	Preemptions            int     // in this interval
	KVUsagePerc            float64 // 0–100
	PrefixHitRatePerc      float64 // 0–100
}

// String formats the line as vLLM's A15 LoggingStatLogger does.
func (s StatLine) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Engine 000: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, Waiting: %d reqs",
		s.PromptTokensPerSec, s.GenerationTokensPerSec, s.Running, s.Waiting)
	if s.Preemptions > 0 {
		fmt.Fprintf(&b, ", Preemptions: %d", s.Preemptions)
	}
	fmt.Fprintf(&b, ", GPU KV cache usage: %.1f%%, Prefix cache hit rate: %.1f%%", s.KVUsagePerc, s.PrefixHitRatePerc)
	return b.String()
}

// next computes the line at now from st and resets the interval. quiet is
// true when this interval and the previous one had no throughput at all
// (vLLM then logs at DEBUG, i.e. not at all by default).
func (l *statLogger) next(now time.Time, st Stats) (line StatLine, quiet bool) {
	dt := now.Sub(l.last).Seconds()
	if dt <= 0 {
		dt = 1
	}
	line = StatLine{
		PromptTokensPerSec:     float64(st.PromptTokens-l.prompt) / dt,
		GenerationTokensPerSec: float64(st.GenerationTokens-l.gen) / dt,
		Running:                st.Running,
		Waiting:                st.Waiting,
		Preemptions:            st.Preemptions - l.preemptions,
		KVUsagePerc:            st.KVUsage * 100,
		PrefixHitRatePerc:      st.PrefixHitRate() * 100,
	}
	idle := line.PromptTokensPerSec == 0 && line.GenerationTokensPerSec == 0
	quiet = idle && l.prevIdle
	l.prevIdle = idle
	l.last, l.prompt, l.gen, l.preemptions = now, st.PromptTokens, st.GenerationTokens, st.Preemptions
	return line, quiet
}
