package redact

import (
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/url"
	"strings"
	"testing"
)

func TestRedactor(t *testing.T) {
	t.Parallel()
	x := New("sk-secret-key", "", "on", "tenant-7")
	for in, want := range map[string]string{
		"invalid api key: Bearer sk-secret-key":     "invalid api key: Bearer [REDACTED]",
		"tenant-7 is not allowed; on sk-secret-key": "[REDACTED] is not allowed; on [REDACTED]",
		"nothing here, on and off":                  "nothing here, on and off",
	} {
		if got := x.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	var none *Redactor
	if none.String("sk-secret-key") != "sk-secret-key" || New().String("x") != "x" {
		t.Error("a nil or empty Redactor changed text")
	}
}

// plantedKey has the characters that JSON, URLs and HTML escape.
const plantedKey = `sk-a"b\c/d<e>&f é+g=h`

// encodings are the forms a server echoes a secret in, each as it would
// write it.
var encodings = map[string]func(s string) string{
	"literal": func(s string) string { return s },
	"json (Go)": func(s string) string {
		b, _ := json.Marshal(s)
		return string(b[1 : len(b)-1])
	},
	"json (Python, ensure_ascii)": func(s string) string { return jsonEscape(s, jsonStyle{ascii: true}) },
	"json with \\/":               func(s string) string { return jsonEscape(s, jsonStyle{slash: true}) },
	"url query":                   url.QueryEscape,
	"url path":                    url.PathEscape,
	"url lower hex":               func(s string) string { return lowerHex(url.QueryEscape(s)) },
	"html":                        template.HTMLEscapeString,
	"basic auth (user:key)":       func(s string) string { return base64.StdEncoding.EncodeToString([]byte("user:" + s)) },
	"basic auth (me:key)":         func(s string) string { return base64.StdEncoding.EncodeToString([]byte("me:" + s)) },
	"basic auth (admin:key)":      func(s string) string { return base64.StdEncoding.EncodeToString([]byte("admin:" + s)) },
	"base64 url alphabet":         func(s string) string { return base64.URLEncoding.EncodeToString([]byte("x:" + s)) },
}

// TestIssue22Encodings (issue 22, item 6): redaction matched only the
// literal bytes of a secret, so a key with `"` and `\`, echoed inside a
// JSON error body, leaked. Every encoding a server writes it in is
// redacted now, and so is the decoded form of a basic-auth header.
func TestIssue22Encodings(t *testing.T) {
	t.Parallel()
	x := New(plantedKey)
	for name, enc := range encodings {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := enc(plantedKey)
			got := x.String(`{"error": {"message": "bad key ` + e + ` here"}}`)
			if strings.Contains(got, e) || !strings.Contains(got, Mark) {
				t.Errorf("%s form %q survives: %q", name, e, got)
			}
			// Base64: what is left decodes to the user and at most 2
			// bytes of the key at each edge, mixed with their neighbours'.
			if strings.HasPrefix(name, "basic") {
				user, _, _ := strings.Cut(name[len("basic auth ("):], ":")
				left := strings.TrimSuffix(strings.TrimPrefix(got, `{"error": {"message": "bad key `), ` here"}}`)
				before, after, _ := strings.Cut(left, Mark)
				if len(before) > len(base64.StdEncoding.EncodeToString([]byte(user+":")))+1 || len(strings.TrimRight(after, "=")) > 2 {
					t.Errorf("more base64 letters than the user's and a partial letter at each edge left: %q", left)
				}
			}
		})
	}
	// A basic-auth header: its value, the decoded user:password and the
	// password are secrets.
	header := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:hunter2-secret"))
	h := New(header)
	for _, in := range []string{header, "alice:hunter2-secret", "password hunter2-secret rejected"} {
		if got := h.String(in); strings.Contains(got, "hunter2-secret") || strings.Contains(got, header) {
			t.Errorf("String(%q) = %q", in, got)
		}
	}
	// An excerpt cut inside the key ("…") loses the cut-off start too.
	if got := x.String("invalid key: sk-a\"b\\c…"); strings.Contains(got, "sk-a") {
		t.Errorf("a cut key survives: %q", got)
	}
}

// FuzzRedactor: whatever the secret and the text around it, no form of the
// secret a server may write (encodings) is left in the redacted text.
func FuzzRedactor(f *testing.F) {
	f.Add(plantedKey, "invalid key ", " here", "user")
	f.Add("sk-0123456789abcdef", `{"error":"`, `"}`, "")
	f.Add("tok\u2028en-é\x00\x7f", "Bearer ", "", "a:b")
	f.Fuzz(func(t *testing.T, secret, before, after, user string) {
		if len(secret) < 8 || strings.ContainsAny(secret, "\n") || strings.Contains(Mark, secret) {
			t.Skip()
		}
		x := New(secret)
		for name, enc := range encodings {
			e := enc(secret)
			got := x.String(before + e + after)
			if strings.Contains(got, e) && !strings.Contains(before+after, e) {
				t.Fatalf("%s form %q of %q survives in %q", name, e, secret, got)
			}
			if strings.Contains(got, secret) && !strings.Contains(Mark+before+after, secret) {
				t.Fatalf("secret %q survives in %q", secret, got)
			}
		}
		e := base64.StdEncoding.EncodeToString([]byte(user + ":" + secret))
		if got := x.String(before + e + after); strings.Contains(got, e) {
			t.Fatalf("basic auth %q of %q:%q survives in %q", e, user, secret, got)
		}
	})
}

func BenchmarkRedactor(b *testing.B) {
	x := New(plantedKey, "tenant-7", "Basic "+base64.StdEncoding.EncodeToString([]byte("alice:hunter2-secret")))
	msg := `HTTP 401: {"error": {"message": "invalid api key", "type": "auth"}}`
	for b.Loop() {
		x.String(msg)
	}
}
