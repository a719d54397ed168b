package report

import (
	"fmt"

	"github.com/servebench/servebench/results"
)

// FromFiles reads one or more results files (or run directories) into a
// new Aggregate, each file once, with offsets on the files' common epoch (Files).
// Reader warnings (a truncated last line) become summary warnings.
func FromFiles(paths ...string) (*Aggregate, error) {
	files, err := results.OpenFiles(paths...)
	if err != nil {
		return nil, err
	}
	a := New()
	for rec, err := range files.All() {
		if err != nil {
			return nil, err
		}
		a.AddRecord(rec.Record)
	}
	for _, w := range files.Warnings() {
		a.Warn(w.Error())
	}
	return a, nil
}

// Rebuild reads results files (or run directories) as `bench report` does:
// it returns their aggregate and summary, judged by the budgets recorded
// in the first header when it has any, so that a gated run's summary.json
// is rebuilt byte for byte.
func Rebuild(paths ...string) (*Aggregate, *Summary, error) {
	a, err := FromFiles(paths...)
	if err != nil {
		return nil, nil, err
	}
	s := a.Summary()
	if spec := a.Spec(); spec != nil && spec.Budgets != nil {
		s.Verdict = a.Evaluate(s, spec.Budgets, spec.SLO)
	}
	return a, s, nil
}

// AddRecord adds one record of any kind, as read from a results file or
// as a run writes it. Records of unknown kinds are ignored.
func (a *Aggregate) AddRecord(rec results.Record) {
	switch {
	case rec.Header != nil:
		a.AddHeader(rec.Header)
	case rec.Result != nil:
		a.Add(rec.Result)
	case rec.Sample != nil:
		a.AddSample(*rec.Sample)
	case rec.Warning != nil:
		a.Warn(fmt.Sprintf("%s: %s", rec.Warning.Source, rec.Warning.Message))
	case rec.End != nil:
		a.ends = append(a.ends, *rec.End)
	}
}
