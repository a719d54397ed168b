package vllmlog

import (
	"regexp"
	"strings"
)

// tbState is one process's traceback being read.
type tbState struct {
	open   bool
	frames int
}

// Parts of a Python traceback.
const (
	tbNone = iota
	tbHeader
	tbFrame
	tbCaret
	tbException
)

// exceptionRe is the line that ends a traceback: "ValueError: …",
// "torch.OutOfMemoryError: …", "RayTaskError(RuntimeError): …",
// "OutOfMemoryError('CUDA out of memory …')".
var exceptionRe = regexp.MustCompile(`^(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt)(?:\(|:|$)`)

func tbKind(msg string) int {
	switch {
	case strings.Contains(msg, "Traceback (most recent call last)"),
		strings.HasPrefix(msg, "During handling of the above exception"),
		strings.HasPrefix(msg, "The above exception was the direct cause"):
		return tbHeader
	case strings.HasPrefix(msg, `File "`):
		return tbFrame
	case strings.Trim(msg, "^~ ") == "":
		return tbCaret
	case exceptionRe.MatchString(msg):
		return tbException
	}
	return tbNone
}

// traceback folds a Python traceback into one finding, its exception,
// per process (interleaved tracebacks of several processes are kept
// apart). It reports whether the record was part of one. A paste that
// begins inside a traceback starts it at the first frame; the code line
// before that frame, taken for an error, is withdrawn.
func (p *Parser) traceback(r *run, rec *record) bool {
	st := r.tb[rec.proc]
	open := st != nil && st.open
	switch kind := tbKind(rec.msg); kind {
	case tbHeader:
		if i := strings.Index(rec.msg, "Traceback (most recent call last)"); i > 0 {
			pre := *rec // "EngineCore hit an exception: Traceback …"
			pre.msg = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(rec.msg[:i]), ":"))
			p.finding(r, &pre)
		}
		r.tb[rec.proc] = &tbState{open: true}
		return true
	case tbFrame, tbCaret:
		if !open {
			p.retract(r, rec.proc)
			st = &tbState{open: true}
			r.tb[rec.proc] = st
		}
		if kind == tbFrame {
			st.frames++
		}
		return true
	case tbException:
		if !open {
			break
		}
		st.open = false
		if key := p.findingAt(r, rec, "ERROR"); key != "" {
			r.findings[key].Frames = max(r.findings[key].Frames, st.frames)
		}
		return true
	default:
		if open && (rec.level == "" || rec.level == "ERROR" || rec.level == "CRITICAL") {
			return true // a line of code in a frame
		}
		if open {
			st.open = false // the process went on: the traceback was cut
		}
	}
	r.lastFinding[rec.proc] = ""
	return false
}

// retract withdraws the finding the previous record of the process made,
// which a traceback frame now shows to have been a line of its code.
func (p *Parser) retract(r *run, proc string) {
	key := r.lastFinding[proc]
	r.lastFinding[proc] = ""
	f := r.findings[key]
	if f == nil {
		return
	}
	if r.FinalError == f.Message {
		r.FinalError = ""
	}
	if f.Count > 1 {
		f.Count--
		return
	}
	delete(r.findings, key)
	for i, k := range r.findingOrder {
		if k == key {
			r.findingOrder = append(r.findingOrder[:i], r.findingOrder[i+1:]...)
			break
		}
	}
}

// Kinds of error the diagnoses name.
const (
	errOOM          = "out-of-memory"
	errKVTooSmall   = "kv-too-small"
	errEngineFailed = "engine-failed"
)

// errorKinds recognise, in an error's message, what went wrong. One
// message may show several (an engine that died of out-of-memory).
var errorKinds = []struct {
	id string
	re *regexp.Regexp
}{
	{errOOM, regexp.MustCompile(`CUDA out of memory|OutOfMemoryError`)},
	{errKVTooSmall, regexp.MustCompile(`larger than the available KV cache memory|No available memory for the cache blocks|Insufficient memory for KV cache|larger than the maximum number of tokens that can be stored in KV cache|To serve at least one request with the model'?s max seq len`)},
	{errEngineFailed, regexp.MustCompile(`EngineDeadError|Engine core proc .* died unexpectedly|EngineCore encountered a fatal error|EngineCore failed to start|EngineCore hit an exception|Engine core initialization failed|Engine loop is not running`)},
}

// noteError records the kinds of error a message shows and makes it the
// run's final error.
func (p *Parser) noteError(r *run, rec *record) {
	for _, k := range errorKinds {
		if _, seen := r.errs[k.id]; !seen && k.re.MatchString(rec.msg) {
			r.errs[k.id] = p.evidence(rec, cut(rec.msg, 200))
		}
	}
	r.FinalError = cut(rec.msg, maxValue)
	r.prevErr = true
}

// evidence is the current line as evidence.
func (p *Parser) evidence(rec *record, what string) Evidence {
	return Evidence{Line: p.line, Time: rec.stamp, What: what}
}
