package scenario

import (
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// indentMistake has a comment at line 4 and, 14 lines below it at line
// 18, a key indented three spaces: under no block. go-yaml reports "did
// not find expected key" at line 5, where the mapping it breaks began.
const indentMistake = `name: indent
target:
  url: sim://tiny
# the load: three closed-loop stages
load:
  stages:
    - name: one
      concurrency: 2
      requests: 10
    - name: two
      concurrency: 4
      requests: 20
    - name: three
      concurrency: 8
      requests: 20
      warmup:
        requests: 2
   max_duration: 5m
`

// TestIndentationErrorLine: a YAML indentation mistake is reported at its
// own line with a hint, not at the line where go-yaml's enclosing block
// began.
func TestIndentationErrorLine(t *testing.T) {
	t.Parallel()
	var n yaml.Node
	raw := yaml.Unmarshal([]byte(indentMistake), &n)
	if raw == nil || !strings.Contains(raw.Error(), "line 5: did not find expected key") {
		t.Fatalf("go-yaml's own report changed (the test's premise): %v", raw)
	}
	_, err := Parse("indent.yaml", []byte(indentMistake))
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("want a *FieldError, got %v", err)
	}
	if fe.Line != 18 || !strings.Contains(fe.Msg, "check the indentation near line 18") {
		t.Errorf("got %v; want line 18 with the indentation hint", err)
	}
	for _, tc := range []struct {
		doc  string
		line int
	}{
		{"name: x\n# c\nload:\n  stages:\n    - concurrency: 1\n      requests: 1\n     duration: 1s\n", 7},
		{"name: x\nload:\n  stages:\n  - concurrency: 1\n    requests: 1\n  bad\n", 6},
		{"name: x\nload:\n  stages:\n    - concurrency: 1\n  - requests: 1\n", 5},
	} {
		_, err := Parse("t.yaml", []byte(tc.doc))
		if !errors.As(err, &fe) || fe.Line != tc.line {
			t.Errorf("%q: %v, want line %d", tc.doc, err, tc.line)
		}
	}
}
