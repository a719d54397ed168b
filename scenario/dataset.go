package scenario

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
)

// maxDatasetLine bounds one JSONL line (a long prompt), in bytes.
const maxDatasetLine = 64 << 20

// CheckDataset reads the scenario's dataset file, when it has one, and
// returns its problems as *FieldErrors naming the dataset file and line.
// Validate only checks that the file is there: it runs on every --set and
// sweep value, and a dataset may be large. Call CheckDataset once before
// using the network (run.Run and sweep.NewPlan do), so a bad dataset is a
// bad scenario, not a run that failed against its server.
//
// It also reads every trace stage's file (load.stages[i].trace), for the
// same reasons.
func (sc *Scenario) CheckDataset() error {
	if err := sc.checkTraces(); err != nil {
		return err
	}
	if sc.Prompts.Dataset.Path == "" {
		return nil
	}
	_, err := readDataset(sc.DatasetPath(), sc.Prompts.Dataset.Format, sc.readOpts())
	return err
}

// readOpts says what a dataset must hold for sc.
type readOpts struct {
	// turns keeps every turn of each conversation (a conversation
	// scenario); without it only the first turn is kept.
	turns bool
	// haveOut: the scenario's prompts.output_tokens gives every output
	// length, so a turn needs no answer or output_tokens of its own.
	haveOut bool
}

func (sc *Scenario) readOpts() readOpts {
	return readOpts{turns: sc.Prompts.Conversation != nil, haveOut: sc.Prompts.OutputTokens != nil}
}

// readDataset reads a prompt dataset file. Problems in the file are
// *FieldErrors naming the file and line.
func readDataset(path, format string, o readOpts) ([]entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	var entries []entry
	switch format {
	case FormatJSONL:
		entries, err = parseJSONL(path, f)
	case FormatMessages:
		entries, err = parseMessages(path, f, o)
	default:
		entries, err = parseShareGPT(path, f, o)
	}
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, &FieldError{File: path, Msg: fmt.Sprintf("no usable prompt in this %s dataset", format)}
	}
	return entries, nil
}

// parseJSONL reads one {"prompt": "...", "output_tokens": N} object per
// line; blank lines are skipped.
func parseJSONL(name string, r io.Reader) ([]entry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxDatasetLine)
	var entries []entry
	var errs []error
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var rec struct {
			Prompt       *string `json:"prompt"`
			OutputTokens *int    `json:"output_tokens"`
		}
		fail := func(field, format string, args ...any) {
			errs = append(errs, &FieldError{File: name, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			fail("", "want a JSON object {\"prompt\": ..., \"output_tokens\": N}: %s", plainJSONDecode(err))
			continue
		}
		switch {
		case rec.Prompt == nil && bytes.Contains(b, []byte(`"messages"`)):
			fail("prompt", "is missing: a line of messages is the %s format (prompts.dataset.format: %s)", FormatMessages, FormatMessages)
		case rec.Prompt == nil:
			fail("prompt", "is missing")
		case *rec.Prompt == "":
			fail("prompt", "is empty")
		case rec.OutputTokens == nil:
			fail("output_tokens", "is missing")
		case *rec.OutputTokens < 1 || *rec.OutputTokens > maxTokens:
			fail("output_tokens", "want 1 to %d, got %d", maxTokens, *rec.OutputTokens)
		default:
			entries = append(entries, entry{prompt: *rec.Prompt})
			entries[len(entries)-1].output.Store(int32(*rec.OutputTokens))
		}
		if len(errs) >= 20 {
			errs = append(errs, &FieldError{File: name, Line: line, Msg: "too many errors"})
			break
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, &FieldError{File: name, Msg: fmt.Sprintf("read: %v", err)})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return entries, nil
}

// parseShareGPT reads a ShareGPT JSON array of {"conversations": [{"from":
// "human", "value": ...}, {"from": "gpt", "value": ...}, ...]}. The prompt
// is the first human (or user) turn, the output length the token count of
// the reply that follows it. Conversations without both are skipped. With
// o.turns, every turn is kept: the human and gpt pairs from the first
// human turn on, up to the first that is not such a pair, and a leading
// system turn as the system message. The array is decoded element by
// element, so only the kept strings stay in memory.
func parseShareGPT(name string, r io.Reader, o readOpts) ([]entry, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<20))
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
	var entries []entry
	for i := 0; dec.More(); i++ {
		var conv struct {
			Conversations []struct {
				From  string `json:"from"`
				Value string `json:"value"`
			} `json:"conversations"`
		}
		if err := dec.Decode(&conv); err != nil {
			return nil, fail(errorAt(err), "element %d: %s", i, plainJSONDecode(err))
		}
		turns := conv.Conversations
		pair := func(j int) bool {
			return j+1 < len(turns) && isHuman(turns[j].From) && !isHuman(turns[j+1].From) && turns[j+1].From != "system" &&
				turns[j].Value != "" && turns[j+1].Value != ""
		}
		for j, t := range turns {
			if !isHuman(t.From) {
				continue
			}
			if pair(j) {
				entries = append(entries, entry{prompt: t.Value, answer: turns[j+1].Value})
				if o.turns {
					e := &entries[len(entries)-1]
					if turns[0].From == "system" {
						e.system = turns[0].Value
					}
					for k := j; pair(k); k += 2 {
						e.turns = append(e.turns, turn{prompt: turns[k].Value, answer: turns[k+1].Value})
					}
				}
			}
			break
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fail(errorAt(err), "%s", plainJSONDecode(err))
	}
	return entries, nil
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
