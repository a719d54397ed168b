package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps failures instead of failing.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }
func (r *recorder) Fatal(args ...any)                 { r.Errorf("%s", fmt.Sprint(args...)) }

func TestCheck(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "x.golden")
	r := &recorder{TB: t}
	Check(r, path, []byte("a\nb\n"), true) // creates the directory and the file
	Check(r, path, []byte("a\nb\n"), false)
	if len(r.errors) != 0 {
		t.Fatalf("equal output failed: %v", r.errors)
	}
	if _, err := os.Stat(path + ".got"); err == nil {
		t.Fatal("a .got file was written for equal output")
	}
	Check(r, path, []byte("a\nc\n"), false)
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "- b\n+ c") {
		t.Fatalf("mismatch reported as %q", r.errors)
	}
	if got, err := os.ReadFile(path + ".got"); err != nil || string(got) != "a\nc\n" {
		t.Fatalf(".got = %q, %v", got, err)
	}
	Check(r, filepath.Join(t.TempDir(), "missing.golden"), nil, false)
	if len(r.errors) != 2 || !strings.Contains(r.errors[1], "-update") {
		t.Fatalf("missing golden file reported as %q", r.errors)
	}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	if d := Diff("a\nb\nc", "a\nx\nc\nd"); d != "- b\n+ x\n- \n+ d\n" {
		t.Errorf("Diff = %q", d)
	}
	if d := Diff("same", "same"); d != "" {
		t.Errorf("Diff of equal texts = %q", d)
	}
}
