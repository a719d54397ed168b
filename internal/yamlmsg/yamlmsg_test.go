package yamlmsg

import (
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// goTypeRE matches Go type names and YAML tags in a message.
var goTypeRE = regexp.MustCompile(`!!(?:map|seq|str|int|float|bool|null)\b|\bunmarshal\b|\[\]\w|\bmap\[|\binterface ?\{|` +
	`\b(?:u?int(?:8|16|32|64)|float(?:32|64))\b|\*(?:u?int|bool|string)|\b(?:scenario|results|sim|time)\.[A-Z]`)

func TestPlain(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"cannot unmarshal !!map into []scenario.Stage":      "want a list, got a mapping",
		"cannot unmarshal !!str `fast` into float64":        `want a number, got "fast"`,
		"cannot unmarshal !!seq into string":                "want a string, got a list",
		"cannot unmarshal !!int `5` into *int64":            "want an integer, got 5",
		"cannot unmarshal !!bool `true` into time.Time":     "want a mapping, got true",
		"cannot unmarshal !!str `1` into scenario.Duration": `want a duration with a unit, like "30s", got "1"`,
		"field bogus not found in type results.BudgetSet":   "unknown field bogus",
		"field rate already set in type scenario.Stage":     "rate is set twice",
		"invalid map key: []interface {}{1}":                "keys must be plain names",
		"found character that cannot start any token":       "found character that cannot start any token",
	} {
		got := plain(in)
		if got != want {
			t.Errorf("Plain(%q) = %q, want %q", in, got, want)
		}
		if g := goTypeRE.FindString(regexp.MustCompile(`"[^"]*"`).ReplaceAllString(got, "")); g != "" {
			t.Errorf("Plain(%q) still names %s", in, g)
		}
	}
}

func TestMessages(t *testing.T) {
	t.Parallel()
	var v struct {
		N int     `yaml:"n"`
		F float64 `yaml:"f"`
	}
	err := yaml.Unmarshal([]byte("n: abc\nf: [1]\n"), &v)
	if err == nil {
		t.Fatal("decoded")
	}
	got := Text(err, true)
	if want := `line 1: want an integer, got "abc"; line 2: want a number, got a list`; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
	if got := Text(yaml.Unmarshal([]byte("\tx"), &v), false); got != "found character that cannot start any token" {
		t.Errorf("syntax error: %q", got)
	}
}

// FuzzLocate: Locate never panics, and a line it moves an error to is a
// line of the document (go-yaml's own may count a lone CR as a break).
func FuzzLocate(f *testing.F) {
	f.Add("a:\n  b: 1\n c: 2\n")
	f.Add("x: [1,\n  2\n")
	f.Add("- a\nb: c\n")
	f.Fuzz(func(t *testing.T, doc string) {
		var n yaml.Node
		err := yaml.Unmarshal([]byte(doc), &n)
		if err == nil {
			return
		}
		m := Locate([]byte(doc), err)
		if m.Line == Split(err.Error()).Line {
			return
		}
		if lines := strings.Count(doc, "\n") + 1; m.Line < 1 || m.Line > lines {
			t.Errorf("line %d of a %d-line document: %v", m.Line, lines, err)
		}
	})
}
