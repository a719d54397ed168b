// Package redact removes secrets from text before it is stored or printed:
// the API key and the values of configured headers, which a server may
// echo back in an error body ("invalid api key: Bearer sk-…"), an in-stream
// error or any other message, as they are or encoded.
//
// It consumes the secrets of a run and produces a Redactor whose String
// replaces each occurrence with "[REDACTED]": the secret's bytes, and
// every form a server or a proxy writes it in: escaped in a JSON string
// (Go's, Python's ASCII-only, with "\/"), URL-encoded (query and path,
// either case of hex), HTML-escaped, and base64 (standard and URL
// alphabets, at every alignment, so base64 of "user:KEY" for basic
// authentication loses the key whatever the user). A header value
// "Basic X" adds the decoded "user:password" and the password; "SCHEME
// TOKEN" adds the token. The client, the scraper and the run pass every
// message through one.
package redact

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"html"
	"html/template"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// Mark replaces a secret in redacted text.
const Mark = "[REDACTED]"

// minSecret is the shortest value treated as a secret: shorter header
// values ("1", "on") would redact ordinary words.
const minSecret = 4

// minBase64 is the shortest base64 run redacted: shorter runs of base64
// letters are ordinary words.
const minBase64 = 8

// Redactor replaces known secrets in text. The zero value (or nil) redacts
// nothing. It is safe for concurrent use.
type Redactor struct {
	r     *strings.Replacer
	forms []string // every form of every secret, longest first
}

// New returns a Redactor of the given secrets; empty and very short ones
// are ignored.
func New(secrets ...string) *Redactor {
	seen := map[string]bool{}
	var forms []string
	add := func(f string) {
		if !seen[f] && len(f) >= minSecret {
			seen[f] = true
			forms = append(forms, f)
		}
	}
	for _, s := range expand(secrets) {
		if len(s) < minSecret {
			continue
		}
		for _, f := range encodedForms(s) {
			add(f)
		}
	}
	if len(forms) == 0 {
		return &Redactor{}
	}
	// The longest first: a form that contains another is replaced whole.
	slices.SortStableFunc(forms, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Mark)
	}
	return &Redactor{r: strings.NewReplacer(pairs...), forms: forms}
}

// expand adds, for each header-like secret "SCHEME TOKEN", the token, and
// for "Basic B64", the decoded "user:password" and the password.
func expand(secrets []string) []string {
	out := slices.Clone(secrets)
	for _, s := range secrets {
		scheme, token, ok := strings.Cut(strings.TrimSpace(s), " ")
		if !ok {
			continue
		}
		token = strings.TrimSpace(token)
		out = append(out, token)
		if !strings.EqualFold(scheme, "basic") {
			continue
		}
		if dec, err := base64.StdEncoding.DecodeString(token); err == nil {
			out = append(out, string(dec))
			if _, pass, ok := strings.Cut(string(dec), ":"); ok {
				out = append(out, pass)
			}
		}
	}
	return out
}

// encodedForms returns the forms a server may write secret s in: s itself, its
// JSON, URL and HTML escapings, and the runs of base64 letters that encode
// its bytes at any alignment (standard and URL alphabets).
func encodedForms(s string) []string {
	forms := []string{s}
	for _, o := range []jsonStyle{{}, {html: true}, {ascii: true}, {slash: true}, {html: true, ascii: true}, {ascii: true, slash: true}} {
		forms = append(forms, jsonEscape(s, o))
	}
	for _, e := range []string{url.QueryEscape(s), url.PathEscape(s)} {
		forms = append(forms, e, lowerHex(e))
	}
	forms = append(forms, html.EscapeString(s), template.HTMLEscapeString(s))
	for r := range 3 {
		core := base64Core(s, r)
		if len(core) >= minBase64 {
			forms = append(forms, core, strings.NewReplacer("+", "-", "/", "_").Replace(core))
		}
	}
	return forms
}

// jsonStyle is how a JSON encoder escapes a string: Go's escapes <, > and
// & (html); Python's json.dumps escapes every non-ASCII rune (ascii); some
// escape "/" (slash).
type jsonStyle struct{ html, ascii, slash bool }

// jsonEscape returns s as the inside of a JSON string written in style o.
func jsonEscape(s string, o jsonStyle) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '/' && o.slash:
			b.WriteString(`\/`)
		case r < 0x20, o.html && (r == '<' || r == '>' || r == '&'), r == '\u2028' || r == '\u2029', r == utf8.RuneError:
			fmt.Fprintf(&b, `\u%04x`, r)
		case o.ascii && r > 0x7e:
			if r > 0xffff {
				r -= 0x10000
				fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// lowerHex lowers the hex digits of a URL escaping's %XX sequences.
func lowerHex(e string) string {
	b := []byte(e)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lower(b[i+1]), lower(b[i+2])
		}
	}
	return string(b)
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// base64Core returns the base64 letters that encode only bytes of s when
// s follows r bytes (mod 3) of anything: they appear in the encoding of
// every text that holds s at such an offset, whatever surrounds it.
func base64Core(s string, r int) string {
	enc := base64.StdEncoding.EncodeToString(append(make([]byte, r), s...))
	from := (8*r + 5) / 6        // the first letter whose bits are all s's
	to := (8 * (r + len(s))) / 6 // past the last such letter
	if to <= from || to > len(enc) {
		return ""
	}
	return enc[from:to]
}

// String returns s with every form of every secret replaced by Mark, and
// a form cut short at the end of an excerpt ("…sk-ab…") too.
func (x *Redactor) String(s string) string {
	if x == nil || x.r == nil {
		return s
	}
	// A replacement can join text into a form again ("[REDACTED]" and
	// what follows it): repeat until nothing changes, a few times at most.
	for range 4 {
		t := x.r.Replace(s)
		if t == s {
			break
		}
		s = t
	}
	return x.cutTail(s)
}

// cutTail redacts the start of a form just before a closing "…" (an
// excerpt cut inside a secret).
func (x *Redactor) cutTail(s string) string {
	const mark = "…"
	if !strings.HasSuffix(s, mark) {
		return s
	}
	body := strings.TrimSuffix(s, mark)
	for _, f := range x.forms {
		for n := min(len(f)-1, len(body)); n >= minSecret; n-- {
			if strings.HasSuffix(body, f[:n]) {
				return body[:len(body)-n] + Mark + mark
			}
		}
	}
	return s
}
