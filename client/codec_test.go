package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// randomResult fills every field of a Result, so the round trip covers them all.
func randomResult(rng *rand.Rand) Result {
	d := func() time.Duration { return time.Duration(rng.Int64N(int64(time.Hour))) + 1 }
	n := rng.IntN(5)
	r := Result{
		Kind: KindRequest, Seq: rng.Uint64(), Stage: rng.IntN(4), Warmup: rng.IntN(2) == 0,
		Outcome: []Outcome{OK, Failed, Canceled, Dropped}[rng.IntN(4)],
		API:     []string{APIChat, APICompletions}[rng.IntN(2)], Stream: rng.IntN(2) == 0,
		Scheduled: d(), Sent: d(), Headers: d(), FirstToken: d(), FirstContent: d(), LastToken: d(), End: d(),
		InputTokens: rng.IntN(1e5) + 1, MaxTokens: rng.IntN(1e4) + 1, PromptTokens: rng.IntN(1e5) + 1,
		OutputTokens: rng.IntN(1e4) + 1, ReasoningTokens: rng.IntN(100) + 1, CachedTokens: rng.IntN(100) + 1,
		Estimated: rng.IntN(2) == 0, FinishReason: "length", Status: 200 + rng.IntN(400),
		ErrorClass: ErrHTTP5xx, Error: "boom \"quoted\" <html> é",
	}
	for range n {
		r.ChunkTimes = append(r.ChunkTimes, d())
		r.ChunkTokens = append(r.ChunkTokens, int32(rng.IntN(4)+1))
	}
	return r
}

func TestCodecRoundTrip(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"results.jsonl", "results.jsonl.gz"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), name)
			w, err := Create(path)
			if err != nil {
				t.Fatal(err)
			}
			h := Header{Kind: KindHeader, Schema: Schema, Tool: "servebench", Version: "test",
				Started: time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC), Target: "http://127.0.0.1:1",
				Model: "m", Scenario: json.RawMessage(`{"name":"x"}`)}
			if err := w.Write(h); err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(3, 4))
			var want []Result
			for range 200 {
				r := randomResult(rng)
				want = append(want, r)
				if err := w.Write(r); err != nil {
					t.Fatal(err)
				}
			}
			other := map[string]any{"kind": "scrape", "at_ns": 5}
			if err := w.Write(other); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var got []Result
			var gotHeader *Header
			var others int
			for r.Scan() {
				switch r.Kind() {
				case KindHeader:
					gotHeader = r.Header()
				case KindRequest:
					got = append(got, *r.Result())
				default:
					others++
				}
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*gotHeader, h) {
				t.Errorf("header = %+v, want %+v", *gotHeader, h)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("results differ after the round trip")
			}
			if others != 1 {
				t.Errorf("other records = %d, want 1", others)
			}
		})
	}
}

func TestReaderTruncatedLastLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := range 3 {
		if err := w.Write(Result{Kind: KindRequest, Seq: uint64(i), Outcome: OK}); err != nil {
			t.Fatal(err)
		}
	}
	data := buf.String()
	data = data[:len(data)-10] // cut the last record
	r := NewReader(strings.NewReader(data), "cut.jsonl")
	n := 0
	for r.Scan() {
		n++
	}
	if r.Err() != nil {
		t.Fatalf("Err = %v, want nil", r.Err())
	}
	if n != 2 || len(r.Warnings()) != 1 {
		t.Fatalf("records = %d, warnings = %v; want 2 records and one warning", n, r.Warnings())
	}
	if !strings.Contains(r.Warnings()[0].Error(), "cut.jsonl:3:") {
		t.Errorf("warning %q does not name the line", r.Warnings()[0])
	}
}

func TestReaderBadLineInTheMiddle(t *testing.T) {
	t.Parallel()
	in := `{"kind":"request","seq":1}` + "\n" + `{"kind":"request","seq":` + "\n" + `{"kind":"request","seq":3}` + "\n"
	r := NewReader(strings.NewReader(in), "bad.jsonl")
	for r.Scan() {
	}
	var se *SyntaxError
	if !errors.As(r.Err(), &se) || se.Line != 2 || se.File != "bad.jsonl" {
		t.Fatalf("Err = %v, want a SyntaxError at bad.jsonl:2", r.Err())
	}
}

func TestReaderRecordWithoutKind(t *testing.T) {
	t.Parallel()
	r := NewReader(strings.NewReader("{\"seq\":1}\n{\"kind\":\"request\"}\n"), "k.jsonl")
	for r.Scan() {
	}
	if r.Err() == nil || !strings.Contains(r.Err().Error(), `no "kind"`) {
		t.Fatalf("Err = %v", r.Err())
	}
}

func TestOpenMissing(t *testing.T) {
	t.Parallel()
	_, err := Open(filepath.Join(t.TempDir(), "nope.jsonl"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open = %v, want ErrNotExist", err)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte(`{"kind":"header","schema":1}` + "\n" + `{"kind":"request","seq":1,"chunk_ns":[1,2]}` + "\n"))
	f.Add([]byte(`{"kind":"scrape"}` + "\n" + `{"kind":"request"`))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), "fuzz")
		for r.Scan() {
			switch r.Kind() {
			case KindHeader:
				if r.Header() == nil {
					t.Fatal("header record without Header")
				}
			case KindRequest:
				if r.Result() == nil {
					t.Fatal("request record without Result")
				}
			}
		}
	})
}
