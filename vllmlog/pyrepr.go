package vllmlog

import (
	"strconv"
	"strings"
)

// vLLM prints its arguments as Python reprs: "non-default args: {'model':
// 'openai/gpt-oss-20b', 'max_model_len': 131072}" and the engine's
// "with config: model='…', tensor_parallel_size=1, compilation_config={…}".
// These helpers take such text apart without evaluating it: they split at
// the top level (outside quotes, brackets and <enum: reprs>) and keep each
// value as printed. Truncated or garbled text yields what could be read.

// item is one key and its value as printed.
type item struct{ key, value string }

// splitTop splits s at sep where it is outside quotes and brackets.
func splitTop(s string, sep byte) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '[' || c == '{' || c == '(' || (c == '<' && i+1 < len(s) && isLetter(s[i+1])):
			depth++
		case (c == ']' || c == '}' || c == ')' || c == '>') && depth > 0:
			depth--
		case c == sep && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if rest := s[start:]; strings.TrimSpace(rest) != "" || len(out) > 0 {
		out = append(out, rest)
	}
	return out
}

func isLetter(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }

// pyDict reads a dict repr, "{'a': 1, 'b': [2]}", into its items in order.
// A missing closing brace is tolerated.
func pyDict(s string) []item {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") {
		return nil
	}
	s = strings.TrimSuffix(s[1:], "}")
	var out []item
	for _, part := range splitTop(s, ',') {
		kv := splitTop(part, ':')
		if len(kv) < 2 {
			continue
		}
		key := pyString(strings.TrimSpace(kv[0]))
		value := strings.TrimSpace(part[len(kv[0])+1:])
		if key != "" {
			out = append(out, item{key, value})
		}
	}
	return out
}

// pyKeywords reads "a='x', b=1, c={…}" into its items in order.
func pyKeywords(s string) []item {
	var out []item
	for _, part := range splitTop(s, ',') {
		part = strings.TrimSpace(part)
		eq := strings.IndexByte(part, '=')
		if eq <= 0 {
			continue
		}
		key := part[:eq]
		if strings.ContainsAny(key, " '\"{[(") {
			continue
		}
		out = append(out, item{key, strings.TrimSpace(part[eq+1:])})
	}
	return out
}

// lookup returns the value of key in items.
func lookup(items []item, key string) (string, bool) {
	for _, it := range items {
		if it.key == key {
			return it.value, true
		}
	}
	return "", false
}

// pyString unquotes a string repr ('x' or "x"); other values are returned
// as they are.
func pyString(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
		inner := v[1 : len(v)-1]
		if strings.IndexByte(inner, '\\') < 0 {
			return inner
		}
		var b strings.Builder
		for i := 0; i < len(inner); i++ {
			if inner[i] == '\\' && i+1 < len(inner) {
				i++
			}
			b.WriteByte(inner[i])
		}
		return b.String()
	}
	return v
}

// pyInt reads an integer repr (also "8192.0").
func pyInt(v string) (int, bool) {
	v = strings.TrimSpace(v)
	if n, err := strconv.Atoi(v); err == nil {
		return n, true
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f == float64(int(f)) {
		return int(f), true
	}
	return 0, false
}

// pyFloat reads a number repr.
func pyFloat(v string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	return f, err == nil
}

// pyBool reads True or False.
func pyBool(v string) (value, ok bool) {
	switch strings.TrimSpace(v) {
	case "True", "true":
		return true, true
	case "False", "false":
		return false, true
	}
	return false, false
}

// pyList reads a list or tuple repr into its elements as printed.
func pyList(v string) []string {
	v = strings.TrimSpace(v)
	if len(v) < 2 || (v[0] != '[' && v[0] != '(') {
		return nil
	}
	v = strings.TrimRight(v[1:], "])")
	var out []string
	for _, e := range splitTop(v, ',') {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// pyEnum reads an enum repr, "<CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>",
// into its member name; other values are returned unquoted.
func pyEnum(v string) string {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "<") {
		v = strings.TrimPrefix(v, "<")
		if c := strings.IndexByte(v, ':'); c >= 0 {
			v = v[:c]
		}
		v = strings.TrimSuffix(v, ">")
		if d := strings.LastIndexByte(v, '.'); d >= 0 {
			v = v[d+1:]
		}
		return v
	}
	return pyString(v)
}
