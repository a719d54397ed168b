package run

import (
	"errors"
	"path/filepath"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
)

// writer is the one place a run's records go, under either driver: the
// results file (when the run writes one), the aggregate the summary is
// computed from (only records the file holds, so that 'bench report'
// rebuilds the same summary), the progress line, the caller's Observer
// and Options.Observe. put is called from one goroutine at a time.
type writer struct {
	file    *results.Writer // nil: no file (Simulate)
	path    string
	agg     *report.Aggregate
	prog    *progress
	obs     Observer
	observe func(results.Record, int)
	failed  func(error) // called once, when the file cannot be written
	err     error
}

// createWriter creates the results file in opts.Dir; failed, when not nil,
// is called once if writing it fails.
func createWriter(opts Options, failed func(error)) (*writer, error) {
	path := filepath.Join(opts.Dir, FileResults)
	f, err := results.Create(path)
	if err != nil {
		return nil, err
	}
	return &writer{file: f, path: path, agg: report.New(), obs: opts.Observer, observe: opts.Observe, failed: failed}, nil
}

// put writes rec; inFlight is the number of requests sent and not yet
// ended, for Options.Observe.
func (w *writer) put(rec results.Record, inFlight int) {
	if rec.Result != nil {
		if w.prog != nil {
			w.prog.add(rec.Result)
		}
		if w.obs != nil {
			w.obs.Observe(rec.Result)
		}
	}
	if so, ok := w.obs.(SampleObserver); ok && rec.Sample != nil {
		so.ObserveSample(rec.Sample)
	}
	if w.err == nil && w.file != nil {
		if w.err = w.file.Write(rec); w.err != nil && w.failed != nil {
			w.failed(w.err)
		}
		w.agg.WriteFailed(w.err)
	}
	if w.err == nil {
		w.agg.AddRecord(rec)
	}
	if w.observe != nil {
		w.observe(rec, inFlight)
	}
}

// close closes the file and returns the first write error.
func (w *writer) close() error {
	if w.file == nil {
		return w.err
	}
	return errors.Join(w.err, w.file.Close())
}
