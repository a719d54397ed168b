package run

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/servebench/servebench/internal/atomicfile"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
)

// Output file names, in the run's directory.
const (
	FileResults = "results.jsonl"
	FileSummary = "summary.json"
	FileJUnit   = "junit.xml"
	FileVerdict = "verdict.md"
	FileSimLog  = "sim.log"
)

// Renderer draws a run's pictures (the plots and report.html) from its
// aggregate and summary: a consumer the caller passes in, so that a run
// links no plotting code of its own.
type Renderer interface {
	// Render writes the pictures into dir.
	Render(dir string, agg *report.Aggregate, sum *report.Summary) error
	// Files names every file Render may write, for PrepareDir.
	Files() []string
}

// Outputs returns the names of the files a run may write into its
// directory, with those of the renderer r (nil: none).
func Outputs(r Renderer) []string {
	out := []string{FileResults, FileResults + ".gz", FileSummary, FileJUnit, FileVerdict, FileSimLog}
	if r != nil {
		out = append(out, r.Files()...)
	}
	return out
}

// ClearOutputs removes from dir every file a run with renderer r may
// write, so that a run into a used directory leaves nothing stale behind
// (a junit.xml from a gated run under an ungated one). Other files are
// left alone.
func ClearOutputs(dir string, r Renderer) error {
	for _, name := range Outputs(r) {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// UsedDirError is PrepareDir's refusal of a directory holding a run.
type UsedDirError struct {
	Dir   string
	Files []string // the run's files found there
}

func (e *UsedDirError) Error() string {
	return fmt.Sprintf("--out %s already holds a run (%s): choose another directory, or pass --force to replace it",
		e.Dir, strings.Join(e.Files, ", "))
}

// PrepareDir creates a run's output directory, or checks that an existing
// one holds no run (no file of Outputs(r)): an earlier run's files are
// never overwritten silently (*UsedDirError). With force they are removed
// first, so that nothing stale stays beside the new run's files.
func PrepareDir(dir string, force bool, r Renderer) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return err
	}
	outputs := Outputs(r)
	var found []string
	for _, e := range entries {
		if slices.Contains(outputs, e.Name()) {
			found = append(found, e.Name())
		}
	}
	switch {
	case len(found) == 0:
		return nil
	case !force:
		return &UsedDirError{Dir: dir, Files: found}
	}
	return ClearOutputs(dir, r)
}

// judge computes the summary of agg and, when the scenario has budgets
// and the results hold the whole load (a shard alone is not judged), its
// verdict.
func judge(agg *report.Aggregate, spec *results.Spec) *report.Summary {
	sum := agg.Summary()
	if spec != nil && spec.Budgets != nil && agg.WholeLoad() {
		sum.Verdict = agg.Evaluate(sum, spec.Budgets, spec.SLO)
	}
	return sum
}

// finish judges the run, writes summary.json and the verdict files into
// opts.Dir, and the pictures through opts.Render unless the run was
// aborted or opts.NoPlots; a run that ended without error but with no
// success gets ErrNoSuccess (or ErrMostFailed). It returns the summary
// and runErr joined with any writing error.
func finish(opts Options, agg *report.Aggregate, spec *results.Spec, runErr error) (*report.Summary, error) {
	sum := judge(agg, spec)
	if runErr == nil {
		runErr = noSuccess(sum)
	}
	if err := WriteSummaryFiles(opts.Dir, sum); err != nil {
		return sum, errors.Join(runErr, err)
	}
	if opts.Render == nil || opts.NoPlots || closed(opts.Abort) || sum.Overall.Requests.OK == 0 { // no plots of nothing
		return sum, runErr
	}
	if err := opts.Render.Render(opts.Dir, agg, sum); err != nil {
		return sum, errors.Join(runErr, fmt.Errorf("plots: %w", err))
	}
	return sum, runErr
}

// WriteSummaryFiles writes summary.json into dir and, when the summary has
// a verdict, junit.xml and verdict.md.
func WriteSummaryFiles(dir string, sum *report.Summary) error {
	type output struct {
		name  string
		write func(io.Writer, *report.Summary) error
	}
	files := []output{{FileSummary, report.WriteJSON}}
	if sum.Verdict != nil {
		files = append(files, output{FileJUnit, report.WriteJUnit}, output{FileVerdict, report.WriteVerdictMarkdown})
	}
	for _, f := range files {
		if err := atomicfile.Write(filepath.Join(dir, f.name), func(w io.Writer) error { return f.write(w, sum) }); err != nil {
			return err
		}
	}
	return nil
}

// closed reports whether ch is closed (a nil ch never is).
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
