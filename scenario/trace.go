package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/inputfile"
	"github.com/servebench/servebench/results"
)

// TraceSpec makes a stage replay a trace file (Stage.Trace): its arrivals
// at the file's timestamps, each with the file's input and output lengths.
type TraceSpec struct {
	// Path is the trace file, relative to the scenario file's directory.
	Path string `yaml:"path" json:"path"`
	// Speedup divides the trace's time offsets: 2 replays it twice as
	// fast (default 1).
	Speedup float64 `yaml:"speedup" json:"speedup"`
	// MaxFileMiB refuses a larger trace file, in MiB (0:
	// DefaultMaxTraceFileMiB). A line (one arrival) is at most
	// maxTraceLine bytes.
	MaxFileMiB int `yaml:"max_file_mib" json:"max_file_mib,omitempty"`
}

// TraceBlockTokens is the size of a trace's prefix blocks: each hash id
// names 512 tokens, as in Mooncake's traces.
const TraceBlockTokens = 512

// maxSpeedup bounds trace.speedup (a typo, not a need).
const maxSpeedup = 1e6

// TraceRecord is one arrival of a trace, a line of Mooncake's JSONL
// format: {"timestamp": ms, "input_length": N, "output_length": N,
// "hash_ids": [...]}.
type TraceRecord struct {
	// At is the arrival's offset from the trace's first timestamp, before
	// the speed-up.
	At           time.Duration
	InputTokens  int
	OutputTokens int
	// HashIDs name the prompt's blocks of TraceBlockTokens tokens, in
	// order: two prompts whose first k hash ids agree share their first k
	// blocks of text, so a server's prefix cache sees the reuse the trace
	// recorded. Tokens beyond the named blocks are the request's own.
	HashIDs []uint64
}

// maxTraceLine bounds a trace line: one arrival, a few hundred bytes
// (2,097,152 tokens name 4,096 hash ids), so no setting raises it.
const maxTraceLine = 1 << 20

// traceLimit is the cap on trace file path of stage spec tr.
func traceLimit(tr *TraceSpec, stage int) inputfile.Limit {
	return inputfile.Limit{What: "trace", MaxBytes: int64(orDefault(tr.MaxFileMiB, DefaultMaxTraceFileMiB)) << 20,
		Raise: fmt.Sprintf("--set load.stages[%d].trace.max_file_mib=N", stage)}
}

// readTrace reads a trace file, a regular file within l. Problems in it
// are *FieldErrors naming the file and line, at most maxErrors of them;
// the reading stops with ctx's cause when ctx ends.
func readTrace(ctx context.Context, path string, l inputfile.Limit) ([]TraceRecord, error) {
	f, err := inputfile.Open(path, l)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	recs, err := parseTrace(ctx, path, f)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, &FieldError{File: path, Msg: "no arrival in this trace"}
	}
	return recs, nil
}

// traceLine is one line of a trace as written.
type traceLine struct {
	Timestamp    *float64 `json:"timestamp"`
	InputLength  *int     `json:"input_length"`
	OutputLength *int     `json:"output_length"`
	HashIDs      []int64  `json:"hash_ids"`
}

// parseTrace reads one {"timestamp": ms, "input_length": N,
// "output_length": N, "hash_ids": [...]} object per line; blank lines are
// skipped. Timestamps are milliseconds (integers or not) that never go
// back; offsets count from the first line's.
func parseTrace(ctx context.Context, name string, r io.Reader) ([]TraceRecord, error) {
	l := newLines(ctx, name, r, lineCap{max: maxTraceLine, what: "trace line (one arrival)"}, nil)
	var recs []TraceRecord
	var first, last float64
	for b, ok := l.next(); ok; b, ok = l.next() {
		var rec traceLine
		if err := json.Unmarshal(b, &rec); err != nil {
			l.fail("", "want a JSON object {\"timestamp\": ms, \"input_length\": N, \"output_length\": N, \"hash_ids\": [...]}: %s", plainJSONDecode(err))
			continue
		}
		n := len(l.errs)
		ids := rec.check(l, len(recs) > 0, last)
		if len(l.errs) > n {
			continue
		}
		if len(recs) == 0 {
			first = *rec.Timestamp
		}
		last = *rec.Timestamp
		recs = append(recs, TraceRecord{
			At:          time.Duration(math.Round((last - first) * float64(time.Millisecond))),
			InputTokens: *rec.InputLength, OutputTokens: *rec.OutputLength, HashIDs: ids,
		})
	}
	if err := l.err(); err != nil {
		return nil, err
	}
	return recs, nil
}

// check adds the line's problems to l (after is whether a line came
// before, at last) and returns its hash ids.
func (rec *traceLine) check(l *lines, after bool, last float64) []uint64 {
	switch {
	case rec.Timestamp == nil:
		l.fail("timestamp", "is missing")
	case !(*rec.Timestamp >= 0 && *rec.Timestamp < 1e15):
		l.fail("timestamp", "want milliseconds ≥ 0, got %g", *rec.Timestamp)
	case after && *rec.Timestamp < last:
		l.fail("timestamp", "%g goes back in time (the line before is at %g): a trace is in arrival order", *rec.Timestamp, last)
	}
	for _, x := range []struct {
		field string
		v     *int
	}{{"input_length", rec.InputLength}, {"output_length", rec.OutputLength}} {
		switch {
		case x.v == nil:
			l.fail(x.field, "is missing")
		case *x.v < 1 || *x.v > maxTokens:
			l.fail(x.field, "want 1 to %d tokens, got %d", maxTokens, *x.v)
		}
	}
	ids := make([]uint64, len(rec.HashIDs))
	for i, h := range rec.HashIDs {
		if h < 0 {
			l.fail(fmt.Sprintf("hash_ids[%d]", i), "want an id ≥ 0, got %d", h)
			break
		}
		ids[i] = uint64(h)
	}
	if rec.InputLength != nil && *rec.InputLength >= 1 {
		if need := (*rec.InputLength + TraceBlockTokens - 1) / TraceBlockTokens; len(ids) > need {
			l.fail("hash_ids", "%d blocks of %d tokens for an input of %d tokens, which fills %d: each hash id names %d tokens",
				len(ids), TraceBlockTokens, *rec.InputLength, need, TraceBlockTokens)
		}
	}
	return ids
}

// TracePath is stage i's trace file, resolved against the scenario file's
// directory when relative; "" when the stage replays no trace.
func (sc *Scenario) TracePath(i int) string {
	if i < 0 || i >= len(sc.Load.Stages) || sc.Load.Stages[i].Trace == nil {
		return ""
	}
	return sc.Path(sc.Load.Stages[i].Trace.Path)
}

// traceStage checks a trace stage's settings (Validate); the file's
// content is checked when it is read (CheckDataset, NewPrompts).
func (v *validator) traceStage(sc *Scenario, i int) {
	st := &sc.Load.Stages[i]
	f := fmt.Sprintf("load.stages[%d]", i)
	tr := st.Trace
	for _, x := range []struct {
		field string
		set   bool
	}{
		{"concurrency", st.Concurrency != 0}, {"rate", st.RatePerSec != 0},
		{"arrival", st.Arrival != ""}, {"burstiness", st.Burstiness != 0},
	} {
		if x.set {
			v.add(f+"."+x.field, "does not apply to a trace stage: its arrivals come from the trace")
		}
	}
	if st.MaxConcurrency < 1 || st.MaxConcurrency > maxConcurrency {
		v.add(f+".max_concurrency", "want 1 to %d, got %d", maxConcurrency, st.MaxConcurrency)
	}
	switch fi, err := os.Stat(sc.TracePath(i)); {
	case tr.Path == "":
		v.add(f+".trace.path", "is required: the trace file, one {\"timestamp\": ms, \"input_length\": N, \"output_length\": N, \"hash_ids\": [...]} per line")
	case err != nil:
		v.add(f+".trace.path", "cannot read %q: %s", sc.TracePath(i), errorOr(err, ""))
	case !fi.Mode().IsRegular():
		v.add(f+".trace.path", "%q %s", tr.Path, (&inputfile.NotRegularError{What: "trace", Mode: fi.Mode()}).Reason())
	}
	if tr.MaxFileMiB < 0 || tr.MaxFileMiB > maxFileMiB {
		v.add(f+".trace.max_file_mib", "want 1 to %d MiB (0: the default %d), got %d", maxFileMiB, DefaultMaxTraceFileMiB, tr.MaxFileMiB)
	}
	if !(tr.Speedup > 0 && tr.Speedup <= maxSpeedup) {
		v.add(f+".trace.speedup", "want a factor above 0 and up to %.0f (2 replays twice as fast), got %g", maxSpeedup, tr.Speedup)
	}
	if sc.Prompts.Dataset.Path != "" {
		v.add(f+".trace", "builds its prompts from the trace's lengths and hash ids: it cannot use prompts.dataset")
	}
	if sc.Target.API == results.APIEmbeddings {
		v.add(f+".trace", "replays generation requests: it does not apply to embeddings")
	}
}

// checkTraces reads every trace stage's file and returns its problems.
func (sc *Scenario) checkTraces(ctx context.Context) error {
	var errs []error
	for i := range sc.Load.Stages {
		if p := sc.TracePath(i); p != "" {
			if _, err := readTrace(ctx, p, traceLimit(sc.Load.Stages[i].Trace, i)); err != nil {
				errs = append(errs, err)
			}
		}
		if p := sc.SessionTracePath(i); p != "" {
			if _, err := readSessionTrace(ctx, p, sessionTraceLimit(sc.Load.Stages[i].Session.Trace, i)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// TraceSchedule is the arrival schedule of a trace stage: the trace's
// offsets divided by the speed-up, cut by the stage's request count and
// duration. Like Schedule it is a pure function of its arguments.
type TraceSchedule struct {
	recs     []TraceRecord
	speedup  float64
	requests uint64
	duration time.Duration
}

// NewTraceSchedule returns the schedule of trace stage st (defaults
// applied) over the trace's records (Prompts.Trace).
func NewTraceSchedule(st *Stage, recs []TraceRecord) *TraceSchedule {
	return &TraceSchedule{recs: recs, speedup: st.Trace.Speedup, requests: uint64(max(st.Requests, 0)), duration: st.Duration.D()}
}

// Offset returns the intended time of arrival i from the stage's start:
// its offset in the trace divided by the speed-up. i must be below the
// trace's length.
func (s *TraceSchedule) Offset(i uint64) time.Duration {
	return time.Duration(math.Round(float64(s.recs[i].At) / s.speedup))
}

// Next returns how long to wait, at elapsed time since the stage's start,
// before sending arrival sent; stop reports the end of the trace or of the
// stage's bounds.
func (s *TraceSchedule) Next(elapsed time.Duration, sent uint64) (wait time.Duration, stop bool) {
	if sent >= uint64(len(s.recs)) || (s.requests > 0 && sent >= s.requests) {
		return 0, true
	}
	at := s.Offset(sent)
	if s.duration > 0 && at >= s.duration {
		return 0, true
	}
	return max(at-elapsed, 0), false
}

// Trace returns the records of stage i's trace, or nil when the stage
// replays none. The slice is shared: do not modify it.
func (p *Prompts) Trace(stage int) []TraceRecord { return p.traces[stage] }

// TraceAt returns the prompt of a trace arrival sent as the request of
// sequence number seq. Its text has exactly rec.InputTokens tokens under
// the scenario's tokenizer: block k is the text of hash id HashIDs[k]
// (the same text wherever that id appears; the last block cut to what
// input_length leaves), and tokens beyond the named blocks are drawn for
// seq alone. Its output length is the trace's.
func (p *Prompts) TraceAt(rec *TraceRecord, seq uint64) Prompt {
	var b strings.Builder
	left := rec.InputTokens
	for _, h := range rec.HashIDs {
		n := min(left, TraceBlockTokens)
		p.appendBlock(&b, h, n)
		left -= n
	}
	for k := uint64(0); left > 0; k++ {
		n := min(left, TraceBlockTokens)
		// Ids from 2⁶³ up are the requests' own: a trace's ids are int64s.
		p.appendBlock(&b, 1<<63|mix(seq)<<8|k, n)
		left -= n
	}
	return Prompt{Text: b.String(), InputTokens: rec.InputTokens, OutputTokens: rec.OutputTokens}
}

// appendBlock appends the first n (≤ TraceBlockTokens) words of block id
// h: two runs of TraceBlockTokens/2 corpus words, at positions that are
// bijections of h mod 2¹⁶ and of h's next 16 bits, so distinct ids below
// 2³² have distinct texts.
func (p *Prompts) appendBlock(b *strings.Builder, h uint64, n int) {
	const half = TraceBlockTokens / 2
	lo := (p.stride*(h%p.starts) + p.shift) % p.starts
	hi := (p.stride2*((h/p.starts)%p.starts) + p.shift2) % p.starts
	first := min(n, half)
	b.WriteString(p.corpus[p.offs[lo]:p.offs[lo+uint64(first)]])
	if rest := n - first; rest > 0 {
		b.WriteString(p.corpus[p.offs[hi]:p.offs[hi+uint64(rest)]])
	}
}
