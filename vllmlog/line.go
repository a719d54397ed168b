package vllmlog

import (
	"bytes"
	"strconv"
	"strings"
	"time"
)

// MaxLineBytes bounds one line. Longer lines (a megabyte-long config dump,
// a binary blob) are cut there and the rest of the line is skipped, so a
// line can never make the reader fail or grow without bound.
const MaxLineBytes = 4 << 20

// splitLines is a bufio.SplitFunc like bufio.ScanLines that never fails on
// a long line: a line longer than MaxLineBytes is returned cut at that
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
		case len(data) >= MaxLineBytes:
			s.skipping = true
			s.cut++
			return advance + len(data), data[:MaxLineBytes], nil
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
// escape sequences, a trailing CR, markdown quoting and code backticks.
func clean(s string) string {
	if strings.IndexByte(s, 0x1b) >= 0 {
		s = stripANSI(s)
	}
	s = strings.TrimSpace(s)
	for {
		switch {
		case strings.HasPrefix(s, ">"):
			s = strings.TrimSpace(s[1:])
			continue
		case strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`"):
			s = strings.TrimSpace(strings.Trim(s, "`"))
			continue
		}
		return s
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

// levels are the record levels vLLM's formatter prints.
var levels = []string{"INFO", "WARNING", "ERROR", "DEBUG", "CRITICAL"}

// parseRecord takes a cleaned line apart: the "(APIServer pid=90)" prefix,
// then vLLM's "LEVEL MM-DD HH:MM:SS [file.py:NNN] message", uvicorn's
// "INFO:     …", Python logging's "YYYY-MM-DD HH:MM:SS,mmm - LEVEL - …" or
// PyTorch's "[W1128 11:47:31.40 socket.cpp:209] …". Anything else is a
// record with no level whose message is the line.
func parseRecord(s string, year int) record {
	var r record
	if strings.HasPrefix(s, "(") {
		if end := strings.IndexByte(s, ')'); end > 0 && strings.Contains(s[:end], "pid=") {
			head := s[1:end]
			if sp := strings.IndexByte(head, ' '); sp > 0 {
				r.proc = head[:sp]
			}
			s = strings.TrimSpace(s[end+1:])
		}
	}
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
		if len(rest) >= 14 && rest[2] == '-' && rest[5] == ' ' && rest[8] == ':' && rest[11] == ':' {
			r.level, r.stamp = lv, rest[:14]
			r.at = stampTime(r.stamp, year)
			rest = rest[14:]
			if k := strings.IndexByte(rest, ' '); k == 0 { // fractional seconds are not printed by vLLM but tolerated
				rest = rest[1:]
			} else if k > 0 && rest[0] == '.' {
				rest = rest[k+1:]
			}
			rest = strings.TrimLeft(rest, " ")
			if strings.HasPrefix(rest, "[") {
				if e := strings.IndexByte(rest, ']'); e > 0 {
					r.source = rest[1:e]
					rest = rest[e+1:]
				}
			}
			r.msg = strings.TrimSpace(rest)
			return r
		}
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
