package vllmlog

import (
	"strconv"
	"strings"
)

// genMark is the evidence a run's lines give of one engine generation.
type genMark struct {
	n      int    // lines that show it
	strong bool   // a line that names it ("Initializing a V1 LLM engine")
	from   string // the first (or first naming) line's description
}

// markGeneration notes evidence of the V0 or the V1 engine.
func (r *run) markGeneration(gen string, strong bool, from string) {
	m := &r.gen[0]
	if gen == "V1" {
		m = &r.gen[1]
	}
	m.n++
	if m.from == "" || (strong && !m.strong) {
		m.from = from
	}
	m.strong = m.strong || strong
}

// generationSigns are the shapes only one generation prints: its process
// names, its files, its stats line, its errors.
var generationSigns = []struct {
	gen, sub, from string
	inProc         bool
}{
	{"V1", "EngineCore", "an EngineCore process", true},
	{"V1", "Worker_TP", "a Worker_TP process", true},
	{"V1", "ApiServer_", "several API server processes", true},
	{"V0", "VllmWorkerProcess", "a VllmWorkerProcess worker", true},
	{"V0", "AsyncLLMEngine", "an AsyncLLMEngine process", true},
	{"V1", "GPU KV cache size:", "\"GPU KV cache size\"", false},
	{"V1", "vllm/v1/", "files under vllm/v1/ in a traceback", false},
	{"V1", "EngineCore", "an EngineCore message", false},
	{"V0", "vllm/worker/worker.py", "vllm/worker/worker.py in a traceback", false},
	{"V0", "vllm/engine/multiprocessing", "vllm/engine/multiprocessing in a traceback", false},
	{"V0", "MQEngineDeadError", "MQEngineDeadError", false},
	{"V0", "MQLLMEngine", "MQLLMEngine", false},
	{"V0", "# cuda blocks:", "\"# cuda blocks\"", false},
}

// noteGeneration looks for the shapes of one generation in a record.
func (r *run) noteGeneration(rec *record) {
	for _, s := range generationSigns {
		in := rec.msg
		if s.inProc {
			in = rec.proc
		}
		if strings.Contains(in, s.sub) {
			r.markGeneration(s.gen, false, s.from)
			return
		}
	}
	if strings.Contains(rec.msg, "throughput:") {
		switch {
		case strings.Contains(rec.msg, "Swapped:") || strings.Contains(rec.msg, "Pending:"):
			r.markGeneration("V0", false, "stats lines with Swapped and Pending counts")
		case strings.Contains(rec.msg, "Waiting:") || strings.Contains(rec.msg, "Engine 0"):
			r.markGeneration("V1", false, "\"Engine NNN:\" stats lines")
		}
	}
}

// generation decides the run's engine: a line that names it wins; else
// the version (V0 only before 0.8, V1 only from 0.11); else the shapes
// seen most. It is "" when the log shows neither.
func (r *run) generation() (gen, from string) {
	v0, v1 := r.gen[0], r.gen[1]
	switch {
	case v1.strong && !v0.strong:
		return "V1", v1.from
	case v0.strong && !v1.strong:
		return "V0", v0.from
	}
	if v := r.Config.Version; v != "" {
		switch {
		case versionBefore(v, 0, 8) && !v1.strong:
			return "V0", "vLLM " + v + " (only the V0 engine before 0.8)"
		case !versionBefore(v, 0, 11):
			return "V1", "vLLM " + v + " (only the V1 engine from 0.11)"
		}
	}
	switch {
	case v1.n > v0.n:
		return "V1", v1.from
	case v0.n > v1.n:
		return "V0", v0.from
	}
	return "", ""
}

// versionBefore reports whether the version string v (e.g. "0.6.4.post1",
// "0.10.2.dev378+g…") is before major.minor; an unreadable one is not.
func versionBefore(v string, major, minor int) bool {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(c rune) bool { return c < '0' || c > '9' }))
	if err1 != nil || err2 != nil {
		return false
	}
	return ma < major || (ma == major && mi < minor)
}
