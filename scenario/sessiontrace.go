package scenario

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"time"
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
// naming the file and line.
func parseSessionTrace(name string, r io.Reader) ([]TraceSession, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxDatasetLine)
	var out []TraceSession
	index := map[string]int{}
	var errs []error
	var first, last float64
	seen := false
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		id, rec, lineErrs := parseSessionLine(b, seen, last)
		for _, e := range lineErrs {
			e.File, e.Line = name, line
			errs = append(errs, e)
		}
		if len(errs) >= 20 {
			errs = append(errs, &FieldError{File: name, Line: line, Msg: "too many errors"})
			break
		}
		if len(lineErrs) > 0 {
			continue
		}
		if !seen {
			first, seen = rec.ts, true
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
	if err := sc.Err(); err != nil {
		errs = append(errs, &FieldError{File: name, Msg: fmt.Sprintf("read: %v", err)})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
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

// parseSessionLine parses one line of a sessions trace; seen and last are
// whether a line came before and its timestamp. The errors carry the
// field only.
func parseSessionLine(b []byte, seen bool, last float64) (string, sessionLine, []*FieldError) {
	var errs []*FieldError
	fail := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	var rec struct {
		SessionID    json.RawMessage `json:"session_id"`
		Timestamp    *float64        `json:"timestamp"`
		InputLength  *int            `json:"input_length"`
		OutputLength *int            `json:"output_length"`
		HashIDs      []int64         `json:"hash_ids"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		fail("", "want a JSON object {\"session_id\": ..., \"timestamp\": ms, \"input_length\": N, \"output_length\": N, \"hash_ids\": [...]}: %s", plainJSONDecode(err))
		return "", sessionLine{}, errs
	}
	id, ok := sessionID(rec.SessionID)
	if !ok {
		fail("session_id", "want a string or an integer naming the session")
	}
	switch {
	case rec.Timestamp == nil:
		fail("timestamp", "is missing")
	case !(*rec.Timestamp >= 0 && *rec.Timestamp < 1e15):
		fail("timestamp", "want milliseconds ≥ 0, got %g", *rec.Timestamp)
	case seen && *rec.Timestamp < last:
		fail("timestamp", "%g goes back in time (the line before is at %g): a trace is in the order turns were sent", *rec.Timestamp, last)
	}
	for _, l := range []struct {
		field string
		v     *int
	}{{"input_length", rec.InputLength}, {"output_length", rec.OutputLength}} {
		switch {
		case l.v == nil:
			fail(l.field, "is missing")
		case *l.v < 1 || *l.v > maxTokens:
			fail(l.field, "want 1 to %d tokens, got %d", maxTokens, *l.v)
		}
	}
	ids := make([]uint64, len(rec.HashIDs))
	for i, h := range rec.HashIDs {
		if h < 0 {
			fail(fmt.Sprintf("hash_ids[%d]", i), "want an id ≥ 0, got %d", h)
			break
		}
		ids[i] = uint64(h)
	}
	if rec.InputLength != nil && *rec.InputLength >= 1 {
		if need := (*rec.InputLength + TraceBlockTokens - 1) / TraceBlockTokens; len(ids) > need {
			fail("hash_ids", "%d blocks of %d tokens for an input of %d tokens, which fills %d", len(ids), TraceBlockTokens, *rec.InputLength, need)
		}
	}
	if len(errs) > 0 {
		return "", sessionLine{}, errs
	}
	return id, sessionLine{ts: *rec.Timestamp, r: TraceRecord{InputTokens: *rec.InputLength, OutputTokens: *rec.OutputLength, HashIDs: ids}}, nil
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

// readSessionTrace reads a sessions trace file.
func readSessionTrace(path string) ([]TraceSession, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sessions trace: %w", err)
	}
	defer f.Close()
	return parseSessionTrace(path, f)
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
	case fi.IsDir():
		v.add(f+".session.trace.path", "%q is a directory", s.Trace.Path)
	}
	if !(s.Trace.Speedup > 0 && s.Trace.Speedup <= maxSpeedup) {
		v.add(f+".session.trace.speedup", "want a factor above 0 and up to %.0f (2 replays twice as fast), got %g", maxSpeedup, s.Trace.Speedup)
	}
}
