// Package golden compares test output with golden files under testdata/
// and rewrites them when a package's tests run with -update.
//
// It consumes the bytes a test produced and the golden file's path, and
// produces a test failure with a line diff (and the output written beside
// the golden file as PATH.got, which .gitignore leaves out) when they
// differ. Each package declares its own -update flag and passes its value.
package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Check compares got with the golden file at path. With update set it
// writes got to path instead (creating directories) and passes.
func Check(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the package's tests with -update to create it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	_ = os.WriteFile(path+".got", got, 0o644)
	t.Errorf("output differs from %s (got written to %s.got; -update accepts it):\n%s",
		path, path, Diff(string(want), string(got)))
}

// Name turns a test's name into a file name: subtests' slashes become
// underscores.
func Name(t testing.TB) string { return strings.ReplaceAll(t.Name(), "/", "_") }

// Diff lists the lines that differ, position by position, as "- want" and
// "+ got" pairs.
func Diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("- " + wl + "\n+ " + gl + "\n")
		}
	}
	return b.String()
}
