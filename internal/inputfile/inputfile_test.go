package inputfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenRefusesWhatIsNotAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := Limit{What: "dataset", MaxBytes: 1 << 20}
	cases := []struct {
		name, path, want string
	}{
		{"directory", dir, "is a directory, not a regular file: a dataset is read from a file"},
		{"character device", "/dev/zero", "is a character device, not a regular file"},
		{"random device", "/dev/urandom", "is a character device, not a regular file"},
	}
	if fifo := makeFIFO(t, dir); fifo != "" {
		// Opening a FIFO for reading blocks until a writer comes: the
		// check must come first, or this test hangs.
		cases = append(cases, struct{ name, path, want string }{"fifo", fifo, "is a named pipe (FIFO), not a regular file"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(tc.path); err != nil {
				t.Skipf("no %s here: %v", tc.path, err)
			}
			f, err := Open(tc.path, l)
			if err == nil {
				f.Close()
				t.Fatalf("Open(%s) succeeded", tc.path)
			}
			var nr *NotRegularError
			if !errors.As(err, &nr) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open(%s) = %v, want a NotRegularError saying %q", tc.path, err, tc.want)
			}
		})
	}
}

func TestOpenRefusesAFileOverItsCap(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	l := Limit{What: "dataset", MaxBytes: 2 << 20, Raise: "--set prompts.dataset.max_file_mib=N"}
	_, err := Open(path, l)
	want := path + ": 3 MiB is over the 2 MiB cap on a dataset file (raise it with --set prompts.dataset.max_file_mib=N)"
	if err == nil || err.Error() != want || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Open = %v, want %q", err, want)
	}
	// At the cap exactly it opens and reads to the end.
	l.MaxBytes = 3 << 20
	data, err := ReadFile(path, l)
	if err != nil || len(data) != 3<<20 {
		t.Fatalf("ReadFile at the cap = %d bytes, %v", len(data), err)
	}
}

// A file that grows after the check (or a /proc file, whose size reads 0)
// is still read no further than the cap.
func TestReadStopsAtTheCapWhenTheFileGrows(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "growing.jsonl")
	if err := os.WriteFile(path, []byte("small\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path, Limit{What: "trace", MaxBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.WriteFile(path, make([]byte, 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, f)
	var tl *TooLargeError
	if !errors.As(err, &tl) || n > 1001 {
		t.Fatalf("read %d bytes, err %v: want at most the cap and a TooLargeError", n, err)
	}
	// Seeking back (to name a line) reads again from there.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 10)
	if _, err := io.ReadFull(f, b); err != nil {
		t.Fatalf("read after seek: %v", err)
	}
}

func TestSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 16 << 20: "16 MiB", 4 << 30: "4 GiB", 100e6: "95.4 MiB",
	} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
