package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/servebench/servebench/internal/inputfile"
)

// TraceSession is one session of a sessions trace: its id as the file
// names it and its turns in order, each a TraceRecord whose At is the
// turn's offset from the trace's first timestamp (before the speed-up),
// whose input length counts the whole prompt the turn sent (its history
// included) and whose hash ids name its prompt's blocks, so that the
// history a turn shares with the session's earlier turns (and the prefix
// it shares with other sessions) is the same text.
type TraceSession struct {
	ID    string
	Turns []TraceRecord
}

// Start is the session's first turn's offset.
func (s *TraceSession) Start() time.Duration { return s.Turns[0].At }

// The sessions trace format: one JSON object per line, a turn of a
// session,
//
//	{"session_id": "a17", "timestamp": 1520.5, "input_length": 3100, "output_length": 240, "hash_ids": [7, 8, 9, 41, 42, 43, 44]}
//
// session_id names the session (a string or an integer); timestamp is
// when the turn was sent, in milliseconds from any origin, never going
// back from line to line; input_length is the turn's whole prompt in
// tokens, its history included; output_length its reply's; hash_ids
// (optional) name the prompt's blocks of TraceBlockTokens tokens, as in
// Mooncake's traces: where two turns' ids agree, their prompts share that
// text, so a turn that carries its session's history starts with the
// earlier turn's blocks. A session's turns are its lines in order; lines
// of different sessions may interleave.

// parseSessionTrace reads a sessions trace. Problems are *FieldErrors
// naming the file and line, at most maxErrors of them; the reading stops
// with ctx's cause when ctx ends.
func parseSessionTrace(ctx context.Context, name string, r io.Reader) ([]TraceSession, error) {
	l := newLines(ctx, name, r, lineCap{max: maxTraceLine, what: "sessions trace line (one turn)"}, nil)
	var out []TraceSession
	index := map[string]int{}
	var first, last float64
	for b, ok := l.next(); ok; b, ok = l.next() {
		n := len(l.errs)
		id, rec := parseSessionLine(l, b, len(index) > 0, last)
		if len(l.errs) > n {
			continue
		}
		if len(index) == 0 {
			first = rec.ts
		}
		last = rec.ts
		rec.r.At = time.Duration(math.Round((rec.ts - first) * float64(time.Millisecond)))
		i, ok := index[id]
		if !ok {
			i = len(out)
			index[id] = i
			out = append(out, TraceSession{ID: id})
		}
		out[i].Turns = append(out[i].Turns, rec.r)
	}
	if err := l.err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, &FieldError{File: name, Msg: "no session in this trace"}
	}
	return out, nil
}

// sessionLine is one parsed line: its turn and its timestamp.
type sessionLine struct {
	r  TraceRecord
	ts float64
}

// parseSessionLine parses one line of a sessions trace, adding its
// problems to l; seen and last are whether a line came before and its
// timestamp.
func parseSessionLine(l *lines, b []byte, seen bool, last float64) (string, sessionLine) {
	var rec struct {
		SessionID json.RawMessage `json:"session_id"`
		traceLine
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		l.fail("", "want a JSON object {\"session_id\": ..., \"timestamp\": ms, \"input_length\": N, \"output_length\": N, \"hash_ids\": [...]}: %s", plainJSONDecode(err))
		return "", sessionLine{}
	}
	id, ok := sessionID(rec.SessionID)
	if !ok {
		l.fail("session_id", "want a string or an integer naming the session")
	}
	n := len(l.errs)
	ids := rec.check(l, seen, last)
	if len(l.errs) > n || !ok {
		return "", sessionLine{}
	}
	return id, sessionLine{ts: *rec.Timestamp, r: TraceRecord{InputTokens: *rec.InputLength, OutputTokens: *rec.OutputLength, HashIDs: ids}}
}

// sessionID reads a session_id: a non-empty string, or an integer.
func sessionID(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, s != ""
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		if _, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return string(n), true
		}
	}
	return "", false
}

// readSessionTrace reads a sessions trace file, a regular file within
// the stage's cap.
func readSessionTrace(ctx context.Context, path string, l inputfile.Limit) ([]TraceSession, error) {
	f, err := inputfile.Open(path, l)
	if err != nil {
		return nil, fmt.Errorf("sessions trace: %w", err)
	}
	defer f.Close()
	return parseSessionTrace(ctx, path, f)
}

// sessionTraceLimit is the cap on stage i's sessions trace file.
func sessionTraceLimit(tr *TraceSpec, stage int) inputfile.Limit {
	return inputfile.Limit{What: "sessions trace", MaxBytes: int64(orDefault(tr.MaxFileMiB, DefaultMaxTraceFileMiB)) << 20,
		Raise: fmt.Sprintf("--set load.stages[%d].session.trace.max_file_mib=N", stage)}
}

// SessionTracePath is stage i's sessions trace, resolved against the
// scenario file's directory when relative; "" when the stage replays
// none.
func (sc *Scenario) SessionTracePath(i int) string {
	if i < 0 || i >= len(sc.Load.Stages) {
		return ""
	}
	if s := sc.Load.Stages[i].Session; s != nil && s.Trace != nil {
		return sc.Path(s.Trace.Path)
	}
	return ""
}

// SessionTrace returns the sessions of stage i's sessions trace, or nil.
// The slice is shared: do not modify it.
func (p *Prompts) SessionTrace(stage int) []TraceSession { return p.sessionTraces[stage] }

// sessionTrace checks a sessions-trace stage: its file, its speed-up, and
// that nothing of a drawn program or of a rate is set beside it.
func (v *validator) sessionTrace(sc *Scenario, i int) {
	st := &sc.Load.Stages[i]
	f := fmt.Sprintf("load.stages[%d]", i)
	s := st.Session
	for _, x := range []struct {
		field string
		set   bool
	}{
		{"concurrency", st.Concurrency != 0}, {"rate", st.RatePerSec != 0},
		{"arrival", st.Arrival != ""}, {"burstiness", st.Burstiness != 0},
		{"session.turns", s.Turns != nil}, {"session.user_tokens", s.UserTokens != nil}, {"session.reply_tokens", s.ReplyTokens != nil},
		{"session.system_tokens", s.SystemTokens != 0}, {"session.think_time", s.ThinkTime != 0}, {"session.tools", s.Tools != nil},
		{"session.subagents", s.Subagents != nil}, {"session.compaction", s.Compaction != nil},
	} {
		if x.set {
			v.add(f+"."+x.field, "does not apply to a sessions trace: its sessions, turns and lengths come from the trace")
		}
	}
	if st.MaxConcurrency < 1 || st.MaxConcurrency > maxConcurrency {
		v.add(f+".max_concurrency", "want 1 to %d sessions in flight, got %d", maxConcurrency, st.MaxConcurrency)
	}
	switch fi, err := os.Stat(sc.SessionTracePath(i)); {
	case s.Trace.Path == "":
		v.add(f+".session.trace.path", "is required: the sessions trace, one {\"session_id\": ..., \"timestamp\": ms, \"input_length\": N, \"output_length\": N, \"hash_ids\": [...]} per line")
	case err != nil:
		v.add(f+".session.trace.path", "cannot read %q: %s", sc.SessionTracePath(i), errorOr(err, ""))
	case !fi.Mode().IsRegular():
		v.add(f+".session.trace.path", "%q %s", s.Trace.Path, (&inputfile.NotRegularError{What: "sessions trace", Mode: fi.Mode()}).Reason())
	}
	if !(s.Trace.Speedup > 0 && s.Trace.Speedup <= maxSpeedup) {
		v.add(f+".session.trace.speedup", "want a factor above 0 and up to %.0f (2 replays twice as fast), got %g", maxSpeedup, s.Trace.Speedup)
	}
}
