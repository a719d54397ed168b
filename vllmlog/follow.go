package vllmlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/kvcapacity"
)

// defaultPoll is how often Follow looks for new lines.
const defaultPoll = 250 * time.Millisecond

// Follow tails the growing log at path, as tail -f does: it reads what the
// file already holds, writes one line saying what it found and the latest
// stats line, and then, as lines are appended, writes each new periodic
// stats line to w the moment it is complete: one line of text (format
// "text" or "markdown") or one JSON object per line ("json", without the
// summary line). It looks for new data every poll
// (defaultPoll when 0). A file that shrinks or is replaced (log rotation)
// is read again from its start. Follow returns nil when ctx is done, and
// an error only when the file cannot be read or w cannot be written.
func Follow(ctx context.Context, path string, opts Options, format string, poll time.Duration, w io.Writer) error {
	if !ValidFormat(format) {
		return fmt.Errorf("logs: unknown format %q", format)
	}
	if poll <= 0 {
		poll = defaultPoll
	}
	p, err := NewParser(opts)
	if err != nil {
		return err
	}
	t := &tail{path: path, p: p}
	if err := t.open(); err != nil {
		return err
	}
	defer func() { t.f.Close() }()
	if err := t.read(); err != nil {
		return err
	}
	rep := p.Report()
	if format != "json" {
		if _, err := fmt.Fprintln(w, followHeader(path, rep)); err != nil {
			return err
		}
	}
	// The latest stats line already written says where the server is now.
	if n := len(rep.Runs); n > 0 {
		for _, s := range rep.Runs[n-1].Runtime.Engines {
			if err := writePoint(w, format, s.Engine, s.Last); err != nil {
				return err
			}
		}
	}
	var werr error
	p.onPoint = func(r *Run, engine string, pt Point) {
		if werr == nil {
			werr = writePoint(w, format, engine, pt)
		}
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if err := t.check(); err != nil {
			return err
		}
		if err := t.read(); err != nil {
			return err
		}
		if werr != nil {
			return fmt.Errorf("logs: %w", werr)
		}
	}
}

// tail reads a growing file line by line, keeping an incomplete last line
// until its newline arrives.
type tail struct {
	path     string
	p        *Parser
	f        *os.File
	partial  []byte
	skipping bool // inside the rest of a line longer than maxLineBytes
	buf      [64 << 10]byte
}

func (t *tail) open() error {
	f, err := os.Open(t.path)
	if err != nil {
		return fmt.Errorf("logs: %w", err)
	}
	t.f, t.partial, t.skipping = f, t.partial[:0], false
	t.p.StartFile(t.path)
	return nil
}

// check reopens the file when it was replaced or truncated.
func (t *tail) check() error {
	st, err := os.Stat(t.path)
	if err != nil {
		return nil // rotated away: wait for the new file
	}
	cur, err := t.f.Stat()
	if err != nil {
		return fmt.Errorf("logs: %w", err)
	}
	pos, err := t.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("logs: %w", err)
	}
	if os.SameFile(st, cur) && st.Size() >= pos {
		return nil
	}
	t.f.Close()
	return t.open()
}

// read consumes everything appended since the last call.
func (t *tail) read() error {
	for {
		n, err := t.f.Read(t.buf[:])
		t.consume(t.buf[:n])
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("logs: %w", err)
		}
	}
}

func (t *tail) consume(data []byte) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if !t.skipping {
				t.partial = append(t.partial, data...)
				if len(t.partial) >= maxLineBytes {
					t.p.Line(string(t.partial[:maxLineBytes]))
					t.p.cut++
					t.partial, t.skipping = t.partial[:0], true
				}
			}
			return
		}
		if t.skipping {
			t.skipping = false
		} else {
			t.partial = append(t.partial, data[:i]...)
			t.p.Line(string(t.partial))
		}
		t.partial = t.partial[:0]
		data = data[i+1:]
	}
}

// followHeader says what the log held when following began.
func followHeader(path string, rep *Report) string {
	s := "following " + path
	if len(rep.Runs) == 0 {
		return s + ": no vLLM output yet; stats lines will appear below as the server writes them"
	}
	r := rep.Runs[len(rep.Runs)-1]
	var parts []string
	if r.Config.Version != "" {
		parts = append(parts, "vLLM "+r.Config.Version)
	}
	if name := r.Config.modelName(); name != "" {
		parts = append(parts, name)
	}
	if kv := r.KV; kv.Tokens > 0 {
		parts = append(parts, fmt.Sprintf("KV cache %s tokens (%.2f× at %s)", kvcapacity.Thousands(kv.Tokens), kv.Concurrency, kvcapacity.Thousands(kv.ConcurrencyLen)))
	}
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s + "; new stats lines below"
}

// writePoint writes one stats line as it arrives.
func writePoint(w io.Writer, format, engine string, pt Point) error {
	if format == "json" {
		b, err := json.Marshal(pt)
		if err != nil {
			return err
		}
		e, _ := json.Marshal(engine)
		_, err = fmt.Fprintf(w, "{\"engine\":%s,%s\n", e, b[1:])
		return err
	}
	f := func(x float64, digits int) string {
		if math.IsNaN(x) {
			return "-"
		}
		return fmt.Sprintf("%.*f", digits, x)
	}
	_, err := fmt.Fprintf(w, "%s  engine %s  generation %s tok/s  prompt %s tok/s  running %s  waiting %s  KV %s %%  prefix hit %s %%\n",
		pt.Time, engine, f(pt.GenerationTPS, 1), f(pt.PromptTPS, 1), f(pt.Running, 0), f(pt.Waiting, 0), f(pt.KVUsagePerc, 1), f(pt.PrefixHitPerc, 1))
	return err
}
