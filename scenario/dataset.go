package scenario

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/servebench/servebench/internal/inputfile"
)

// CheckDataset reads the scenario's dataset file, when it has one, and
// returns its problems as *FieldErrors naming the dataset file and line.
// Validate only checks that the file is there: it runs on every --set and
// sweep value, and a dataset may be large. Call CheckDataset once before
// using the network (run.Run and sweep.NewPlan do), so a bad dataset is a
// bad scenario, not a run that failed against its server.
//
// It also reads every trace stage's file (load.stages[i].trace), for the
// same reasons. It stops, with ctx's cause, when ctx ends.
func (sc *Scenario) CheckDataset(ctx context.Context) error {
	if err := sc.checkTraces(ctx); err != nil {
		return err
	}
	if sc.Prompts.Dataset.Path == "" {
		return nil
	}
	_, err := readDataset(ctx, sc.DatasetPath(), sc.Prompts.Dataset.Format, sc.readOpts(nil))
	return err
}

// readOpts says what a dataset must hold for sc and how it is read.
type readOpts struct {
	// turns keeps every turn of each conversation (a conversation
	// scenario); without it only the first turn is kept.
	turns bool
	// haveOut: the scenario's prompts.output_tokens gives every output
	// length, so a turn needs no answer or output_tokens of its own.
	haveOut bool
	// file caps the file's size, line the length of a line (a ShareGPT
	// conversation).
	file inputfile.Limit
	line lineCap
	// progress, when not nil, is told the bytes read so far.
	progress Progress
}

func (sc *Scenario) readOpts(progress Progress) readOpts {
	d := &sc.Prompts.Dataset
	return readOpts{
		turns: sc.Prompts.Conversation != nil, haveOut: sc.Prompts.OutputTokens != nil,
		file: inputfile.Limit{What: "dataset", MaxBytes: int64(orDefault(d.MaxFileMiB, DefaultMaxFileMiB)) << 20,
			Raise: "--set prompts.dataset.max_file_mib=N"},
		line: lineCap{max: orDefault(d.MaxLineMiB, DefaultMaxLineMiB) << 20, what: "dataset line",
			raise: "--set prompts.dataset.max_line_mib=N"},
		progress: progress,
	}
}

// lineCap is o.line, or the default cap when o sets none.
func (o readOpts) lineCap() lineCap {
	if o.line.max > 0 {
		return o.line
	}
	return lineCap{max: DefaultMaxLineMiB << 20, what: "dataset line", raise: "--set prompts.dataset.max_line_mib=N"}
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// readDataset reads a prompt dataset file, a regular file within the
// caps of o. Problems in the file are *FieldErrors naming the file and
// line, at most maxErrors of them; the reading stops with ctx's cause when
// ctx ends.
func readDataset(ctx context.Context, path, format string, o readOpts) ([]entry, error) {
	f, err := inputfile.Open(path, o.file)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	if o.progress != nil {
		if fi, err := f.Stat(); err == nil {
			step, total := "read "+path, fi.Size()
			report := o.progress
			o.progress = func(_ string, done, _ int64, unit string) { report(step, done, total, unit) }
		}
	}
	var entries []entry
	switch format {
	case FormatJSONL:
		entries, err = parseJSONL(ctx, path, f, o)
	case FormatMessages:
		entries, err = parseMessages(ctx, path, f, o)
	default:
		entries, err = parseShareGPT(ctx, path, f, o)
	}
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, &FieldError{File: path, Msg: fmt.Sprintf("no usable prompt in this %s dataset", format)}
	}
	return entries, nil
}

// lines returns the line reader of a JSONL dataset.
func (o readOpts) lines(ctx context.Context, name string, r io.Reader) *lines {
	var progress func(int64)
	if o.progress != nil {
		progress = func(done int64) { o.progress("", done, 0, "bytes") }
	}
	return newLines(ctx, name, r, o.lineCap(), progress)
}

// parseJSONL reads one {"prompt": "...", "output_tokens": N} object per
// line; blank lines are skipped.
func parseJSONL(ctx context.Context, name string, r io.Reader, o readOpts) ([]entry, error) {
	l := o.lines(ctx, name, r)
	var entries []entry
	for b, ok := l.next(); ok; b, ok = l.next() {
		var rec struct {
			Prompt       *string `json:"prompt"`
			OutputTokens *int    `json:"output_tokens"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			l.fail("", "want a JSON object {\"prompt\": ..., \"output_tokens\": N}: %s", plainJSONDecode(err))
			continue
		}
		switch {
		case rec.Prompt == nil && bytes.Contains(b, []byte(`"messages"`)):
			l.fail("prompt", "is missing: a line of messages is the %s format (prompts.dataset.format: %s)", FormatMessages, FormatMessages)
		case rec.Prompt == nil:
			l.fail("prompt", "is missing")
		case *rec.Prompt == "":
			l.fail("prompt", "is empty")
		case len(*rec.Prompt) > MaxPromptBytes:
			l.fail("prompt", "%s", promptTooLong(len(*rec.Prompt)))
		case rec.OutputTokens == nil:
			l.fail("output_tokens", "is missing")
		case *rec.OutputTokens < 1 || *rec.OutputTokens > maxTokens:
			l.fail("output_tokens", "want 1 to %d, got %d", maxTokens, *rec.OutputTokens)
		default:
			entries = append(entries, entry{prompt: *rec.Prompt, at: int32(l.line)})
			entries[len(entries)-1].output.Store(int32(*rec.OutputTokens))
		}
	}
	if err := l.err(); err != nil {
		return nil, err
	}
	return entries, nil
}

// promptTooLong says that a prompt of n bytes is over MaxPromptBytes.
func promptTooLong(n int) string {
	return fmt.Sprintf("is %d bytes, over the %s cap on a dataset prompt (%d tokens, the cap synthetic prompts have too, at 4 bytes a token)",
		n, inputfile.Size(MaxPromptBytes), MaxPromptTokens)
}

// parseShareGPT reads a ShareGPT JSON array of {"conversations": [{"from":
// "human", "value": ...}, {"from": "gpt", "value": ...}, ...]}. The prompt
// is the first human (or user) turn, the output length the token count of
// the reply that follows it. Conversations without both are skipped. With
// o.turns, every turn is kept: the human and gpt pairs from the first
// human turn on, up to the first that is not such a pair, and a leading
// system turn as the system message. The array is decoded element by
// element, so only the kept strings stay in memory, and an element longer
// than the line cap (o.line) is refused.
func parseShareGPT(ctx context.Context, name string, r io.Reader, o readOpts) ([]entry, error) {
	lc := o.lineCap()
	cr := &elementReader{r: bufio.NewReaderSize(r, 1<<20), max: int64(lc.max)}
	dec := json.NewDecoder(cr)
	// fail names the line of byte offset off when r can be read again (a
	// file): the decoder reads ahead and knows offsets only.
	fail := func(off int64, format string, args ...any) error {
		return &FieldError{File: name, Line: lineAt(r, off), Msg: "want a ShareGPT JSON array of conversations: " + fmt.Sprintf(format, args...)}
	}
	errorAt := func(err error) int64 {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return se.Offset
		}
		return dec.InputOffset()
	}
	if tok, err := dec.Token(); err != nil {
		return nil, fail(errorAt(err), "%s", plainJSONDecode(err))
	} else if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, fail(0, "the file starts with %v, not an array", tok)
	}
	cr.start = dec.InputOffset()
	var entries []entry
	for i := 0; dec.More(); i++ {
		if i%checkEvery == 0 {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%s: reading stopped after %d conversations: %w", name, i, context.Cause(ctx))
			}
			if o.progress != nil {
				o.progress("", cr.read, 0, "bytes")
			}
		}
		var conv shareGPTConversation
		start := cr.start
		if err := dec.Decode(&conv); err != nil {
			if errors.Is(err, errElementTooLong) {
				return nil, &FieldError{File: name, Line: elementLine(r, start), Field: fmt.Sprintf("[%d]", i), Msg: fmt.Sprintf(
					"a conversation longer than the %s cap on a %s (raise it with %s)", inputfile.Size(int64(lc.max)), lc.what, lc.raise)}
			}
			return nil, fail(errorAt(err), "element %d: %s", i, plainJSONDecode(err))
		}
		cr.start = dec.InputOffset()
		e, ok := conv.entry(o)
		if !ok {
			continue
		}
		if n := e.longest(); n > MaxPromptBytes {
			return nil, &FieldError{File: name, Line: elementLine(r, start), Field: fmt.Sprintf("[%d].conversations", i),
				Msg: "a turn " + promptTooLong(n)}
		}
		e.at = int32(i)
		entries = append(entries, entry{})
		entries[len(entries)-1].move(e)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fail(errorAt(err), "%s", plainJSONDecode(err))
	}
	return entries, nil
}

// shareGPTConversation is one element of a ShareGPT array.
type shareGPTConversation struct {
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// entry returns the conversation's dataset entry (see parseShareGPT);
// false when it has none.
func (c *shareGPTConversation) entry(o readOpts) (*entry, bool) {
	turns := c.Conversations
	pair := func(j int) bool {
		return j+1 < len(turns) && isHuman(turns[j].From) && !isHuman(turns[j+1].From) && turns[j+1].From != "system" &&
			turns[j].Value != "" && turns[j+1].Value != ""
	}
	for j, t := range turns {
		if !isHuman(t.From) {
			continue
		}
		if !pair(j) {
			return nil, false
		}
		e := &entry{prompt: t.Value, answer: turns[j+1].Value}
		if o.turns {
			if turns[0].From == "system" {
				e.system = turns[0].Value
			}
			for k := j; pair(k); k += 2 {
				e.turns = append(e.turns, turn{prompt: turns[k].Value, answer: turns[k+1].Value})
			}
		}
		return e, true
	}
	return nil, false
}

// errElementTooLong is elementReader's refusal to read on.
var errElementTooLong = errors.New("element over the line cap")

// elementReader delivers at most 64 KiB a read and no more than max+1
// bytes past start (the end of the previous element), then refuses to
// read on: the JSON decoder buffers a whole element before it decodes it
// and reads only while the element is incomplete, so a refusal means an
// element (with the separator before it) longer than max, and an element
// takes at most max+1 bytes of the decoder's buffer.
type elementReader struct {
	r          io.Reader
	read       int64
	start, max int64
}

func (e *elementReader) Read(p []byte) (int, error) {
	const chunk = 64 << 10
	left := e.start + e.max + 1 - e.read
	if left <= 0 {
		return 0, errElementTooLong
	}
	p = p[:min(int64(len(p)), chunk, left)]
	n, err := e.r.Read(p)
	e.read += int64(n)
	return n, err
}

// elementLine returns the line where the array element after offset off
// (the end of the element before it) begins: past the comma and blanks.
func elementLine(r io.Reader, off int64) int {
	line := lineAt(r, off)
	rs, ok := r.(io.ReadSeeker)
	if !ok || line == 0 {
		return line
	}
	if _, err := rs.Seek(off, io.SeekStart); err != nil {
		return line
	}
	br := bufio.NewReader(rs)
	for {
		c, err := br.ReadByte()
		if err != nil || !strings.ContainsRune(", \t\r\n", rune(c)) {
			return line
		}
		if c == '\n' {
			line++
		}
	}
}

// lineAt returns the 1-based line of byte offset off in r, read again
// from its start, or 0 when r cannot seek.
func lineAt(r io.Reader, off int64) int {
	rs, ok := r.(io.ReadSeeker)
	if !ok || off < 0 {
		return 0
	}
	if _, err := rs.Seek(0, io.SeekStart); err != nil {
		return 0
	}
	br := bufio.NewReader(io.LimitReader(rs, off))
	line := 1
	for {
		b, err := br.ReadSlice('\n')
		if len(b) > 0 && b[len(b)-1] == '\n' {
			line++
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return line
		}
	}
}

// plainJSONDecode says why a dataset's JSON did not decode, in the file's
// terms rather than Go's ("json: cannot unmarshal number into Go struct
// field .conversations of type []struct {...}").
func plainJSONDecode(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		got := map[string]string{"array": "a list", "object": "an object"}[te.Value]
		if got == "" {
			got = "a " + te.Value // "a number", "a string", "a bool"
		}
		want := "a value of another kind"
		switch te.Type.Kind() {
		case reflect.Slice, reflect.Array:
			want = "a list"
		case reflect.Struct, reflect.Map:
			want = "an object"
		case reflect.String:
			want = "a string"
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			want = "an integer"
		case reflect.Float32, reflect.Float64:
			want = "a number"
		case reflect.Bool:
			want = "true or false"
		}
		if te.Field != "" {
			return fmt.Sprintf("%s: want %s, got %s", te.Field, want, got)
		}
		return fmt.Sprintf("want %s, got %s", want, got)
	case errors.As(err, &se):
		return se.Error()
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the file ends in the middle of a value"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func isHuman(from string) bool {
	return strings.EqualFold(from, "human") || strings.EqualFold(from, "user")
}
