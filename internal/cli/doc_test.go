package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/servebench/servebench/scenario"
)

// TestREADME keeps README.md honest: its scenario reference must load, and
// every 'bench COMMAND' it mentions must exist.
func TestREADME(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(readme, -1)
	if len(blocks) == 0 {
		t.Fatal("README has no yaml scenario reference")
	}
	for i, b := range blocks {
		if _, err := scenario.Parse("README.md yaml block", []byte(b[1])); err != nil {
			t.Errorf("README yaml block %d does not load: %v", i+1, err)
		}
	}
	known := map[string]bool{}
	for _, c := range commands() {
		known[c.name] = true
	}
	for _, m := range regexp.MustCompile("`bench ([a-z]+)").FindAllStringSubmatch(readme, -1) {
		if !known[m[1]] {
			t.Errorf("README mentions 'bench %s', which is not a command", m[1])
		}
	}
	for _, must := range []string{"go run ./cmd/bench run scenarios/quickstart.yaml", "go test ./..."} {
		if !strings.Contains(readme, must) {
			t.Errorf("README lacks %q", must)
		}
	}
}
