package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
)

// parseNormalizer reads a tokenizer.json normalizer: the Unicode
// normalization forms, Lowercase, Strip, Prepend, Replace and Sequence
// (what LLM tokenizers use). field names it in errors.
func parseNormalizer(raw json.RawMessage, field string) (func(string) string, error) {
	identity := func(s string) string { return s }
	if len(raw) == 0 || string(raw) == "null" {
		return identity, nil
	}
	var n struct {
		Type        string            `json:"type"`
		Normalizers []json.RawMessage `json:"normalizers"`
		Prepend     string            `json:"prepend"`
		Pattern     *patternSpec      `json:"pattern"`
		Content     string            `json:"content"`
		StripLeft   bool              `json:"strip_left"`
		StripRight  bool              `json:"strip_right"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("%s: want an object with a type", field)
	}
	switch n.Type {
	case "NFC":
		return norm.NFC.String, nil
	case "NFD":
		return norm.NFD.String, nil
	case "NFKC":
		return norm.NFKC.String, nil
	case "NFKD":
		return norm.NFKD.String, nil
	case "Lowercase":
		return strings.ToLower, nil
	case "Strip":
		return func(s string) string {
			if n.StripLeft {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if n.StripRight {
				s = strings.TrimRightFunc(s, unicode.IsSpace)
			}
			return s
		}, nil
	case "Prepend":
		return func(s string) string {
			if s == "" {
				return s
			}
			return n.Prepend + s
		}, nil
	case "Replace":
		if n.Pattern == nil {
			return nil, fmt.Errorf("%s: Replace needs a pattern", field)
		}
		if n.Pattern.String != nil {
			old := *n.Pattern.String
			return func(s string) string { return strings.ReplaceAll(s, old, n.Content) }, nil
		}
		re, err := n.Pattern.compile(field + ".pattern")
		if err != nil {
			return nil, err
		}
		return func(s string) string {
			out, err := re.Replace(s, strings.ReplaceAll(n.Content, "$", "$$"), -1, -1)
			if err != nil {
				return s
			}
			return out
		}, nil
	case "Sequence":
		var fs []func(string) string
		for i, sub := range n.Normalizers {
			f, err := parseNormalizer(sub, fmt.Sprintf("%s.normalizers[%d]", field, i))
			if err != nil {
				return nil, err
			}
			fs = append(fs, f)
		}
		return func(s string) string {
			for _, f := range fs {
				s = f(s)
			}
			return s
		}, nil
	}
	return nil, fmt.Errorf("%s: type %q is not supported (NFC, NFD, NFKC, NFKD, Lowercase, Strip, Prepend, Replace and Sequence are)", field, n.Type)
}

// patternSpec is a Split or Replace pattern: a literal string or a regular
// expression (Oniguruma syntax in Hugging Face; regexp2 reads the patterns
// LLM tokenizers use, lookaheads included).
type patternSpec struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

func (p *patternSpec) compile(field string) (*regexp2.Regexp, error) {
	if p.Regex == nil {
		return nil, fmt.Errorf("%s: want String or Regex", field)
	}
	re, err := regexp2.Compile(*p.Regex, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return re, nil
}

// preTokenizer cuts pieces into smaller pieces; the model never merges
// across them.
type preTokenizer interface {
	split(pieces []string) []string
}

// gpt2Pattern is the pre-tokenization pattern of a ByteLevel pre-tokenizer
// with use_regex (GPT-2's).
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// whitespacePattern is the Whitespace pre-tokenizer's `\w+|[^\w\s]+`
// with \w spelt as Rust's regex crate has it (alphabetic, marks, decimal
// and letter numbers, connector punctuation, joiners): .NET's \w, which
// regexp2 follows, leaves out spacing marks and letter numbers.
const whitespacePattern = `[\p{L}\p{M}\p{Nd}\p{Nl}\p{Pc}\u200c\u200d]+|[^\p{L}\p{M}\p{Nd}\p{Nl}\p{Pc}\u200c\u200d\s]+`

// parsePreTokenizer reads a tokenizer.json pre_tokenizer into a list of
// steps; byteLevel reports a ByteLevel step, which spells the pieces in the
// byte-level alphabet for the model.
func parsePreTokenizer(raw json.RawMessage, field string) (steps []preTokenizer, byteLevel bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	var p struct {
		Type             string            `json:"type"`
		PreTokenizers    []json.RawMessage `json:"pretokenizers"`
		AddPrefixSpace   *bool             `json:"add_prefix_space"`
		UseRegex         *bool             `json:"use_regex"`
		Pattern          *patternSpec      `json:"pattern"`
		Behavior         string            `json:"behavior"`
		Invert           bool              `json:"invert"`
		IndividualDigits bool              `json:"individual_digits"`
		Replacement      string            `json:"replacement"`
		PrependScheme    string            `json:"prepend_scheme"`
		Split            *bool             `json:"split"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, false, fmt.Errorf("%s: want an object with a type", field)
	}
	switch p.Type {
	case "Sequence":
		for i, sub := range p.PreTokenizers {
			s, bl, err := parsePreTokenizer(sub, fmt.Sprintf("%s.pretokenizers[%d]", field, i))
			if err != nil {
				return nil, false, err
			}
			steps = append(steps, s...)
			byteLevel = byteLevel || bl
		}
		return steps, byteLevel, nil
	case "ByteLevel":
		if p.AddPrefixSpace != nil && *p.AddPrefixSpace {
			steps = append(steps, prefixSpace{})
		}
		if p.UseRegex == nil || *p.UseRegex {
			steps = append(steps, regexSplit{re: regexp2.MustCompile(gpt2Pattern, regexp2.None), behavior: "Isolated"})
		}
		return steps, true, nil
	case "Split":
		if p.Pattern == nil {
			return nil, false, fmt.Errorf("%s: Split needs a pattern", field)
		}
		b, err := behavior(p.Behavior, field)
		if err != nil {
			return nil, false, err
		}
		if p.Pattern.String != nil {
			return []preTokenizer{literalSplit{sep: *p.Pattern.String, behavior: b, invert: p.Invert}}, false, nil
		}
		re, err := p.Pattern.compile(field + ".pattern")
		if err != nil {
			return nil, false, err
		}
		return []preTokenizer{regexSplit{re: re, behavior: b, invert: p.Invert}}, false, nil
	case "Digits":
		b := "Contiguous"
		if p.IndividualDigits {
			b = "Isolated"
		}
		return []preTokenizer{funcSplit{match: unicode.IsNumber, behavior: b}}, false, nil
	case "Punctuation":
		b, err := behavior(p.Behavior, field)
		if err != nil {
			return nil, false, err
		}
		return []preTokenizer{funcSplit{match: unicode.IsPunct, behavior: b}}, false, nil
	case "Whitespace":
		return []preTokenizer{regexSplit{re: regexp2.MustCompile(whitespacePattern, regexp2.None), behavior: "Removed", invert: true}}, false, nil
	case "WhitespaceSplit":
		return []preTokenizer{funcSplit{match: unicode.IsSpace, behavior: "Removed"}}, false, nil
	case "Metaspace":
		m := metaspace{replacement: p.Replacement, scheme: p.PrependScheme, splits: p.Split == nil || *p.Split}
		if m.replacement == "" {
			m.replacement = "▁"
		}
		if m.scheme == "" {
			m.scheme = "always"
			if p.AddPrefixSpace != nil && !*p.AddPrefixSpace {
				m.scheme = "never"
			}
		}
		return []preTokenizer{m}, false, nil
	}
	return nil, false, fmt.Errorf("%s: type %q is not supported (ByteLevel, Split, Digits, Punctuation, Whitespace, WhitespaceSplit, Metaspace and Sequence are)", field, p.Type)
}

func behavior(b, field string) (string, error) {
	switch b {
	case "Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous":
		return b, nil
	case "":
		return "Isolated", nil
	}
	return "", fmt.Errorf("%s: behavior %q is not one of Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous", field, b)
}

// span is a part of a piece: a match of the split pattern, or the text
// between two matches.
type span struct {
	start, end int // byte offsets
	match      bool
}

// cut splits piece by its spans according to behavior, as Hugging Face's
// SplitDelimiterBehavior does.
func cut(out []string, piece string, spans []span, behavior string, invert bool) []string {
	if invert {
		for i := range spans {
			spans[i].match = !spans[i].match
		}
	}
	switch behavior {
	case "Removed":
		for _, s := range spans {
			if !s.match {
				out = append(out, piece[s.start:s.end])
			}
		}
	case "Isolated":
		for _, s := range spans {
			out = append(out, piece[s.start:s.end])
		}
	case "MergedWithPrevious":
		start := 0
		for _, s := range spans {
			if s.match {
				out = append(out, piece[start:s.end])
				start = s.end
			}
		}
		if start < len(piece) {
			out = append(out, piece[start:])
		}
	case "MergedWithNext":
		start := 0
		for _, s := range spans {
			if s.match && s.start > start {
				out = append(out, piece[start:s.start])
				start = s.start
			}
		}
		if start < len(piece) {
			out = append(out, piece[start:])
		}
	case "Contiguous":
		for i := 0; i < len(spans); {
			j := i + 1
			for j < len(spans) && spans[j].match == spans[i].match {
				j++
			}
			out = append(out, piece[spans[i].start:spans[j-1].end])
			i = j
		}
	}
	return out
}

// regexSplit splits on the matches of a regular expression.
type regexSplit struct {
	re       *regexp2.Regexp
	behavior string
	invert   bool
}

func (r regexSplit) split(pieces []string) []string {
	out := make([]string, 0, len(pieces))
	var spans []span
	for _, p := range pieces {
		spans = spans[:0]
		runes := []rune(p)
		p = string(runes) // what the offsets index (invalid UTF-8 became U+FFFD)
		// regexp2 reports rune offsets: offs maps them to bytes.
		offs := make([]int, len(runes)+1)
		for i, r := range runes {
			offs[i+1] = offs[i] + utf8.RuneLen(r)
		}
		prev := 0
		m, err := r.re.FindRunesMatch(runes)
		for err == nil && m != nil {
			if m.Length > 0 {
				s, e := offs[m.Index], offs[m.Index+m.Length]
				if s > prev {
					spans = append(spans, span{prev, s, false})
				}
				spans = append(spans, span{s, e, true})
				prev = e
			}
			m, err = r.re.FindNextMatch(m)
		}
		if prev < len(p) {
			spans = append(spans, span{prev, len(p), false})
		}
		out = cut(out, p, spans, r.behavior, r.invert)
	}
	return out
}

// literalSplit splits on a literal string.
type literalSplit struct {
	sep      string
	behavior string
	invert   bool
}

func (l literalSplit) split(pieces []string) []string {
	out := make([]string, 0, len(pieces))
	for _, p := range pieces {
		var spans []span
		prev := 0
		for l.sep != "" {
			i := strings.Index(p[prev:], l.sep)
			if i < 0 {
				break
			}
			if i > 0 {
				spans = append(spans, span{prev, prev + i, false})
			}
			spans = append(spans, span{prev + i, prev + i + len(l.sep), true})
			prev += i + len(l.sep)
		}
		if prev < len(p) {
			spans = append(spans, span{prev, len(p), false})
		}
		out = cut(out, p, spans, l.behavior, l.invert)
	}
	return out
}

// funcSplit splits on characters for which match is true, each one a
// match span (Contiguous joins neighbouring ones).
type funcSplit struct {
	match    func(rune) bool
	behavior string
}

func (f funcSplit) split(pieces []string) []string {
	out := make([]string, 0, len(pieces))
	for _, p := range pieces {
		var spans []span
		prev := 0
		for i, r := range p {
			if !f.match(r) {
				continue
			}
			if i > prev {
				spans = append(spans, span{prev, i, false})
			}
			e := i + utf8.RuneLen(r)
			if r == utf8.RuneError {
				e = i + 1
			}
			spans = append(spans, span{i, e, true})
			prev = e
		}
		if prev < len(p) {
			spans = append(spans, span{prev, len(p), false})
		}
		out = cut(out, p, spans, f.behavior, false)
	}
	return out
}

// prefixSpace is ByteLevel's add_prefix_space: a piece not starting with a
// space gets one.
type prefixSpace struct{}

func (prefixSpace) split(pieces []string) []string {
	for i, p := range pieces {
		if p != "" && !strings.HasPrefix(p, " ") {
			pieces[i] = " " + p
		}
	}
	return pieces
}

// metaspace replaces spaces with the replacement character, prepends one
// (always, or to the text's first piece only), and splits before each.
type metaspace struct {
	replacement string
	scheme      string // always | first | never
	splits      bool
}

func (m metaspace) split(pieces []string) []string {
	out := make([]string, 0, len(pieces))
	for i, p := range pieces {
		p = strings.ReplaceAll(p, " ", m.replacement)
		if (m.scheme == "always" || (m.scheme == "first" && i == 0)) && !strings.HasPrefix(p, m.replacement) {
			p = m.replacement + p
		}
		if !m.splits {
			out = append(out, p)
			continue
		}
		out = append(out, literalSplit{sep: m.replacement, behavior: "MergedWithNext"}.split([]string{p})...)
	}
	return out
}
