package scenario

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/servebench/servebench/internal/inputfile"
)

// maxErrors is how many problems a reader of a dataset or trace reports
// before it stops: a file of another kind (a binary, another format) has
// one on every line, and hundreds of thousands of messages help nobody.
const maxErrors = 20

// checkEvery is how many lines (or ShareGPT conversations) a reader reads
// between two looks at its context and two progress reports.
const checkEvery = 256

// problems collects a reader's errors up to maxErrors.
type problems struct {
	name string
	errs []error
}

// add records err and reports whether the reader must stop: the cap was
// reached, and a last error says so.
func (p *problems) add(err error) (stop bool) {
	if p.full() {
		return true
	}
	p.errs = append(p.errs, err)
	if len(p.errs) < maxErrors {
		return false
	}
	// The last problem says the reading stopped, so that no more than
	// maxErrors lines are printed.
	note := fmt.Sprintf("; stopped reading here, after %d problems (is this file in the format the scenario names?)", maxErrors)
	if fe, ok := err.(*FieldError); ok {
		c := *fe
		c.Msg += note
		p.errs[len(p.errs)-1] = &c
	} else {
		p.errs[len(p.errs)-1] = fmt.Errorf("%w%s", err, note)
	}
	return true
}

func (p *problems) err() error { return errors.Join(p.errs...) }

// full reports whether the cap was reached.
func (p *problems) full() bool { return len(p.errs) >= maxErrors }

// lineCap says how long a line may be and what raises the cap.
type lineCap struct {
	max   int    // bytes
	what  string // "dataset line"
	raise string // "--set prompts.dataset.max_line_mib=N"; "" when no setting raises it
}

// lines reads a JSONL file's non-blank lines for the dataset and trace
// parsers: it caps their length (lineCap), stops at maxErrors problems,
// looks at the context every checkEvery lines and reports the bytes read
// to progress (which may be nil).
type lines struct {
	ctx      context.Context
	sc       *bufio.Scanner
	cap      lineCap
	progress func(done int64)
	line     int   // the current line, from 1
	read     int64 // bytes read, up to the current line's end
	stopped  bool  // by the context
	problems
}

func newLines(ctx context.Context, name string, r io.Reader, c lineCap, progress func(int64)) *lines {
	sc := bufio.NewScanner(r)
	// A line of c.max bytes and its "\r\n" fit the buffer.
	sc.Buffer(make([]byte, 0, min(64<<10, c.max+2)), c.max+2)
	return &lines{ctx: ctx, sc: sc, cap: c, progress: progress, problems: problems{name: name}}
}

// next returns the next non-blank line, trimmed; it is valid until the
// next call. It returns false at the end of the file, on a read error, on
// the context's end and once maxErrors problems were added; err says
// which.
func (l *lines) next() ([]byte, bool) {
	for !l.full() {
		if l.line%checkEvery == 0 {
			if l.ctx.Err() != nil {
				l.stopped = true
				return nil, false
			}
			if l.progress != nil {
				l.progress(l.read)
			}
		}
		if !l.sc.Scan() {
			return nil, false
		}
		l.line++
		l.read += int64(len(l.sc.Bytes())) + 1
		if b := bytes.TrimSpace(l.sc.Bytes()); len(b) > 0 {
			return b, true
		}
	}
	return nil, false
}

// fail adds a problem of the current line.
func (l *lines) fail(field, format string, args ...any) (stop bool) {
	return l.add(&FieldError{File: l.name, Line: l.line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// err is what stopped the reading or was found wrong on the way: the
// context's end, the problems, a line over the cap or a read error.
func (l *lines) err() error {
	if l.stopped {
		err := context.Cause(l.ctx)
		return fmt.Errorf("%s: reading stopped after %d lines: %w", l.name, l.line, err)
	}
	switch err := l.sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		msg := fmt.Sprintf("line longer than the %s cap on a %s", inputfile.Size(int64(l.cap.max)), l.cap.what)
		if l.cap.raise != "" {
			msg += " (raise it with " + l.cap.raise + ")"
		}
		l.errs = append(l.errs, &FieldError{File: l.name, Line: l.line + 1, Msg: msg})
	case err != nil:
		l.errs = append(l.errs, &FieldError{File: l.name, Line: l.line + 1, Msg: fmt.Sprintf("read: %v", readError(err))})
	}
	return l.problems.err()
}

// readError says what a read error means, without repeating the path
// that the FieldError names already.
func readError(err error) string {
	var tl *inputfile.TooLargeError
	if errors.As(err, &tl) {
		msg := fmt.Sprintf("the file grew past the %s cap on a %s file while it was read", inputfile.Size(tl.Limit.MaxBytes), tl.Limit.What)
		if tl.Limit.Raise != "" {
			msg += " (raise it with " + tl.Limit.Raise + ")"
		}
		return msg
	}
	return err.Error()
}
