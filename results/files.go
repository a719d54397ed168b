package results

import (
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Files reads one or more results files as one stream of records, in the
// manner of benchfmt.Files: several files from several machines (or
// several runs) merge into one report. Every file's offsets count from its
// own epoch; Files shifts them onto the earliest epoch of all the files
// (by the headers' wall-clock start times), so that merged records share
// one timeline.
//
// Create it with OpenFiles, which reads every header first; All then reads
// each file once. A Files is not safe for concurrent use.
type Files struct {
	paths    []string
	headers  []*Header
	epoch    time.Time
	warnings []error
}

// fileNames are the names a run gives its results file, in a run
// directory: plain or gzip-compressed.
var fileNames = []string{"results.jsonl", "results.jsonl.gz"}

// Path returns the results file a path names: the path itself, or the
// results file inside it when it is a run directory.
func Path(p string) string {
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		for _, name := range fileNames {
			if _, err := os.Stat(filepath.Join(p, name)); err == nil {
				return filepath.Join(p, name)
			}
		}
	}
	return p
}

// Expand returns the results files that paths name: a file stands for
// itself, a run directory for the results file inside it (Path), and a
// directory that holds none for the results files of its run
// subdirectories, in name order, as the shards of a sharded run sit
// side by side (shard-0/, shard-1/, …). A directory with neither is an
// error.
func Expand(paths ...string) ([]string, error) {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || !fi.IsDir() {
			out = append(out, p) // opening it says what is wrong
			continue
		}
		if r := Path(p); r != p {
			out = append(out, r)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("results directory: %w", err)
		}
		n := len(out)
		for _, e := range entries { // sorted by name
			if !e.IsDir() {
				continue
			}
			sub := filepath.Join(p, e.Name())
			if r := Path(sub); r != sub {
				out = append(out, r)
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("%s holds no results file (%s), nor do its subdirectories", p, strings.Join(fileNames, " or "))
		}
	}
	return out, nil
}

// OpenFiles reads the header of every file; paths are expanded by Expand
// (a run directory, or a directory of runs). It fails when a file cannot
// be read, does not start with a header, or has a newer schema than this
// package reads.
func OpenFiles(paths ...string) (*Files, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("no results files")
	}
	paths, err := Expand(paths...)
	if err != nil {
		return nil, err
	}
	f := &Files{paths: make([]string, len(paths)), headers: make([]*Header, len(paths))}
	seen := map[string]string{} // run identity → path
	for i, p := range paths {
		f.paths[i] = p
		h, err := ReadHeader(p)
		if err != nil {
			return nil, err
		}
		f.headers[i] = h
		id := h.identity()
		if first, ok := seen[id]; ok {
			return nil, fmt.Errorf("%s and %s are the same run (%s): give each results file once", first, p, id)
		}
		seen[id] = p
		if i == 0 || h.Started.Before(f.epoch) {
			f.epoch = h.Started
		}
	}
	return f, nil
}

// ReadHeader reads the header of the results file at path.
func ReadHeader(path string) (*Header, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if !r.Scan() {
		if r.Err() != nil {
			return nil, r.Err()
		}
		return nil, fmt.Errorf("%s: empty results file", path)
	}
	rec := r.Record()
	if rec.Kind != KindHeader {
		return nil, fmt.Errorf("%s:%d: first record is %q, want a %q record", path, r.Line(), rec.Kind, KindHeader)
	}
	if rec.Header.Schema > Schema {
		return nil, fmt.Errorf("%s: results schema %d is newer than this tool's (%d): upgrade servebench", path, rec.Header.Schema, Schema)
	}
	return rec.Header, nil
}

// Paths returns the files, in the order given.
func (f *Files) Paths() []string { return f.paths }

// Headers returns the files' headers, in the order of Paths. The caller
// must not modify them.
func (f *Files) Headers() []*Header { return f.headers }

// Epoch is the earliest start time of the files: every offset All yields
// counts from it.
func (f *Files) Epoch() time.Time { return f.epoch }

// Warnings returns the non-fatal problems met by All so far (a truncated
// last line).
func (f *Files) Warnings() []error { return f.warnings }

// FileRecord is a Record, the index, in Paths, of the file it came from
// and its line there (from 1). Impossible is Result.Impossible of a
// request record as written, before All shifted its offsets.
type FileRecord struct {
	File       int
	Line       int
	Impossible string
	Record
}

// All yields every record of every file, file after file, with its
// offsets shifted onto Epoch. A read error ends the iteration: it is
// yielded with a zero FileRecord as the last pair.
func (f *Files) All() iter.Seq2[FileRecord, error] {
	return func(yield func(FileRecord, error) bool) {
		for i, p := range f.paths {
			shift := f.headers[i].Started.Sub(f.epoch)
			r, err := Open(p)
			if err != nil {
				yield(FileRecord{}, err)
				return
			}
			ok := true
			for ok && r.Scan() {
				rec := r.Record()
				bad := ""
				if rec.Result != nil {
					bad = rec.Result.Impossible()
				}
				rec.Shift(shift)
				ok = yield(FileRecord{File: i, Line: r.Line(), Impossible: bad, Record: rec}, nil)
			}
			f.warnings = append(f.warnings, r.Warnings()...)
			err = r.Err()
			r.Close()
			if !ok {
				return
			}
			if err != nil {
				yield(FileRecord{}, err)
				return
			}
		}
	}
}

// Shift moves the record's epoch-relative offsets later by d. Chunk times
// count from Sent and do not move; a zero offset (an event that did not
// happen) stays zero.
func (r Record) Shift(d time.Duration) {
	if d == 0 {
		return
	}
	move := func(t *time.Duration) {
		if *t != 0 {
			*t += d
		}
	}
	switch {
	case r.Result != nil:
		x := r.Result
		for _, t := range []*time.Duration{&x.Scheduled, &x.Sent, &x.Written, &x.Headers, &x.FirstToken,
			&x.FirstContent, &x.LastToken, &x.End} {
			move(t)
		}
	case r.Sample != nil:
		r.Sample.Start += d
		r.Sample.At += d
	case r.Warning != nil:
		r.Warning.At += d
	case r.End != nil:
		r.End.At += d
		move(&r.End.Began)
	}
}

// identity names a run: its RunID, or for files from before run ids its
// start time, host and target, which two runs do not share.
func (h *Header) identity() string {
	id := fmt.Sprintf("started %s on host %q against %s", h.Started.Format(time.RFC3339Nano), h.Host, h.Target)
	if h.RunID != "" {
		id = "run " + h.RunID
	}
	if h.Shard != nil {
		id += fmt.Sprintf(", shard %d/%d", h.Shard.Index, h.Shard.Count)
	}
	return id
}
