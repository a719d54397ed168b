package vllmlog

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxLineBytes bounds one line. Longer lines (a megabyte-long config dump,
// a binary blob) are cut there and the rest of the line is skipped, so a
// line can never make the reader fail or grow without bound.
const maxLineBytes = 4 << 20

// splitLines is a bufio.SplitFunc like bufio.ScanLines that never fails on
// a long line: a line longer than maxLineBytes is returned cut at that
// length (with cut set) and the remainder of it is dropped.
type splitLines struct {
	skipping bool // inside the remainder of a cut line
	cut      int  // lines cut so far
}

func (s *splitLines) split(data []byte, atEOF bool) (advance int, token []byte, err error) {
	for {
		if atEOF && len(data) == 0 {
			return advance, nil, nil
		}
		i := bytes.IndexByte(data, '\n')
		if s.skipping {
			if i < 0 {
				return advance + len(data), nil, nil
			}
			s.skipping = false
			advance += i + 1
			data = data[i+1:]
			continue
		}
		switch {
		case i >= 0:
			return advance + i + 1, data[:i], nil
		case len(data) >= maxLineBytes:
			s.skipping = true
			s.cut++
			return advance + len(data), data[:maxLineBytes], nil
		case atEOF:
			return advance + len(data), data, nil
		}
		return advance, nil, nil
	}
}

// record is one log line taken apart.
type record struct {
	proc   string    // "APIServer", "EngineCore_DP0", … ("" without the prefix)
	level  string    // "INFO", "WARNING", "ERROR", … ("" for lines that are not log records)
	at     time.Time // zero when the line has no timestamp
	stamp  string    // the timestamp as printed, "11-28 11:58:41"
	source string    // "kv_cache_utils.py:1229" for vLLM records
	msg    string    // the message (the whole cleaned line when it is not a record)
	access bool      // a uvicorn access line (msg is what follows "INFO:")
}

// clean removes what pasting and terminals add around a log line: ANSI
// escape sequences (raw, or pasted as the text "^[[0;36m"), a trailing CR
// (raw, or pasted as "^M"), markdown quoting and code backticks, and the
// prefixes other programs write before the lines they pass on (see
// stripWrappers).
func clean(s string) string {
	if strings.IndexByte(s, 0x1b) >= 0 {
		s = stripANSI(s)
	}
	if strings.Contains(s, "^[") || strings.Contains(s, "^M") {
		s = stripCaretEscapes(s)
	}
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "```") || strings.HasPrefix(s, "~~~") {
		return "" // a markdown fence; its language tag is not log text
	}
	for {
		switch {
		case strings.HasPrefix(s, ">"):
			s = strings.TrimSpace(s[1:])
			continue
		case strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`"):
			s = strings.TrimSpace(strings.Trim(s, "`"))
			continue
		}
		return stripWrappers(s)
	}
}

// stripANSI removes CSI escape sequences (colours, cursor movement).
func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != 0x1b {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		i++ // a two-byte escape
	}
	return b.String()
}

// caretEscapeRe is an escape sequence as a terminal or a pager shows it
// when it is copied as text: "^[[0;36m", "^[[B", and the "^M" of a CR.
var caretEscapeRe = regexp.MustCompile(`\^\[\[[0-9;?]*[A-Za-z]|\^\[[@-Z\\-_]|\^M$`)

func stripCaretEscapes(s string) string {
	return caretEscapeRe.ReplaceAllString(s, "")
}

// wrapperRes are the prefixes other programs put before the lines they
// pass on: a CI system's table column ("| ") and ISO timestamp in brackets,
// docker's --timestamps, the systemd journal ("Dec 02 12:10:21 host
// prog[pid]: ", month names in any language) and torch.distributed's rank
// ("[rank0]: ").
var wrapperRes = []*regexp.Regexp{
	regexp.MustCompile(`^\|\s+`),
	regexp.MustCompile(`^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?Z?\]\s*`),
	regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?Z\s+`),
	regexp.MustCompile(`^\pL{3,4}\.? {1,2}\d{1,2} \d\d:\d\d:\d\d \S+ [\w.@/-]+\[\d+\]: `),
	regexp.MustCompile(`^\[rank\d+\]:\s?`),
}

// stripWrappers removes the wrapper prefixes, however many are stacked.
func stripWrappers(s string) string {
	for again := true; again; {
		again = false
		if s == "" || !(s[0] == '|' || s[0] == '[' || s[0] >= 0x80 || (s[0] >= '0' && s[0] <= '9') || (s[0] >= 'A' && s[0] <= 'Z')) {
			return s
		}
		for _, re := range wrapperRes {
			if loc := re.FindStringIndex(s); loc != nil {
				s, again = strings.TrimSpace(s[loc[1]:]), true
				break
			}
		}
	}
	return s
}

// levels are the record levels vLLM's formatter prints.
var levels = []string{"INFO", "WARNING", "ERROR", "DEBUG", "CRITICAL"}

// splitRecords cuts a line holding several records (a paste that lost its
// line breaks, or a record printed after a progress bar without a newline)
// into one string per record. A record begins with a level and a
// timestamp ("INFO 01-25 11:26:58"), after a process prefix when it has
// one ("(EngineCore_DP0 pid=10311) ERROR 10-25 11:17:27").
func splitRecords(s string) []string {
	var starts []int
	for _, lv := range levels {
		for from := 1; from < len(s); {
			k := strings.Index(s[from:], lv+" ")
			if k < 0 {
				break
			}
			k += from
			from = k + len(lv)
			if !stampAt(s, k+len(lv)+1) {
				continue
			}
			starts = append(starts, recordStart(s, k))
		}
	}
	if len(starts) == 0 {
		return nil
	}
	slices.Sort(starts)
	var out []string
	prev := 0
	for _, k := range starts {
		if k <= prev {
			continue
		}
		if head := strings.TrimSpace(s[prev:k]); head != "" {
			out = append(out, head)
		}
		prev = k
	}
	if len(out) == 0 {
		return nil
	}
	return append(out, strings.TrimSpace(s[prev:]))
}

// stampAt reports whether s holds "MM-DD HH:MM:SS" at i.
func stampAt(s string, i int) bool {
	if i+14 > len(s) {
		return false
	}
	t := s[i : i+14]
	return isDigits(t[0:2]) && t[2] == '-' && isDigits(t[3:5]) && t[5] == ' ' && isDigits(t[6:8]) && t[8] == ':' && isDigits(t[9:11]) && t[11] == ':' && isDigits(t[12:14])
}

// recordStart is where the record whose level is at k begins: at its
// "(Name pid=N) " prefix when one ends just before the level.
func recordStart(s string, k int) int {
	if k < 2 || s[k-1] != ' ' || s[k-2] != ')' {
		return k
	}
	open := strings.LastIndexByte(s[:k-2], '(')
	if open < 0 || !strings.Contains(s[open:k], " pid=") {
		if p := strings.Index(s[:k-2], " pid="); p > 0 && !strings.ContainsAny(s[:p], " ") {
			return 0 // the prefix lost its opening parenthesis at the line's start
		}
		return k
	}
	return open
}

// parseRecord takes a cleaned line apart: the "(APIServer pid=90)" prefix
// (its parenthesis may be lost at the start of a paste), then vLLM's
// "LEVEL MM-DD HH:MM:SS [file.py:NNN] message" (older versions print
// "file.py:NNN]" without the opening bracket; a paste may lose the level),
// uvicorn's "INFO:     …", Python logging's "YYYY-MM-DD HH:MM:SS,mmm -
// LEVEL - …" or PyTorch's "[W1128 11:47:31.40 socket.cpp:209] …". Anything
// else is a record with no level whose message is the line.
func parseRecord(s string, year int) record {
	var r record
	s = r.takeProc(s)
	r.msg = s
	for _, lv := range levels {
		if !strings.HasPrefix(s, lv) {
			continue
		}
		rest := s[len(lv):]
		if strings.HasPrefix(rest, ":") { // uvicorn
			r.level, r.msg, r.access = lv, strings.TrimSpace(rest[1:]), true
			return r
		}
		rest = strings.TrimLeft(rest, " ")
		if stampAt(rest, 0) {
			r.level = lv
			r.stampAndSource(rest, year)
			return r
		}
	}
	if stampAt(s, 0) && len(s) > 15 && strings.Contains(s[14:min(len(s), 80)], ".py:") {
		r.stampAndSource(s, year) // a paste that lost the level
		return r
	}
	// Python logging's default format (flashinfer and others).
	if len(s) > 26 && s[4] == '-' && s[10] == ' ' && strings.HasPrefix(s[23:], " - ") {
		rest := s[26:]
		for _, lv := range levels {
			if strings.HasPrefix(rest, lv+" - ") {
				r.level, r.stamp = lv, s[5:19]
				r.at = stampTime(r.stamp, year)
				r.msg = rest[len(lv)+3:]
				return r
			}
		}
	}
	// PyTorch's C++ logging: [W1128 11:47:31.402851082 socket.cpp:209] …
	if len(s) > 2 && s[0] == '[' && (s[1] == 'W' || s[1] == 'E') && len(s) > 7 && isDigits(s[2:6]) {
		if e := strings.IndexByte(s, ']'); e > 0 {
			r.level = map[byte]string{'W': "WARNING", 'E': "ERROR"}[s[1]]
			if f := strings.Fields(s[1:e]); len(f) == 3 {
				r.source = f[2]
			}
			r.msg = strings.TrimSpace(s[e+1:])
		}
	}
	return r
}

// takeProc removes and records a "(Name pid=N)" or "(Name rank=R pid=N)"
// prefix; its opening parenthesis may be missing at the start of a paste.
func (r *record) takeProc(s string) string {
	end := strings.IndexByte(s, ')')
	if end <= 0 || end > 120 {
		return s
	}
	head := s[:end]
	if !strings.Contains(head, "pid=") {
		return s
	}
	if head[0] == '(' {
		head = head[1:]
	} else if strings.IndexByte(head, '(') >= 0 {
		return s
	}
	if sp := strings.IndexByte(head, ' '); sp > 0 {
		r.proc = head[:sp]
	}
	return strings.TrimSpace(s[end+1:])
}

// stampAndSource reads "MM-DD HH:MM:SS[.fff] [file.py:N] message" (the
// source's opening bracket is optional).
func (r *record) stampAndSource(rest string, year int) {
	r.stamp = rest[:14]
	r.at = stampTime(r.stamp, year)
	rest = rest[14:]
	if k := strings.IndexByte(rest, ' '); k > 0 && rest[0] == '.' { // fractional seconds are not printed by vLLM but tolerated
		rest = rest[k:]
	}
	rest = strings.TrimLeft(rest, " ")
	if e := strings.IndexByte(rest, ']'); e > 0 && e < 80 {
		src := strings.TrimPrefix(rest[:e], "[")
		if !strings.ContainsAny(src, " [") && strings.Contains(src, ":") {
			r.source = src
			rest = rest[e+1:]
		}
	}
	r.msg = strings.TrimSpace(rest)
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// stampTime parses vLLM's "MM-DD HH:MM:SS" in the given year; the zero
// time when it is not a valid date.
func stampTime(s string, year int) time.Time {
	t, err := time.Parse("2006 01-02 15:04:05", strconv.Itoa(year)+" "+s)
	if err != nil {
		return time.Time{}
	}
	return t
}
