// Package redact removes secrets from text before it is stored or printed:
// the API key and the values of configured headers, which a server may
// echo back in an error body ("invalid api key: Bearer sk-…"), an in-stream
// error or any other message.
//
// It consumes the secrets of a run and produces a Redactor whose String
// replaces each occurrence with "[REDACTED]". The client, the scraper and
// the run pass every message through one.
package redact

import "strings"

// Mark replaces a secret in redacted text.
const Mark = "[REDACTED]"

// minSecret is the shortest value treated as a secret: shorter header
// values ("1", "on") would redact ordinary words.
const minSecret = 4

// Redactor replaces known secrets in text. The zero value (or nil) redacts
// nothing. It is safe for concurrent use.
type Redactor struct {
	r *strings.Replacer
}

// New returns a Redactor of the given secrets; empty and very short ones
// are ignored.
func New(secrets ...string) *Redactor {
	var pairs []string
	for _, s := range secrets {
		if len(s) >= minSecret {
			pairs = append(pairs, s, Mark)
		}
	}
	if len(pairs) == 0 {
		return &Redactor{}
	}
	return &Redactor{r: strings.NewReplacer(pairs...)}
}

// String returns s with every secret replaced by Mark.
func (x *Redactor) String(s string) string {
	if x == nil || x.r == nil {
		return s
	}
	return x.r.Replace(s)
}
