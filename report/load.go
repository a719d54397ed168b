package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

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
	spans := make([]span, len(files.Paths()))
	for rec, err := range files.All() {
		if err != nil {
			return nil, err
		}
		if r := rec.Result; r != nil && r.Sent != 0 {
			spans[rec.File].add(r.Sent, max(r.End, r.Sent))
		}
		a.AddRecord(rec.Record)
	}
	for _, w := range files.Warnings() {
		a.Warn(w.Error())
	}
	if w := gaps(files.Paths(), files.Epoch(), spans); w != "" {
		a.Warn(w)
	}
	return a, nil
}

// span is the interval a results file's requests were in flight, on the
// merged files' clock.
type span struct {
	from, to time.Duration
	ok       bool
}

func (s *span) add(from, to time.Duration) {
	if !s.ok || from < s.from {
		s.from = from
	}
	if !s.ok || to > s.to {
		s.to = to
	}
	s.ok = true
}

// gaps warns when merged files do not overlap in time (sequential runs
// given to one report): the merged rates divide their tokens by a span
// that includes the idle gaps. It names each file's start and duration.
func gaps(paths []string, epoch time.Time, spans []span) string {
	idx := make([]int, 0, len(spans))
	for i, s := range spans {
		if s.ok {
			idx = append(idx, i)
		}
	}
	if len(idx) < 2 {
		return ""
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(spans[a].from, spans[b].from) })
	var gap time.Duration
	end := spans[idx[0]].to
	for _, i := range idx[1:] {
		gap += max(spans[i].from-end, 0)
		end = max(end, spans[i].to)
	}
	if gap <= 0 {
		return ""
	}
	parts := make([]string, 0, len(idx))
	for _, i := range idx {
		s := spans[i]
		parts = append(parts, fmt.Sprintf("%s from %s for %s", paths[i], epoch.Add(s.from).UTC().Format("15:04:05"),
			(s.to-s.from).Round(100*time.Millisecond)))
	}
	return fmt.Sprintf("the merged results files do not overlap in time (%s): %s of idle gap between them counts in the "+
		"durations, so the merged rates are low; merge files of one run from several machines, and compare separate runs "+
		"with bench compare", strings.Join(parts, "; "), gap.Round(100*time.Millisecond))
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
