package scenario

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSessionTrace reads a sessions trace whose sessions interleave: each
// session's turns in order, offsets from the first line, ids as strings
// or integers, and the sessions in the order they first appear.
func TestSessionTrace(t *testing.T) {
	t.Parallel()
	const data = `{"session_id": "b", "timestamp": 1000, "input_length": 600, "output_length": 10, "hash_ids": [0, 1]}
{"session_id": 7, "timestamp": 1000.5, "input_length": 520, "output_length": 12, "hash_ids": [0]}

{"session_id": "b", "timestamp": 2500, "input_length": 900, "output_length": 20, "hash_ids": [0, 1]}
{"session_id": 7, "timestamp": 4000, "input_length": 700, "output_length": 5}
`
	ss, err := parseSessionTrace(t.Context(), "s.jsonl", strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 2 || ss[0].ID != "b" || ss[1].ID != "7" || len(ss[0].Turns) != 2 || len(ss[1].Turns) != 2 {
		t.Fatalf("sessions %+v", ss)
	}
	if ss[0].Start() != 0 || ss[1].Start() != 500*time.Microsecond || ss[0].Turns[1].At != 1500*time.Millisecond || ss[1].Turns[1].At != 3*time.Second {
		t.Errorf("offsets: %v %v %v %v", ss[0].Start(), ss[1].Start(), ss[0].Turns[1].At, ss[1].Turns[1].At)
	}
	if r := ss[0].Turns[1]; r.InputTokens != 900 || r.OutputTokens != 20 || len(r.HashIDs) != 2 {
		t.Errorf("turn %+v", r)
	}
}

func TestSessionTraceErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, data, want string }{
		{"not json", "[", `d:1: want a JSON object {"session_id": ..., "timestamp": ms`},
		{"no id", `{"timestamp": 0, "input_length": 5, "output_length": 1}`, "d:1: session_id: want a string or an integer naming the session"},
		{"empty id", `{"session_id": "", "timestamp": 0, "input_length": 5, "output_length": 1}`, "d:1: session_id: want a string or an integer"},
		{"float id", `{"session_id": 1.5, "timestamp": 0, "input_length": 5, "output_length": 1}`, "d:1: session_id: want a string or an integer"},
		{"no timestamp", `{"session_id": 1, "input_length": 5, "output_length": 1}`, "d:1: timestamp: is missing"},
		{"negative", `{"session_id": 1, "timestamp": -1, "input_length": 5, "output_length": 1}`, "d:1: timestamp: want milliseconds ≥ 0, got -1"},
		{"back in time", "{\"session_id\": 1, \"timestamp\": 10, \"input_length\": 5, \"output_length\": 1}\n{\"session_id\": 2, \"timestamp\": 9, \"input_length\": 5, \"output_length\": 1}",
			"d:2: timestamp: 9 goes back in time (the line before is at 10)"},
		{"no input", `{"session_id": 1, "timestamp": 0, "output_length": 1}`, "d:1: input_length: is missing"},
		{"zero output", `{"session_id": 1, "timestamp": 0, "input_length": 5, "output_length": 0}`, "d:1: output_length: want 1 to 2097152 tokens, got 0"},
		{"negative id", `{"session_id": 1, "timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [-2]}`, "d:1: hash_ids[0]: want an id ≥ 0, got -2"},
		{"too many ids", `{"session_id": 1, "timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, 2, 3]}`,
			"d:1: hash_ids: 3 blocks of 512 tokens for an input of 600 tokens, which fills 2"},
		{"empty", "\n\n", "d: no session in this trace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseSessionTrace(t.Context(), "d", strings.NewReader(tc.data))
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
}

// FuzzSessionTrace feeds arbitrary bytes to the sessions-trace parser: it
// must not panic, and what it keeps must be replayable: every session
// with a turn, turns in order and never before the trace's start, lengths
// in range, no more hash ids than the input's blocks.
func FuzzSessionTrace(f *testing.F) {
	f.Add([]byte(`{"session_id": "a", "timestamp": 0, "input_length": 600, "output_length": 3, "hash_ids": [1, 2]}`))
	f.Add([]byte("{\"session_id\": 3, \"timestamp\": 5, \"input_length\": 9, \"output_length\": 1}\n{\"session_id\": \"3\", \"timestamp\": 5e3, \"input_length\": 90, \"output_length\": 1}\n"))
	f.Add([]byte("\n{\"session_id\": null}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ss, err := parseSessionTrace(t.Context(), "fuzz", bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, s := range ss {
			if len(s.Turns) == 0 || s.ID == "" {
				t.Fatalf("session %+v", s)
			}
			var last time.Duration
			for i, r := range s.Turns {
				if r.At < last || r.At < 0 {
					t.Fatalf("session %s turn %d at %v after %v", s.ID, i, r.At, last)
				}
				last = r.At
				if r.InputTokens < 1 || r.OutputTokens < 1 || len(r.HashIDs) > (r.InputTokens+TraceBlockTokens-1)/TraceBlockTokens {
					t.Fatalf("session %s turn %d = %+v", s.ID, i, r)
				}
			}
		}
	})
}
