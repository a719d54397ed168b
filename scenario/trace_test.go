package scenario

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/inputfile"
)

const traceStage = "load: {stages: [{name: replay, trace: {path: trace.jsonl, speedup: 2}}]}\n"

// TestTracePrompts reads testdata/trace.jsonl and checks the prompts a
// replay sends: exactly input_length tokens under the tokenizer; the same
// text for the same hash id at the same block, so prompts that share
// their leading ids share that many blocks of text and then differ; and
// the output length the trace's.
func TestTracePrompts(t *testing.T) {
	t.Parallel()
	p := mustPrompts(t, "name: t\n"+traceStage)
	recs := p.Trace(0)
	if len(recs) != 24 || recs[0].At != 0 || recs[1].At != 5*time.Millisecond || recs[0].InputTokens != 1203 {
		t.Fatalf("records %+v", recs[:2])
	}
	tok := p.Tokenizer()
	texts := make([]string, len(recs))
	for i := range recs {
		pr := p.TraceAt(&recs[i], uint64(i))
		if n := tok.Count(pr.Text); n != recs[i].InputTokens || pr.InputTokens != n || pr.OutputTokens != recs[i].OutputTokens {
			t.Fatalf("arrival %d: %d tokens (prompt says %d, output %d): want %d and %d", i, n, pr.InputTokens, pr.OutputTokens, recs[i].InputTokens, recs[i].OutputTokens)
		}
		texts[i] = pr.Text
	}
	// words returns the first n words of s.
	words := func(s string, n int) string {
		f := strings.Fields(s)
		return strings.Join(f[:min(n, len(f))], " ")
	}
	for i := range recs {
		for j := i + 1; j < len(recs); j++ {
			a, b := recs[i].HashIDs, recs[j].HashIDs
			shared := 0
			for shared < len(a) && shared < len(b) && a[shared] == b[shared] {
				shared++
			}
			n := shared * TraceBlockTokens
			if shared > 0 && min(recs[i].InputTokens, recs[j].InputTokens) >= n && words(texts[i], n) != words(texts[j], n) {
				t.Errorf("arrivals %d and %d share %d hash ids but not their first %d tokens", i, j, shared, n)
			}
			// The next block differs (ids differ, or one's own tokens).
			m := n + TraceBlockTokens/2
			if min(recs[i].InputTokens, recs[j].InputTokens) >= m && words(texts[i], m) == words(texts[j], m) {
				t.Errorf("arrivals %d and %d share %d hash ids and %d tokens", i, j, shared, m)
			}
		}
	}
	// Another request of the same record shares the named blocks only.
	r := &recs[1] // one named block, then 143 tokens of its own
	x, y := p.TraceAt(r, 100).Text, p.TraceAt(r, 101).Text
	if words(x, 512) != words(y, 512) || words(x, 600) == words(y, 600) {
		t.Errorf("two requests of one record: want the named block shared and the rest their own")
	}
}

func TestTraceSchedule(t *testing.T) {
	t.Parallel()
	recs := []TraceRecord{{At: 0}, {At: 100 * time.Millisecond}, {At: 101 * time.Millisecond}, {At: 3 * time.Second}}
	for _, tc := range []struct {
		name     string
		st       Stage
		elapsed  time.Duration
		sent     uint64
		wantWait time.Duration
		wantStop bool
	}{
		{"first at once", Stage{Trace: &TraceSpec{Speedup: 1}}, 0, 0, 0, false},
		{"second waits", Stage{Trace: &TraceSpec{Speedup: 1}}, 40 * time.Millisecond, 1, 60 * time.Millisecond, false},
		{"speed-up halves the wait", Stage{Trace: &TraceSpec{Speedup: 2}}, 0, 2, 50500 * time.Microsecond, false},
		{"late is due", Stage{Trace: &TraceSpec{Speedup: 1}}, time.Second, 2, 0, false},
		{"end of trace", Stage{Trace: &TraceSpec{Speedup: 1}}, 0, 4, 0, true},
		{"request bound", Stage{Trace: &TraceSpec{Speedup: 1}, Requests: 2}, 0, 2, 0, true},
		{"duration bound", Stage{Trace: &TraceSpec{Speedup: 1}, Duration: Duration(time.Second)}, 0, 3, 0, true},
		{"duration bound after speed-up", Stage{Trace: &TraceSpec{Speedup: 4}, Duration: Duration(time.Second)}, 0, 3, 750 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := NewTraceSchedule(&tc.st, recs)
			wait, stop := s.Next(tc.elapsed, tc.sent)
			if wait != tc.wantWait || stop != tc.wantStop {
				t.Errorf("Next(%v, %d) = %v, %v; want %v, %v", tc.elapsed, tc.sent, wait, stop, tc.wantWait, tc.wantStop)
			}
		})
	}
}

func TestTraceErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, data, want string }{
		{"not json", "{", `d:1: want a JSON object {"timestamp": ms, "input_length": N, "output_length": N, "hash_ids": [...]}`},
		{"missing", `{"input_length": 5, "output_length": 1}`, "d:1: timestamp: is missing"},
		{"negative", `{"timestamp": -1, "input_length": 5, "output_length": 1}`, "d:1: timestamp: want milliseconds ≥ 0, got -1"},
		{"back in time", "{\"timestamp\": 10, \"input_length\": 5, \"output_length\": 1}\n\n{\"timestamp\": 9, \"input_length\": 5, \"output_length\": 1}",
			"d:3: timestamp: 9 goes back in time (the line before is at 10)"},
		{"no input", `{"timestamp": 0, "output_length": 1}`, "d:1: input_length: is missing"},
		{"zero output", `{"timestamp": 0, "input_length": 5, "output_length": 0}`, "d:1: output_length: want 1 to 2097152 tokens, got 0"},
		{"string", `{"timestamp": 0, "input_length": "5", "output_length": 1}`, "d:1: want a JSON object {\"timestamp\": ms, \"input_length\": N, \"output_length\": N, \"hash_ids\": [...]}: input_length: want an integer, got a string"},
		{"negative id", `{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [3, -2]}`, "d:1: hash_ids[1]: want an id ≥ 0, got -2"},
		{"too many ids", `{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, 2, 3]}`,
			"d:1: hash_ids: 3 blocks of 512 tokens for an input of 600 tokens, which fills 2: each hash id names 512 tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseTrace(t.Context(), "d", strings.NewReader(tc.data))
			var fe *FieldError
			if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a *FieldError containing %q", err, tc.want)
			}
			for _, e := range unwrapAll(err) {
				if g := goTypeIn(e); g != "" {
					t.Errorf("%q names a Go type (%s)", e, g)
				}
			}
		})
	}
	if _, err := readTrace(t.Context(), "testdata/invalid/empty.yaml", inputfile.Limit{What: "trace"}); err == nil || !strings.Contains(err.Error(), "no arrival in this trace") {
		t.Errorf("empty trace: err = %v", err)
	}
}

// FuzzTrace feeds arbitrary bytes to the trace parser: it must not panic,
// and what it keeps must be replayable: offsets from 0 that never go back,
// lengths in range, no more hash ids than the input's blocks.
func FuzzTrace(f *testing.F) {
	f.Add([]byte(`{"timestamp": 0, "input_length": 600, "output_length": 3, "hash_ids": [1, 2]}`))
	f.Add([]byte("{\"timestamp\": 27482, \"input_length\": 6955, \"output_length\": 52, \"hash_ids\": [46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59]}\n{\"timestamp\": 27.5e3, \"input_length\": 1, \"output_length\": 1}\n"))
	f.Add([]byte("\n\n{\"timestamp\": 5}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := parseTrace(t.Context(), "fuzz", bytes.NewReader(data))
		if err != nil {
			return
		}
		var last time.Duration
		for i, r := range recs {
			if r.At < last || (i == 0 && r.At != 0) {
				t.Fatalf("record %d at %v after %v", i, r.At, last)
			}
			last = r.At
			if r.InputTokens < 1 || r.OutputTokens < 1 || len(r.HashIDs) > (r.InputTokens+TraceBlockTokens-1)/TraceBlockTokens {
				t.Fatalf("record %d = %+v", i, r)
			}
		}
	})
}
