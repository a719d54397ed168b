package client

import "encoding/binary"

// The chunk scanner: the facts a chunk holds (chunkScan), read in one pass
// over its bytes without building any value, for the chunks every engine
// sends by the thousand. It understands the members the client measures
// (choices[].delta.{content,reasoning,reasoning_content,tool_calls},
// choices[].text, choices[].finish_reason, usage, error, and llama.cpp's
// timings.{cache_n,draft_n,draft_n_accepted}) and checks the
// rest is well-formed JSON while skipping it. Whatever it does not
// understand exactly as the full decoder would (an escaped or
// case-folded member name, a repeated member, a number where a string
// belongs, an in-band error, invalid JSON) makes it give up, and the
// chunk goes to the full decoder (decodeFull): the scanner either agrees
// with the decoder or declines. FuzzScanMatchesDecoder holds it to that.

// maxScanDepth bounds the nesting the scanner follows inside skipped
// values; deeper chunks go to the full decoder.
const maxScanDepth = 32

// chunkScanner walks one chunk. It is a value on the caller's stack.
type chunkScanner struct {
	b    []byte
	i    int
	last textSpan // the last text member read
}

// textSpan is where a text member's string lies in a chunk, quotes
// included, and which fact it feeds; kind 0 for none.
type textSpan struct {
	from, to int
	kind     textKind
}

// textKind says which fact a text member feeds.
type textKind uint8

const (
	noText      textKind = iota
	contentText          // content, text, a tool call's name or arguments: the answer
	reasonText           // reasoning, reasoning_content
)

// scanChunk returns the facts of chunk v, or ok=false when the full
// decoder must decide (see above). finish refers to v.
//
// memo, when not nil, carries what one chunk of a stream teaches the
// next: the bytes of its top-level members before the first one read
// (id, object, created, model, which most engines write first and repeat
// unchanged through a stream). A chunk that begins with those bytes is
// read from there: the scanner's state at that point depends on them
// only, and they were checked in the chunk that set the memo.
func scanChunk(v []byte, memo *[]byte) (out chunkScan, last textSpan, ok bool) {
	s := chunkScanner{b: v}
	out.usage = wireUsage{PromptTokens: usageAbsent, CompletionTokens: usageAbsent}
	out.timings = absentTimings
	resumed := memo != nil && len(*memo) > 0 && len(v) > len(*memo) && string(v[:len(*memo)]) == string(*memo)
	mark := -1
	if resumed {
		s.i = len(*memo)
		ok = s.members(topNames, s.topMember(&out), nil)
	} else {
		ok = s.top(&out, &mark)
	}
	if !ok {
		return chunkScan{}, textSpan{}, false
	}
	s.ws()
	if s.i != len(s.b) {
		return chunkScan{}, textSpan{}, false
	}
	out.hasUsage = out.usage.PromptTokens != usageAbsent || out.usage.CompletionTokens != usageAbsent
	if memo != nil && !resumed && mark >= minMemo && mark <= maxMemo {
		*memo = append((*memo)[:0], v[:mark]...)
	}
	return out, s.last, true
}

// chunkTemplate is the last chunk of a stream with its last text member
// emptied, and what that chunk says without the member: a chunk equal to
// it but for that one string (the next token of the same stream, as a
// rule) says the same plus what its string adds, so it is read with two
// comparisons and a scan of the string. Replacing one JSON string with
// another leaves a valid document with the same members, and a text
// member only counts by being empty or not, so the facts follow exactly.
type chunkTemplate struct {
	b      []byte    // the chunk, its text member emptied to ""
	at     int       // where that "" starts in b
	kind   textKind  // the fact it feeds; noText: no template
	base   chunkScan // b's facts (finish refers to b)
	misses int       // chunks in a row that did not fit
}

// maxTemplate bounds a template: longer chunks are read in full.
const maxTemplate = 4096

// match sets *out to v's facts when v fits the template.
func (t *chunkTemplate) match(v []byte, out *chunkScan) bool {
	if t.kind == noText {
		return false
	}
	tail := len(t.b) - t.at - 2
	if len(v) < t.at+2+tail || string(v[:t.at]) != string(t.b[:t.at]) || string(v[len(v)-tail:]) != string(t.b[t.at+2:]) {
		t.misses++
		return false
	}
	s := chunkScanner{b: v[:len(v)-tail], i: t.at}
	if !s.str() || s.i != len(v)-tail {
		t.misses++
		return false
	}
	t.misses = 0
	*out = t.base
	if s.i-t.at > 2 {
		out.tokens = true
		if t.kind == contentText {
			out.content = true
		}
	}
	return true
}

// learn makes v, just read in full with last as its last text member,
// the template; after two chunks in a row that did not fit, a stream is
// taken not to repeat itself and learning stops.
func (t *chunkTemplate) learn(v []byte, last textSpan) {
	if t.misses >= 2 || last.kind == noText || len(v) > maxTemplate {
		t.kind = noText
		return
	}
	t.b = append(append(append(t.b[:0], v[:last.from]...), '"', '"'), v[last.to:]...)
	base, _, ok := scanChunk(t.b, nil)
	if !ok { // cannot happen: the same document with another string
		t.kind = noText
		return
	}
	t.at, t.kind, t.base = last.from, last.kind, base
}

// reset forgets the template, keeping its buffer.
func (t *chunkTemplate) reset() { *t = chunkTemplate{b: t.b[:0]} }

// The prefix worth keeping in a memo: shorter gains nothing, longer is
// not a chunk's usual header.
const (
	minMemo = 16
	maxMemo = 1024
)

// Member names the scanner reads, by object.
var (
	topNames      = []string{"choices", "usage", "error", "timings"}
	choiceNames   = []string{"delta", "text", "finish_reason"}
	deltaNames    = []string{"content", "reasoning", "reasoning_content", "tool_calls"}
	toolNames     = []string{"function"}
	functionNames = []string{"name", "arguments"}
	usageNames    = []string{"prompt_tokens", "completion_tokens", "prompt_tokens_details", "completion_tokens_details"}
	cachedNames   = []string{"cached_tokens"}
	reasonNames   = []string{"reasoning_tokens"}
	timingNames   = []string{"cache_n", "draft_n", "draft_n_accepted"}
)

// object walks an object whose opening brace is at s.i, calling member
// with the index in names of each member it reads (the value then starts
// at s.i) and skipping the others. A member read twice, or a name that
// the decoder would match without being one of names exactly (it matches
// names case-insensitively and unescaped), fails the walk.
func (s *chunkScanner) object(names []string, member func(k int) bool) bool {
	if !s.eat('{') {
		return false
	}
	s.ws()
	if s.eat('}') {
		return true
	}
	return s.members(names, member, nil)
}

// members walks an object's members from the name at s.i to the closing
// brace (see object). When mark is not nil, it is set to where the first
// member read begins, when every member before it was skipped.
func (s *chunkScanner) members(names []string, member func(k int) bool, mark *int) bool {
	var seen uint8
	for {
		at := s.i
		name, ok := s.name()
		if !ok {
			return false
		}
		s.ws()
		if !s.eat(':') {
			return false
		}
		s.ws()
		k, ok := lookup(names, name)
		switch {
		case !ok:
			return false
		case k < 0:
			if !s.skip(0) {
				return false
			}
		case seen&(1<<k) != 0:
			return false
		default:
			if mark != nil && seen == 0 && *mark < 0 {
				*mark = at
			}
			seen |= 1 << k
			if !member(k) {
				return false
			}
		}
		s.ws()
		if s.eat('}') {
			return true
		}
		if !s.eat(',') {
			return false
		}
		s.ws()
	}
}

// lookup returns the index of name in names, or −1 for a name the
// decoder ignores too; ok is false for a name it would take for one of
// names without being it (another case).
func lookup(names []string, name []byte) (k int, ok bool) {
	for i, n := range names {
		if len(n) != len(name) {
			continue
		}
		if string(name) == n {
			return i, true
		}
		if foldEqual(name, n) {
			return -1, false
		}
	}
	return -1, true
}

// foldEqual reports whether ASCII b and n are equal ignoring case.
func foldEqual(b []byte, n string) bool {
	for i := range b {
		x, y := b[i], n[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// name reads a member name: a string of printable ASCII without escapes
// (anything else may fold onto a name the decoder reads).
func (s *chunkScanner) name() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
		s.i++
	}
	return nil, false
}

func (s *chunkScanner) top(out *chunkScan, mark *int) bool {
	s.ws()
	if !s.eat('{') {
		return false
	}
	s.ws()
	if s.eat('}') {
		return true
	}
	return s.members(topNames, s.topMember(out), mark)
}

// topMember reads the top-level member names[k] into out.
func (s *chunkScanner) topMember(out *chunkScan) func(k int) bool {
	return func(k int) bool {
		switch k {
		case 0: // choices
			if s.null() {
				return true
			}
			return s.array(func() bool { return s.choice(out) })
		case 1: // usage
			if s.null() {
				return true
			}
			return s.usage(&out.usage)
		case 2: // error: an in-band error is the decoder's to report
			return s.null()
		default: // timings (llama.cpp)
			if s.null() {
				return true
			}
			return s.timings(&out.timings)
		}
	}
}

func (s *chunkScanner) choice(out *chunkScan) bool {
	var content, reasoning bool
	ok := s.object(choiceNames, func(k int) bool {
		switch k {
		case 0: // delta
			if s.null() {
				return true
			}
			return s.delta(&content, &reasoning)
		case 1: // text
			return s.text(contentText, &content)
		default: // finish_reason
			if s.null() {
				return true
			}
			v, ok := s.plainString()
			if ok && len(v) > 0 && out.finish == nil {
				out.finish = v
			}
			return ok
		}
	})
	if !ok {
		return false
	}
	if content {
		out.tokens, out.content = true, true
	} else if reasoning {
		out.tokens = true
	}
	return true
}

func (s *chunkScanner) delta(content, reasoning *bool) bool {
	return s.object(deltaNames, func(k int) bool {
		switch k {
		case 0: // content
			return s.text(contentText, content)
		case 1, 2: // reasoning, reasoning_content
			return s.text(reasonText, reasoning)
		default: // tool_calls
			if s.null() {
				return true
			}
			return s.array(func() bool {
				return s.object(toolNames, func(int) bool { // function
					if s.null() {
						return true
					}
					return s.object(functionNames, func(int) bool { return s.text(contentText, content) })
				})
			})
		}
	})
}

// text reads a string-or-null member and sets *nonEmpty when it holds
// text; a string is noted as the last text member read.
func (s *chunkScanner) text(kind textKind, nonEmpty *bool) bool {
	if s.null() {
		return true
	}
	start := s.i
	if !s.str() {
		return false
	}
	if s.i-start > 2 {
		*nonEmpty = true
	}
	s.last = textSpan{from: start, to: s.i, kind: kind}
	return true
}

// plainString reads an ASCII string without escapes and returns its bytes.
func (s *chunkScanner) plainString() ([]byte, bool) {
	start := s.i
	if !s.str() {
		return nil, false
	}
	v := s.b[start+1 : s.i-1]
	for _, c := range v {
		if c == '\\' || c >= 0x80 { // the decoder unescapes, and replaces invalid UTF-8
			return nil, false
		}
	}
	return v, true
}

func (s *chunkScanner) usage(u *wireUsage) bool {
	return s.object(usageNames, func(k int) bool {
		switch k {
		case 0:
			return s.count(&u.PromptTokens)
		case 1:
			return s.count(&u.CompletionTokens)
		case 2:
			if s.null() {
				return true
			}
			return s.object(cachedNames, func(int) bool { return s.count(&u.PromptTokensDetails.CachedTokens) })
		default:
			if s.null() {
				return true
			}
			return s.object(reasonNames, func(int) bool { return s.count(&u.CompletionTokensDetails.ReasoningTokens) })
		}
	})
}

// timings reads llama.cpp's timings object: the counts the client keeps,
// the rest (times and rates, which are floats) skipped.
func (s *chunkScanner) timings(t *wireTimings) bool {
	return s.object(timingNames, func(k int) bool {
		switch k {
		case 0:
			return s.count(&t.CacheN)
		case 1:
			return s.count(&t.DraftN)
		default:
			return s.count(&t.DraftNAccepted)
		}
	})
}

// count reads an integer-or-null member into *n (null leaves it).
func (s *chunkScanner) count(n *int) bool {
	if s.null() {
		return true
	}
	neg := s.eat('-')
	start := s.i
	var v int
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		v = v*10 + int(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	// No fraction, exponent or leading zero; at most 18 digits, so v
	// cannot overflow.
	if digits == 0 || digits > 18 || (digits > 1 && s.b[start] == '0') {
		return false
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return false
	}
	if neg {
		v = -v
	}
	*n = v
	return true
}

// array walks an array whose opening bracket is at s.i, calling elem at
// each element. A null element fails the walk (the decoder would take it
// for an empty one; the scanner leaves that to it).
func (s *chunkScanner) array(elem func() bool) bool {
	if !s.eat('[') {
		return false
	}
	s.ws()
	if s.eat(']') {
		return true
	}
	for {
		if s.i >= len(s.b) || s.b[s.i] != '{' || !elem() {
			return false
		}
		s.ws()
		if s.eat(']') {
			return true
		}
		if !s.eat(',') {
			return false
		}
		s.ws()
	}
}

// skip passes over one well-formed JSON value at s.i.
func (s *chunkScanner) skip(depth int) bool {
	if s.i >= len(s.b) || depth > maxScanDepth {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.str()
	case c == '{':
		s.i++
		s.ws()
		if s.eat('}') {
			return true
		}
		for {
			if s.i >= len(s.b) || s.b[s.i] != '"' || !s.str() {
				return false
			}
			s.ws()
			if !s.eat(':') {
				return false
			}
			s.ws()
			if !s.skip(depth + 1) {
				return false
			}
			s.ws()
			if s.eat('}') {
				return true
			}
			if !s.eat(',') {
				return false
			}
			s.ws()
		}
	case c == '[':
		s.i++
		s.ws()
		if s.eat(']') {
			return true
		}
		for {
			if !s.skip(depth + 1) {
				return false
			}
			s.ws()
			if s.eat(']') {
				return true
			}
			if !s.eat(',') {
				return false
			}
			s.ws()
		}
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		return s.number()
	}
}

// strByte classifies string bytes: 1 for those that end the fast run
// (the quote, the backslash, control characters).
var strByte = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = 1
	}
	t['"'], t['\\'] = 1, 1
	return t
}()

const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// str passes over a well-formed string at s.i.
func (s *chunkScanner) str() bool {
	b := s.b
	if s.i >= len(b) || b[s.i] != '"' {
		return false
	}
	i := s.i + 1
	for i < len(b) {
		// Eight bytes at a time while none is special (SWAR: a byte below
		// 0x20, a quote or a backslash sets its high bit in m).
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			m := (w-0x20*swarLo)&^w | (w^0x22*swarLo-swarLo)&^(w^0x22*swarLo) | (w^0x5c*swarLo-swarLo)&^(w^0x5c*swarLo)
			if m&swarHi != 0 {
				break
			}
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		if strByte[c] == 0 {
			i++
			continue
		}
		switch {
		case c == '"':
			s.i = i + 1
			return true
		case c < 0x20:
			return false
		}
		// An escape.
		if i+1 >= len(b) {
			return false
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(b) || !hex4(b[i+2:i+6]) {
				return false
			}
			i += 6
		default:
			return false
		}
	}
	return false
}

func hex4(h []byte) bool {
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// number passes over a number in JSON's grammar.
func (s *chunkScanner) number() bool {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	s.i = i
	return true
}

func (s *chunkScanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// null passes over a null at s.i and reports whether there was one.
func (s *chunkScanner) null() bool {
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

func (s *chunkScanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// ws passes over JSON whitespace.
func (s *chunkScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}
