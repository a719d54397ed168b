// Package inputfile opens the files servebench reads (datasets, traces,
// results files, scenario and configuration files) so that a wrong path
// cannot exhaust the machine: only a regular file is read, never a device
// (/dev/zero, /dev/urandom), a FIFO, a socket or a directory, and a file
// over its size cap is refused before a byte of it is read, with a message
// that names the cap and the setting that raises it.
//
// It consumes a path, a cap in bytes and the words that name how to raise
// the cap; it produces an open File, which also refuses to read past the
// cap should the file grow (or report a size of 0, as /proc files do).
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// Limit is a cap on a file's size and what raises it.
type Limit struct {
	// What names the file's role in messages: "dataset", "trace".
	What string
	// MaxBytes is the largest file read, in bytes; 0 means no cap.
	MaxBytes int64
	// Raise says how to raise the cap ("--set prompts.dataset.max_file_mib=N");
	// empty when it cannot be raised.
	Raise string
}

// NotRegularError is a path that names something other than a regular
// file: reading a device or a FIFO never ends, or blocks.
type NotRegularError struct {
	Path string
	What string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string { return e.Path + ": " + e.Reason() }

// Reason is the message without the path: "is a character device, not a
// regular file: a dataset is read from a file".
func (e *NotRegularError) Reason() string {
	return fmt.Sprintf("is %s, not a regular file: a %s is read from a file", kind(e.Mode), e.What)
}

// kind names a file mode's type in words.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a plain file (" + m.Type().String() + ")"
}

// TooLargeError is a file over its size cap.
type TooLargeError struct {
	Path string
	// Size is the file's size, or, for a file that grew while read, how
	// far it was read.
	Size  int64
	Limit Limit
}

func (e *TooLargeError) Error() string {
	msg := fmt.Sprintf("%s: %s is over the %s cap on a %s file", e.Path, Size(e.Size), Size(e.Limit.MaxBytes), e.Limit.What)
	if e.Limit.Raise != "" {
		msg += " (raise it with " + e.Limit.Raise + ")"
	}
	return msg
}

// ErrTooLarge is what errors.Is finds in a *TooLargeError.
var ErrTooLarge = errors.New("file over its size cap")

// Is makes errors.Is(err, ErrTooLarge) hold.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Size formats a byte count in the largest binary unit that keeps it ≥ 1:
// "512 B", "16 MiB", "1.5 GiB".
func Size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, u := float64(n), 0
	for v >= unit && u < 4 {
		v /= unit
		u++
	}
	s := strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0")
	return s + " " + [...]string{"B", "KiB", "MiB", "GiB", "TiB"}[u]
}

// File is an open input file. It reads at most the cap's bytes: a read past
// them fails with a *TooLargeError. It is not safe for concurrent use.
type File struct {
	f     *os.File
	path  string
	limit Limit
	off   int64
}

// Open opens path for reading if it is a regular file within l. The check
// runs before the open (opening a FIFO blocks until a writer comes) and
// again on the open file, so a path swapped in between is still refused.
func Open(path string, l Limit) (*File, error) {
	if err := check(path, l, os.Stat); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if err := check(path, l, func(string) (fs.FileInfo, error) { return f.Stat() }); err != nil {
		f.Close()
		return nil, err
	}
	return &File{f: f, path: path, limit: l}, nil
}

func check(path string, l Limit, stat func(string) (fs.FileInfo, error)) error {
	fi, err := stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &NotRegularError{Path: path, What: l.What, Mode: fi.Mode()}
	}
	if l.MaxBytes > 0 && fi.Size() > l.MaxBytes {
		return &TooLargeError{Path: path, Size: fi.Size(), Limit: l}
	}
	return nil
}

// Read reads from the file, failing with a *TooLargeError once more than
// the cap has been read.
func (f *File) Read(p []byte) (int, error) {
	if f.limit.MaxBytes > 0 {
		if f.off > f.limit.MaxBytes {
			return 0, &TooLargeError{Path: f.path, Size: f.off, Limit: f.limit}
		}
		if left := f.limit.MaxBytes + 1 - f.off; int64(len(p)) > left {
			p = p[:left]
		}
	}
	n, err := f.f.Read(p)
	f.off += int64(n)
	if f.limit.MaxBytes > 0 && f.off > f.limit.MaxBytes {
		return n, &TooLargeError{Path: f.path, Size: f.off, Limit: f.limit}
	}
	return n, err
}

// Seek sets the offset of the next Read, as os.File's Seek.
func (f *File) Seek(offset int64, whence int) (int64, error) {
	off, err := f.f.Seek(offset, whence)
	if err == nil {
		f.off = off
	}
	return off, err
}

// Stat returns the open file's FileInfo.
func (f *File) Stat() (fs.FileInfo, error) { return f.f.Stat() }

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// ReadFile reads the whole of path, a regular file within l.
func ReadFile(path string, l Limit) ([]byte, error) {
	f, err := Open(path, l)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

var _ io.ReadSeekCloser = (*File)(nil)
