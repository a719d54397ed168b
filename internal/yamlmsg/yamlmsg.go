// Package yamlmsg words the YAML decoder's errors for people: the scenario
// loader and the simulator's settings report them without Go type names or
// YAML tags the user did not write. "line 3: cannot unmarshal !!str `fast`
// into float64" becomes line 3, `want a number, got "fast"`.
//
// It consumes the decoder's errors and messages and produces lines and
// plain messages. The scenario loader checks documents structurally before
// decoding, so it rarely needs this; the rewriting covers what that check
// does not.
package yamlmsg

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Message is one problem the decoder reported.
type Message struct {
	Line int    // 1-based; 0 when the decoder gave none
	Text string // in plain words
}

var lineRE = regexp.MustCompile(`^(?:yaml: )?(?:unmarshal errors:\s*)?line (\d+): `)

// Split separates a decoder message into its line and the rest, in plain
// words.
func Split(msg string) Message {
	msg = strings.TrimSpace(msg)
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Message{Line: line, Text: plain(msg[len(m[0]):])}
	}
	return Message{Text: plain(strings.TrimPrefix(msg, "yaml: "))}
}

// messages returns the problems of a decoder error: one per field for a
// *yaml.TypeError, else one.
func messages(err error) []Message {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return []Message{Split(err.Error())}
	}
	out := make([]Message, len(te.Errors))
	for i, m := range te.Errors {
		out[i] = Split(m)
	}
	return out
}

// Text joins the messages of err with "; ", each with its line when
// withLines.
func Text(err error, withLines bool) string {
	var parts []string
	for _, m := range messages(err) {
		if withLines && m.Line > 0 {
			parts = append(parts, "line "+strconv.Itoa(m.Line)+": "+m.Text)
		} else {
			parts = append(parts, m.Text)
		}
	}
	return strings.Join(parts, "; ")
}

var (
	cannotRE    = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (\\S+)$")
	fieldRE     = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
	twiceRE     = regexp.MustCompile(`^field (\S+) already set in type \S+$`)
	mapKeyRE    = regexp.MustCompile(`^invalid map key: `)
	intTypeRE   = regexp.MustCompile(`^u?int(?:8|16|32|64)?$`)
	floatTypeRE = regexp.MustCompile(`^float(?:32|64)$`)
)

// plain rewrites one decoder message (without its line) that names a Go
// type or a YAML tag ("cannot unmarshal !!seq into []scenario.Stage") in
// plain words ("want a list, got a mapping"). Other messages are returned
// as they are.
func plain(msg string) string {
	if m := cannotRE.FindStringSubmatch(msg); m != nil {
		got := map[string]string{"map": "a mapping", "seq": "a list", "null": "nothing"}[m[1]]
		if got == "" {
			got = m[2]
			if m[1] == "str" {
				got = strconv.Quote(m[2])
			}
		}
		return "want " + typeWords(m[3]) + ", got " + got
	}
	if m := fieldRE.FindStringSubmatch(msg); m != nil {
		return "unknown field " + m[1]
	}
	if m := twiceRE.FindStringSubmatch(msg); m != nil {
		return m[1] + " is set twice"
	}
	if mapKeyRE.MatchString(msg) {
		return "keys must be plain names"
	}
	return msg
}

// typeWords names what a Go type holds.
func typeWords(t string) string {
	t = strings.TrimLeft(t, "*")
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case intTypeRE.MatchString(t):
		return "an integer"
	case floatTypeRE.MatchString(t):
		return "a number"
	case strings.HasSuffix(t, ".Duration"):
		return `a duration with a unit, like "30s"`
	}
	return "a mapping"
}

// TextIn is Text with lines for an error decoding doc, a syntax error
// placed on its line by Locate.
func TextIn(doc []byte, err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return Text(err, true)
	}
	if m := Locate(doc, err); m.Line > 0 {
		return "line " + strconv.Itoa(m.Line) + ": " + m.Text
	}
	return Text(err, true)
}

// maxLocate bounds the search for a syntax error's line: the lines after
// the reported one that are tried, the document's size, and the bytes
// parsed in all (a few hundred milliseconds at most).
const (
	maxLocateLines  = 5000
	maxLocateBytes  = 4 << 20
	maxLocateParsed = 32 << 20
)

// Locate finds the line of a syntax error in doc, for err as the decoder
// returned it from doc. go-yaml reports a structural error ("did not find
// expected key") at the line where the block that holds the mistake
// began, which may be a comment or a key many lines above it. The mistake
// is on the first line whose addition makes the document fail the same
// way, so Locate parses the growing prefixes of doc from the reported line
// on and returns that line, with a hint to check the indentation there. A
// type error, or an error no prefix reproduces, keeps its line.
func Locate(doc []byte, err error) Message {
	m := Split(err.Error())
	var te *yaml.TypeError
	if errors.As(err, &te) || m.Line == 0 || len(doc) > maxLocateBytes {
		return m
	}
	lines := bytes.SplitAfter(doc, []byte("\n"))
	parsed := 0
	for k := max(m.Line, 1); k <= len(lines) && k <= m.Line+maxLocateLines && parsed < maxLocateParsed; k++ {
		prefix := bytes.Join(lines[:k], nil)
		parsed += len(prefix)
		var n yaml.Node
		perr := yaml.Unmarshal(prefix, &n)
		if perr == nil {
			continue
		}
		if p := Split(perr.Error()); p.Text == m.Text {
			if k == m.Line {
				return m
			}
			return Message{Line: k, Text: fmt.Sprintf("%s: check the indentation near line %d (the block it breaks begins at line %d)", m.Text, k, m.Line)}
		}
	}
	return m
}
