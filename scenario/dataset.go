package scenario

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxDatasetLine bounds one JSONL line (a long prompt), in bytes.
const maxDatasetLine = 64 << 20

// readDataset reads a prompt dataset file. Problems in the file are
// *FieldErrors naming the file and line.
func readDataset(path, format string) ([]entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	var entries []entry
	switch format {
	case FormatJSONL:
		entries, err = parseJSONL(path, f)
	default:
		entries, err = parseShareGPT(path, f)
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
			fail("", "want a JSON object {\"prompt\": ..., \"output_tokens\": N}: %v", err)
			continue
		}
		switch {
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
// the reply that follows it. Conversations without both are skipped. The
// array is decoded element by element, so only the kept strings stay in
// memory.
func parseShareGPT(name string, r io.Reader) ([]entry, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<20))
	fail := func(err error) error {
		return &FieldError{File: name, Msg: fmt.Sprintf("want a ShareGPT JSON array of conversations: %v", err)}
	}
	if tok, err := dec.Token(); err != nil {
		return nil, fail(err)
	} else if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, fail(fmt.Errorf("the file starts with %v, not an array", tok))
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
			return nil, fail(fmt.Errorf("element %d (byte %d): %w", i, dec.InputOffset(), err))
		}
		turns := conv.Conversations
		for j, t := range turns {
			if !isHuman(t.From) {
				continue
			}
			if j+1 < len(turns) && !isHuman(turns[j+1].From) && turns[j+1].From != "system" &&
				t.Value != "" && turns[j+1].Value != "" {
				entries = append(entries, entry{prompt: t.Value, answer: turns[j+1].Value})
			}
			break
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fail(err)
	}
	return entries, nil
}

func isHuman(from string) bool {
	return strings.EqualFold(from, "human") || strings.EqualFold(from, "user")
}
