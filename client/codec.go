package client

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Writer writes records (Header, Result, and other kinds such as scrape
// samples) as NDJSON, one line per record, flushing each record to the
// underlying file so that an interrupted run loses nothing already written.
// A name ending in ".gz" is gzip-compressed. Writer is not safe for
// concurrent use: the run has a single writer goroutine that owns it.
type Writer struct {
	buf  *bufio.Writer
	gz   *gzip.Writer
	file io.Closer
	enc  *json.Encoder
	n    int
}

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

// NewWriter returns a Writer on w, uncompressed.
func NewWriter(w io.Writer) *Writer { return newWriter(w, false) }

func newWriter(w io.Writer, compress bool) *Writer {
	out := &Writer{}
	var sink io.Writer = w
	if compress {
		out.gz = gzip.NewWriter(w)
		sink = out.gz
	}
	out.buf = bufio.NewWriterSize(sink, 64<<10)
	out.enc = json.NewEncoder(out.buf)
	out.enc.SetEscapeHTML(false)
	return out
}

// Write encodes one record and flushes it to the file.
func (w *Writer) Write(record any) error {
	if err := w.enc.Encode(record); err != nil {
		return fmt.Errorf("write record %d: %w", w.n+1, err)
	}
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

// Records is the number of records written so far.
func (w *Writer) Records() int { return w.n }

// Close flushes and closes the file.
func (w *Writer) Close() error {
	err := w.buf.Flush()
	if w.gz != nil {
		err = errors.Join(err, w.gz.Close())
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

// Reader reads a results file record by record, in the style of
// bufio.Scanner. A last line cut short (a run killed mid-write) is skipped
// with a warning; a bad line anywhere else is an error.
//
// Header and Result return freshly allocated values the caller may retain;
// Raw returns the reader's buffer, valid only until the next Scan.
type Reader struct {
	name     string
	sc       *bufio.Scanner
	closer   io.Closer
	line     int
	kind     string
	raw      []byte
	header   *Header
	result   *Result
	err      error
	warnings []error
	pending  []byte // the next line, read ahead to know whether the current one is the last
	havePend bool
	eof      bool
}

// Open opens a results file, gzip-compressed or not (detected from its
// content, not its name).
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open results file: %w", err)
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

// NewReader reads records from src; name is used in errors.
func NewReader(src io.Reader, name string) *Reader {
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 0, 256<<10), 256<<20)
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
			if err := r.sc.Err(); err != nil && r.err == nil {
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
				"last line is incomplete (the run was probably interrupted): skipped"})
			return false
		}
		r.err = &SyntaxError{r.name, r.line, err.Error()}
		return false
	}
}

func (r *Reader) decode() error {
	r.header, r.result = nil, nil
	kind := kindOf(r.raw)
	if kind == "" {
		var probe struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(r.raw, &probe); err != nil {
			return err
		}
		if probe.Kind == "" {
			return errors.New(`record has no "kind"`)
		}
		kind = probe.Kind
	}
	r.kind = kind
	switch kind {
	case KindHeader:
		h := new(Header)
		if err := json.Unmarshal(r.raw, h); err != nil {
			return err
		}
		r.header = h
	case KindRequest:
		res := new(Result)
		if err := json.Unmarshal(r.raw, res); err != nil {
			return err
		}
		r.result = res
	default:
		if !json.Valid(r.raw) {
			return fmt.Errorf("%s record is not valid JSON", r.kind)
		}
	}
	return nil
}

// kindOf reads the kind from a line that starts with {"kind":"…", as the
// Writer always writes it; it returns "" otherwise.
func kindOf(line []byte) string {
	const prefix = `{"kind":"`
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return ""
	}
	rest := line[len(prefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return ""
	}
	return string(rest[:end])
}

// Kind is the current record's kind.
func (r *Reader) Kind() string { return r.kind }

// Header is the current record when Kind is KindHeader, else nil.
func (r *Reader) Header() *Header { return r.header }

// Result is the current record when Kind is KindRequest, else nil.
func (r *Reader) Result() *Result { return r.result }

// Raw is the current line; valid until the next Scan.
func (r *Reader) Raw() []byte { return r.raw }

// Line is the current line number (1-based).
func (r *Reader) Line() int { return r.line }

// Err is the first error met, if any.
func (r *Reader) Err() error { return r.err }

// Warnings are the non-fatal problems met so far.
func (r *Reader) Warnings() []error { return r.warnings }
