package scenario

import (
	"slices"
	"strings"
	"testing"
)

// TestPaths: the paths offered for --set completion are paths Set knows:
// none is refused as an unknown field, and the common ones are there.
func TestPaths(t *testing.T) {
	paths := Paths()
	for _, want := range []string{"load.stages[0].rate", "load.stages[0].concurrency", "prompts.input_tokens.value", "budgets.overall.ttft_ms.p99", "target.url", "request.extra", "sweep.search.between"} {
		if !slices.Contains(paths, want) {
			t.Errorf("Paths() lacks %s", want)
		}
	}
	for _, p := range paths {
		sc, err := Parse("t.yaml", []byte("name: t\nload: {stages: [{concurrency: 1, requests: 1}]}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.Set(p, ""); err != nil && strings.Contains(err.Error(), "unknown") {
			t.Errorf("Set(%q) refuses the path: %v", p, err)
		}
	}
}
