package results

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Record is one record of a results file: exactly one of Header, Result,
// Sample, Warning and End is set, as Kind says. A Record of an unknown kind
// (written by a newer tool) has none set and its line in Raw.
type Record struct {
	Kind    Kind
	Header  *Header
	Result  *Result
	Sample  *Sample
	Warning *Warning
	End     *End
	// Raw is the line of a record of an unknown kind; nil otherwise.
	Raw []byte

	chunks []byte // a request's chunk arrays, already encoded (Writer.Prepare)
}

// HeaderRecord, ResultRecord, SampleRecord, WarningRecord and EndRecord wrap one
// record for a Writer.
func HeaderRecord(h *Header) Record   { return Record{Kind: KindHeader, Header: h} }
func ResultRecord(r *Result) Record   { return Record{Kind: KindRequest, Result: r} }
func SampleRecord(s *Sample) Record   { return Record{Kind: KindScrape, Sample: s} }
func WarningRecord(w *Warning) Record { return Record{Kind: KindWarning, Warning: w} }
func EndRecord(e *End) Record         { return Record{Kind: KindEnd, End: e} }

// value returns the struct the record carries.
func (r Record) value() (any, error) {
	var v any
	ok := false
	switch r.Kind {
	case KindHeader:
		v, ok = r.Header, r.Header != nil
	case KindRequest:
		v, ok = r.Result, r.Result != nil
	case KindScrape:
		v, ok = r.Sample, r.Sample != nil
	case KindWarning:
		v, ok = r.Warning, r.Warning != nil
	case KindEnd:
		v, ok = r.End, r.End != nil
	default:
		return nil, fmt.Errorf("record kind %q: unknown", r.Kind)
	}
	if !ok {
		return nil, fmt.Errorf("%s record: no value", r.Kind)
	}
	return v, nil
}

// Writer writes records as NDJSON, one line per record whose first key is
// "kind", flushing each record to the underlying file so that an
// interrupted run loses nothing already written, and syncing the file to
// disk (Sync) when a request record begins a new stage and on Close, so
// that a crash of the machine loses no finished stage. A name ending in
// ".gz" is gzip-compressed. Writer is not safe for concurrent use: a run
// has a single writer goroutine that owns it.
type Writer struct {
	buf   *bufio.Writer
	gz    *gzip.Writer
	file  io.Closer
	sync  syncer // the file, when it can be synced
	line  bytes.Buffer
	enc   *json.Encoder
	rest  Result    // a request without its chunk arrays, encoded by enc
	tail  []byte    // its chunk arrays, written by hand (appendChunks)
	tails sync.Pool // of *[]byte: the buffers Prepare encodes chunk arrays in
	n     int
	stage int // the stage of the last request record; -1 before the first
}

// syncer is a file that can be synced to disk (*os.File).
type syncer interface{ Sync() error }

// Create creates (or truncates) the results file at path.
func Create(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create results file: %w", err)
	}
	w := newWriter(f, strings.HasSuffix(path, ".gz"))
	w.file = f
	return w, nil
}

// NewWriter returns a Writer on w, uncompressed. When w has a Sync method
// (a file), the Writer syncs it as Create's does.
func NewWriter(w io.Writer) *Writer { return newWriter(w, false) }

func newWriter(w io.Writer, compress bool) *Writer {
	out := &Writer{stage: -1}
	out.sync, _ = w.(syncer)
	var sink io.Writer = w
	if compress {
		out.gz = gzip.NewWriter(w)
		sink = out.gz
	}
	out.buf = bufio.NewWriterSize(sink, 64<<10)
	out.enc = json.NewEncoder(&out.line)
	out.enc.SetEscapeHTML(false)
	return out
}

// Prepare encodes a request record's chunk arrays (thousands of numbers)
// into rec, so that Write only copies them. It is safe to call from any
// goroutine, and meant for the many that make records while one writes
// them: the numbers are then formatted in parallel, not by the writer.
func (w *Writer) Prepare(rec *Record) {
	r := rec.Result
	if rec.Kind != KindRequest || r == nil || (len(r.ChunkTimes) == 0 && len(r.ChunkTokens) == 0) {
		return
	}
	b, _ := w.tails.Get().(*[]byte)
	if b == nil {
		b = new([]byte)
	}
	*b = appendChunks((*b)[:0], r)
	rec.chunks = *b
}

// Write encodes one record and flushes it to the file.
func (w *Writer) Write(rec Record) error {
	v, err := rec.value()
	if err != nil {
		return fmt.Errorf("write record %d: %w", w.n+1, err)
	}
	if r := rec.Result; r != nil && r.Stage != w.stage {
		if w.stage >= 0 {
			if err := w.Sync(); err != nil {
				return err
			}
		}
		w.stage = r.Stage
	}
	// A request's chunk arrays, thousands of numbers, are written by hand
	// at the end of its object: encoding/json spends about 70 ns on each
	// number by reflection, strconv a tenth of that. Readers take the
	// members in any order.
	var chunks *Result
	if r := rec.Result; rec.Kind == KindRequest && r != nil && (len(r.ChunkTimes) > 0 || len(r.ChunkTokens) > 0) {
		w.rest = *r
		w.rest.ChunkTimes, w.rest.ChunkTokens = nil, nil
		v, chunks = &w.rest, r
	}
	w.line.Reset()
	if err := w.enc.Encode(v); err != nil {
		return fmt.Errorf("write record %d: %w", w.n+1, err)
	}
	// The encoder wrote {…}\n; the kind goes first.
	body := w.line.Bytes()
	var tail []byte
	switch {
	case chunks != nil && rec.chunks != nil:
		body, tail = body[:len(body)-2], rec.chunks
		defer w.tails.Put(&rec.chunks)
	case chunks != nil:
		w.tail = appendChunks(w.tail[:0], chunks)
		body, tail = body[:len(body)-2], w.tail
	}
	w.buf.WriteString(`{"kind":"`)
	w.buf.WriteString(string(rec.Kind))
	w.buf.WriteByte('"')
	if len(body) > 3 { // not "{}\n"
		w.buf.WriteByte(',')
	}
	w.buf.Write(body[1:])
	w.buf.Write(tail)
	w.n++
	if err := w.buf.Flush(); err != nil {
		return fmt.Errorf("write record %d: %w", w.n, err)
	}
	if w.gz != nil {
		if err := w.gz.Flush(); err != nil {
			return fmt.Errorf("write record %d: %w", w.n, err)
		}
	}
	return nil
}

// appendChunks appends r's chunk_ns and chunk_tokens members (each when
// not empty, each after a comma) and the object's closing brace and
// newline to b.
func appendChunks(b []byte, r *Result) []byte {
	if len(r.ChunkTimes) > 0 {
		b = append(b, `,"chunk_ns":[`...)
		for i, d := range r.ChunkTimes {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(d), 10)
		}
		b = append(b, ']')
	}
	if len(r.ChunkTokens) > 0 {
		b = append(b, `,"chunk_tokens":[`...)
		for i, k := range r.ChunkTokens {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(k), 10)
		}
		b = append(b, ']')
	}
	return append(b, "}\n"...)
}

// Records is the number of records written so far.
func (w *Writer) Records() int { return w.n }

// Sync writes what is buffered and syncs the file to disk, when it can be
// synced (a file system that cannot sync is not an error).
func (w *Writer) Sync() error {
	if err := w.buf.Flush(); err != nil {
		return fmt.Errorf("sync results file: %w", err)
	}
	if w.gz != nil {
		if err := w.gz.Flush(); err != nil {
			return fmt.Errorf("sync results file: %w", err)
		}
	}
	return w.syncFile()
}

// syncFile syncs the file, when it can be.
func (w *Writer) syncFile() error {
	if w.sync == nil {
		return nil
	}
	if err := w.sync.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("sync results file: %w", err)
	}
	return nil
}

// Close flushes, syncs and closes the file.
func (w *Writer) Close() error {
	err := w.buf.Flush()
	if w.gz != nil {
		err = errors.Join(err, w.gz.Close())
	}
	if err == nil {
		err = w.syncFile()
	}
	if w.file != nil {
		err = errors.Join(err, w.file.Close())
	}
	if err != nil {
		return fmt.Errorf("close results file: %w", err)
	}
	return nil
}

// SyntaxError is a results-file line that could not be decoded.
type SyntaxError struct {
	File string
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Reader reads one results file record by record, in the style of
// bufio.Scanner. A last line cut short (a run killed mid-write, a full disk) is skipped
// with a warning; a bad line anywhere else is an error.
//
// Every Record holds freshly allocated values the caller may retain, except
// Raw, which is valid only until the next Scan.
type Reader struct {
	name     string
	sc       *bufio.Scanner
	closer   io.Closer
	line     int
	raw      []byte
	rec      Record
	err      error
	warnings []error
	pending  []byte // the next line, read ahead to know whether the current one is the last
	havePend bool
	eof      bool
}

// Open opens a results file, gzip-compressed or not (detected from its
// content, not its name). Only a regular file is read: a device never
// ends, and a pipe could not be read twice (Files reads the headers
// first).
func Open(path string) (*Reader, error) {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("open results file %s: %s", path, notRegular(fi.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open results file: %w", err)
	}
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("open results file %s: %s", path, notRegular(fi.Mode()))
	}
	br := bufio.NewReaderSize(f, 64<<10)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("open results file %s: %w", path, err)
		}
		src = gz
	}
	r := NewReader(src, path)
	r.closer = f
	return r, nil
}

// notRegular says what a file mode that is not a regular file's is.
func notRegular(m fs.FileMode) string {
	what := "not a plain file (" + m.Type().String() + ")"
	switch {
	case m.IsDir():
		what = "a directory with no results file"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a block device"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	}
	return "is " + what + ", not a regular file: a results file is read from a file"
}

// maxLineBytes caps a results file's line: a request record with every
// chunk's arrival time is kilobytes, a header with a large scenario
// megabytes; a longer line is not a results file's.
const maxLineBytes = 256 << 20

// NewReader reads records from src; name is used in errors.
func NewReader(src io.Reader, name string) *Reader {
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 0, 256<<10), maxLineBytes)
	return &Reader{name: name, sc: sc}
}

// Close closes the underlying file, if Open opened it.
func (r *Reader) Close() error {
	if r.closer == nil {
		return nil
	}
	return r.closer.Close()
}

func (r *Reader) next() ([]byte, bool) {
	if r.havePend {
		r.havePend = false
		return r.pending, true
	}
	if r.eof || !r.sc.Scan() {
		r.eof = true
		return nil, false
	}
	return r.sc.Bytes(), true
}

// Scan advances to the next record. It returns false at the end of the
// file or on an error (see Err).
func (r *Reader) Scan() bool {
	for {
		line, ok := r.next()
		if !ok {
			switch err := r.sc.Err(); {
			case r.err != nil:
			case errors.Is(err, bufio.ErrTooLong):
				r.err = &SyntaxError{r.name, r.line + 1, fmt.Sprintf("line longer than %d MiB, the cap on a results line: is this a results file?", maxLineBytes>>20)}
			case err != nil:
				r.err = fmt.Errorf("read %s: %w", r.name, err)
			}
			return false
		}
		r.line++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		r.raw = append(r.raw[:0], line...)
		err := r.decode()
		if err == nil {
			return true
		}
		// Is this the last line? Look one ahead.
		if !r.eof && r.sc.Scan() {
			r.pending = append(r.pending[:0], r.sc.Bytes()...)
			r.havePend = true
		} else {
			r.eof = true
		}
		if !r.havePend {
			r.warnings = append(r.warnings, &SyntaxError{r.name, r.line,
				"last line is incomplete (the run was interrupted, or its disk filled): skipped"})
			return false
		}
		r.err = &SyntaxError{r.name, r.line, err.Error()}
		return false
	}
}

func (r *Reader) decode() error {
	r.rec = Record{}
	kind := kindOf(r.raw)
	if kind == "" {
		var probe struct {
			Kind Kind `json:"kind"`
		}
		if err := json.Unmarshal(r.raw, &probe); err != nil {
			return err
		}
		if probe.Kind == "" {
			return errors.New(`record has no "kind"`)
		}
		kind = probe.Kind
	}
	r.rec.Kind = kind
	var err error
	switch kind {
	case KindHeader:
		h := new(Header)
		if err = json.Unmarshal(r.raw, h); err == nil {
			h.Spec, err = DecodeSpec(h.Scenario)
		}
		r.rec.Header = h
	case KindRequest:
		r.rec.Result = new(Result)
		err = json.Unmarshal(r.raw, r.rec.Result)
	case KindScrape:
		r.rec.Sample = new(Sample)
		err = json.Unmarshal(r.raw, r.rec.Sample)
	case KindWarning:
		r.rec.Warning = new(Warning)
		err = json.Unmarshal(r.raw, r.rec.Warning)
	case KindEnd:
		r.rec.End = new(End)
		err = json.Unmarshal(r.raw, r.rec.End)
	default:
		if !json.Valid(r.raw) {
			return fmt.Errorf("%s record is not valid JSON", kind)
		}
		r.rec.Raw = r.raw
	}
	if err != nil {
		return fmt.Errorf("%s record: %w", kind, err)
	}
	return nil
}

// kindOf reads the kind from a line that starts with {"kind":"…", as the
// Writer always writes it; it returns "" otherwise.
func kindOf(line []byte) Kind {
	const prefix = `{"kind":"`
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return ""
	}
	rest := line[len(prefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return ""
	}
	return Kind(rest[:end])
}

// Record is the current record.
func (r *Reader) Record() Record { return r.rec }

// Line is the current line number (1-based).
func (r *Reader) Line() int { return r.line }

// Err is the first error met, if any.
func (r *Reader) Err() error { return r.err }

// Warnings are the non-fatal problems met so far.
func (r *Reader) Warnings() []error { return r.warnings }
