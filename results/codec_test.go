package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// randomResult fills every field of a Result, so the round trip covers them all.
func randomResult(rng *rand.Rand) Result {
	d := func() time.Duration { return time.Duration(rng.Int64N(int64(time.Hour))) + 1 }
	n := rng.IntN(5)
	r := Result{
		Seq: rng.Uint64(), Stage: rng.IntN(4), Warmup: rng.IntN(2) == 0,
		Outcome: []Outcome{OK, Failed, Canceled, Dropped}[rng.IntN(4)],
		API:     []string{APIChat, APICompletions, APIEmbeddings}[rng.IntN(3)], Stream: rng.IntN(2) == 0,
		Session: rng.Uint64N(1e6) + 1, Turn: rng.IntN(20) + 1, Agent: rng.IntN(8) + 1, SessionEnd: true,
		Scheduled: d(), Sent: d(), Written: d(), Headers: d(), FirstToken: d(), FirstContent: d(), LastToken: d(), End: d(),
		InputTokens: rng.IntN(1e5) + 1, Inputs: rng.IntN(8) + 1, MaxTokens: rng.IntN(1e4) + 1, PromptTokens: rng.IntN(1e5) + 1,
		OutputTokens: rng.IntN(1e4) + 1, ReasoningTokens: rng.IntN(100) + 1, CachedTokens: rng.IntN(100) + 1,
		DraftTokens: rng.IntN(300) + 1, DraftAccepted: rng.IntN(200) + 1,
		PromptTokensDiff: rng.IntN(41) - 20, Retries: rng.IntN(3) + 1, ResentWritten: 1,
		Estimated: rng.IntN(2) == 0, FinishReason: "length", Status: 200 + rng.IntN(400),
		ErrorClass: ErrHTTP5xx, Error: "boom \"quoted\" <html> é",
	}
	for range n {
		r.ChunkTimes = append(r.ChunkTimes, d())
		r.ChunkTokens = append(r.ChunkTokens, int32(rng.IntN(4)+1))
	}
	return r
}

// TestRandomResultFillsEveryField keeps the round trip honest: every field
// of Result, including one added later, must be set by randomResult (in
// some of a few draws), or the round trip would not cover it.
func TestRandomResultFillsEveryField(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	typ := reflect.TypeFor[Result]()
	set := make([]bool, typ.NumField())
	for range 20 {
		v := reflect.ValueOf(randomResult(rng))
		for i := range set {
			set[i] = set[i] || !v.Field(i).IsZero()
		}
	}
	for i, ok := range set {
		if !ok {
			t.Errorf("randomResult never sets Result.%s: the round trip does not cover it", typ.Field(i).Name)
		}
	}
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
			h := Header{Schema: Schema, Tool: "servebench", Version: "test",
				Started: time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC), Target: "http://127.0.0.1:1",
				Model: "m", ServerVersion: "0.11.2", Host: "vm", Scenario: json.RawMessage(`{"name":"x"}`),
				Shard: &Shard{Index: 2, Count: 3, ScenarioHash: "abc", StartAt: time.Date(2026, 11, 22, 3, 1, 0, 0, time.UTC)}}
			if err := w.Write(HeaderRecord(&h)); err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(3, 4))
			var want []Result
			for range 200 {
				r := randomResult(rng)
				want = append(want, r)
				if err := w.Write(ResultRecord(&r)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Write(SampleRecord(&Sample{At: 5})); err != nil {
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
				switch rec := r.Record(); rec.Kind {
				case KindHeader:
					gotHeader = rec.Header
				case KindRequest:
					got = append(got, *rec.Result)
				default:
					others++
				}
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			h.Spec = &Spec{Name: "x"}
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
		if err := w.Write(ResultRecord(&Result{Seq: uint64(i), Outcome: OK})); err != nil {
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
			rec := r.Record()
			switch rec.Kind {
			case KindHeader:
				if rec.Header == nil {
					t.Fatal("header record without Header")
				}
			case KindRequest:
				if rec.Result == nil {
					t.Fatal("request record without Result")
				}
			case KindScrape:
				if rec.Sample == nil {
					t.Fatal("scrape record without Sample")
				}
			case KindWarning:
				if rec.Warning == nil {
					t.Fatal("warning record without Warning")
				}
			case KindEnd:
				if rec.End == nil {
					t.Fatal("end record without End")
				}
			default:
				if rec.Raw == nil {
					t.Fatal("unknown record without Raw")
				}
			}
			// Every record read writes back, kind first.
			if rec.Raw == nil {
				var buf bytes.Buffer
				if err := NewWriter(&buf).Write(rec); err != nil {
					t.Fatalf("write back %s: %v", rec.Kind, err)
				}
				if !bytes.HasPrefix(buf.Bytes(), []byte(`{"kind":"`+string(rec.Kind)+`"`)) {
					t.Fatalf("written back as %q", buf.Bytes())
				}
			}
		}
	})
}

// TestWriterFormat pins the line format: "kind" first, then the record's
// fields, exactly as files written by earlier versions (whose structs
// carried the kind as their first field), so old files and new ones are
// the same bytes.
func TestWriterFormat(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, rec := range []Record{
		ResultRecord(&Result{Seq: 3, Stage: 1, Outcome: Dropped, API: APIChat, Scheduled: 5}),
		WarningRecord(&Warning{At: 7, Source: "scrape", Message: "no /metrics"}),
		SampleRecord(&Sample{}),
	} {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	want := `{"kind":"request","seq":3,"stage":1,"outcome":"dropped","api":"chat","stream":false,"scheduled_ns":5}
{"kind":"warning","at_ns":7,"source":"scrape","message":"no /metrics"}
{"kind":"scrape","index":0,"target":"","start_ns":0,"at_ns":0,"duration_ns":0,"ok":false}
`
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
	if err := w.Write(Record{Kind: KindRequest}); err == nil {
		t.Error("a request record without a Result was written")
	}
}

// TestFilesShift merges two files started 2 s apart: the later file's
// offsets move onto the earlier one's epoch, chunk times (relative to
// Sent) and absent events (zero) stay put.
func TestFilesShift(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	write := func(name string, started time.Time, recs ...Record) string {
		path := filepath.Join(dir, name)
		w, err := Create(path)
		if err != nil {
			t.Fatal(err)
		}
		h := &Header{Schema: Schema, Started: started, Scenario: json.RawMessage(`{"name":"s","load":{"stages":[{"name":"a","concurrency":2}]}}`)}
		for _, rec := range append([]Record{HeaderRecord(h)}, recs...) {
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	late := write("late.jsonl.gz", t0.Add(2*time.Second),
		ResultRecord(&Result{Seq: 1, Outcome: OK, Scheduled: time.Second, Sent: time.Second, End: 3 * time.Second,
			ChunkTimes: []time.Duration{time.Millisecond}}),
		SampleRecord(&Sample{Start: time.Second, At: time.Second}))
	early := write("early.jsonl", t0, ResultRecord(&Result{Seq: 1, Outcome: Dropped, Scheduled: time.Second}))
	f, err := OpenFiles(late, early)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Epoch().Equal(t0) {
		t.Errorf("Epoch = %v, want %v", f.Epoch(), t0)
	}
	if got := f.Headers()[1].Spec.Load.Stages[0]; got.Name != "a" || got.Concurrency != 2 {
		t.Errorf("Spec stage = %+v", got)
	}
	var files []int
	var res []*Result
	var smp *Sample
	for rec, err := range f.All() {
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, rec.File)
		if rec.Result != nil {
			res = append(res, rec.Result)
		}
		if rec.Sample != nil {
			smp = rec.Sample
		}
	}
	if !reflect.DeepEqual(files, []int{0, 0, 0, 1, 1}) {
		t.Errorf("files = %v", files)
	}
	if r := res[0]; r.Sent != 3*time.Second || r.End != 5*time.Second || r.FirstToken != 0 || r.ChunkTimes[0] != time.Millisecond {
		t.Errorf("shifted result = %+v", r)
	}
	if r := res[1]; r.Scheduled != time.Second {
		t.Errorf("the earliest file moved: %+v", r)
	}
	if smp.At != 3*time.Second || smp.Start != 3*time.Second {
		t.Errorf("shifted sample = %+v", smp)
	}
}

// TestReadOldFile reads a results file written before the codec owned the
// kind field (report/testdata/preempt.jsonl.gz).
func TestReadOldFile(t *testing.T) {
	t.Parallel()
	f, err := OpenFiles(filepath.Join("..", "report", "testdata", "preempt.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[Kind]int{}
	compared := 0
	for rec, err := range f.All() {
		if err != nil {
			t.Fatal(err)
		}
		counts[rec.Kind]++
		// No prompt_tokens_diff then: the server's count is taken as the
		// expected one.
		if r := rec.Result; r != nil {
			if want, server, ok := r.PromptCounts(); ok {
				compared++
				if want != server || r.PromptTokensDiff != 0 {
					t.Fatalf("old record: expected %d, server %d, diff %d", want, server, r.PromptTokensDiff)
				}
			}
		}
	}
	if compared == 0 {
		t.Error("no old record has both prompt counts")
	}
	if counts[KindHeader] != 1 || counts[KindRequest] == 0 || counts[KindScrape] == 0 {
		t.Errorf("records by kind = %v", counts)
	}
	if f.Headers()[0].Spec == nil || f.Headers()[0].Spec.Name == "" {
		t.Errorf("header spec = %+v", f.Headers()[0].Spec)
	}
}

// benchResult is a typical streamed request: 256 token chunks, so the
// figures are per record of the size a chat answer makes.
func benchResult() Result {
	r := Result{Seq: 1, Outcome: OK, API: APIChat, Stream: true, Scheduled: time.Millisecond, Sent: time.Millisecond,
		Headers: 20 * time.Millisecond, FirstToken: 21 * time.Millisecond, FirstContent: 21 * time.Millisecond,
		InputTokens: 1024, MaxTokens: 256, PromptTokens: 1024, OutputTokens: 256, FinishReason: "length", Status: 200}
	for i := range 256 {
		r.ChunkTimes = append(r.ChunkTimes, 21*time.Millisecond+time.Duration(i)*11*time.Millisecond+time.Duration(i*i)%977)
	}
	r.LastToken = r.ChunkTimes[255]
	r.End = r.LastToken + time.Millisecond
	return r
}

// BenchmarkWriteResult measures encoding one request record of 256 chunks
// into a results file (buffered, as a run writes it).
func BenchmarkWriteResult(b *testing.B) {
	r := benchResult()
	w := NewWriter(io.Discard)
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Write(ResultRecord(&r)); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkReadResult measures decoding the same record back, from a file
// of 1,000 of them: the figure is per record (ns/record).
func BenchmarkReadResult(b *testing.B) {
	const n = 1000
	r := benchResult()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for range n {
		if err := w.Write(ResultRecord(&r)); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	file := buf.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(file)))
	for b.Loop() {
		rd := NewReader(bytes.NewReader(file), "bench")
		got := 0
		for rd.Scan() {
			got++
		}
		if rd.Err() != nil || got != n {
			b.Fatalf("read %d of %d records: %v", got, n, rd.Err())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
}

// TestIssue22OpenRefusesDevices (issue 22, item 2): a results file that is
// a device is refused at once rather than read without end.
func TestIssue22OpenRefusesDevices(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/dev/zero", "/dev/urandom"} {
		if _, err := os.Stat(path); err != nil {
			t.Skipf("no %s here", path)
		}
		r, err := Open(path)
		if err == nil {
			r.Close()
			t.Fatalf("Open(%s) succeeded", path)
		}
		if want := "is a character device, not a regular file"; !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s) = %v, want %q", path, err, want)
		}
	}
}

// syncCounter is a file that counts its syncs and how much was written
// before each.
type syncCounter struct {
	bytes.Buffer
	syncs []int
}

func (s *syncCounter) Sync() error { s.syncs = append(s.syncs, s.Len()); return nil }

// TestIssue22Sync (issue 22, item 9): results.jsonl was never synced to
// disk. The Writer syncs it, everything written so far included, when a
// request record begins a new stage and on Close.
func TestIssue22Sync(t *testing.T) {
	t.Parallel()
	var f syncCounter
	w := NewWriter(&f)
	if err := w.Write(HeaderRecord(&Header{Schema: Schema})); err != nil {
		t.Fatal(err)
	}
	var at []int // bytes written before each new stage's first record
	for i, stage := range []int{0, 0, 1, 1, 1, 2} {
		if i > 0 && stage != []int{0, 0, 1, 1, 1, 2}[i-1] {
			at = append(at, f.Len())
		}
		if err := w.Write(ResultRecord(&Result{Seq: uint64(i), Stage: stage, Outcome: OK})); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := append(at, f.Len())
	if !slices.Equal(f.syncs, want) {
		t.Errorf("synced after %v bytes, want %v (at each stage's start and at the end)", f.syncs, want)
	}
}
