package report

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/servebench/servebench/results"
)

// Reader reads results files into an Aggregate. The zero Reader is
// strict: FromFiles and Rebuild use it.
type Reader struct {
	// Partial accepts a shard set that lacks some of its run's shards
	// (results.ErrIncompleteShards): the summary then names the shards
	// merged and the missing ones, and gets no verdict.
	Partial bool
	// Mixed accepts files of different scenarios (results.SameScenario
	// refuses them otherwise): the summary then names them all and warns
	// that its figures mix their workloads.
	Mixed bool
	// Metrics is the metric table the figures are of; nil is
	// results.Metrics (a test passes a copy with more).
	Metrics results.Table
}

// table returns the metric table of rd.
func (rd Reader) table() results.Table {
	if rd.Metrics == nil {
		return results.Metrics()
	}
	return rd.Metrics
}

// FromFiles reads one or more results files (or run directories) into a
// new Aggregate, each file once, with offsets on the files' common epoch (Files).
// Reader warnings (a truncated last line) become summary warnings.
//
// Files that are shards of a sharded run (results.Header.Shard) must be
// one shard set (results.Shards): the shards of one scenario, each once,
// all of them unless Partial. They are read in shard order, so the
// summary does not depend on the order of paths; and when several shards
// scraped one server, the lowest-numbered shard's scrapes of it are kept
// and the others' left out, so the server's series is not counted twice
// nor interleaved from machines whose clocks differ.
//
// Files of different scenarios (results.SameScenario) are refused unless
// Mixed. Request records that repeat a sequence number of their file, or
// hold impossible values, are counted as written and named, with their
// file and line, in summary warnings.
func (rd Reader) FromFiles(paths ...string) (*Aggregate, error) {
	files, err := results.OpenFiles(paths...)
	if err != nil {
		return nil, err
	}
	mixed := results.SameScenario(files.Paths(), files.Headers())
	if mixed != nil && !rd.Mixed {
		return nil, mixed
	}
	set, err := results.Shards(files.Paths(), files.Headers())
	switch {
	case errors.Is(err, results.ErrIncompleteShards) && !rd.Partial:
		return nil, fmt.Errorf("%w: merge every shard of the run, or pass --partial to merge these alone", err)
	case err != nil && !errors.Is(err, results.ErrIncompleteShards):
		return nil, err
	}
	if set != nil {
		ordered, _ := results.OrderShards(files.Paths(), files.Headers())
		if files, err = results.OpenFiles(ordered...); err != nil {
			return nil, err
		}
	}
	a := NewFor(rd.table())
	spans := make([]span, len(files.Paths()))
	scraper := map[string]int{} // target → the file whose scrapes of it are kept
	check := newRecordCheck(files.Paths(), files.Headers())
	for rec, err := range files.All() {
		if err != nil {
			return nil, err
		}
		check.add(rec)
		if r := rec.Result; r != nil && r.Sent != 0 {
			spans[rec.File].add(r.Sent, max(r.End, r.Sent))
		}
		if s := rec.Sample; s != nil && set != nil {
			if f, ok := scraper[s.Target]; !ok {
				scraper[s.Target] = rec.File
			} else if f != rec.File {
				continue
			}
		}
		a.AddRecord(rec.Record)
	}
	for _, w := range files.Warnings() {
		a.Warn(w.Error())
	}
	for _, w := range check.warnings() {
		a.Warn(w)
	}
	if mixed != nil {
		a.mixScenarios(files.Headers())
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

// FromFiles reads results files with the zero (strict) Reader.
func FromFiles(paths ...string) (*Aggregate, error) { return Reader{}.FromFiles(paths...) }

// Rebuild rebuilds results files with the zero (strict) Reader.
func Rebuild(paths ...string) (*Aggregate, *Summary, error) { return Reader{}.Rebuild(paths...) }

// Rebuild reads results files (or run directories) as `bench report` does:
// it returns their aggregate and summary, judged by the budgets recorded
// in the first header when it has any and the files hold the whole load
// (Aggregate.WholeLoad), so that a gated run's summary.json is rebuilt
// byte for byte.
func (rd Reader) Rebuild(paths ...string) (*Aggregate, *Summary, error) {
	a, err := rd.FromFiles(paths...)
	if err != nil {
		return nil, nil, err
	}
	s := a.Summary()
	if spec := a.Spec(); spec != nil && spec.Budgets != nil && a.WholeLoad() {
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
		a.addShardEnd(rec.End)
	}
}

// mixScenarios names every scenario of headers (files of different
// scenarios merged on purpose, Reader.Mixed) in the summary, and warns
// that its figures mix their workloads.
func (a *Aggregate) mixScenarios(headers []*results.Header) {
	var names []string
	seen := map[string]bool{}
	for _, h := range headers {
		key := h.ScenarioKey()
		if key == "" || seen[key] {
			continue
		}
		seen[key] = true
		name := "unnamed"
		if h.Spec != nil && h.Spec.Name != "" {
			name = h.Spec.Name
		}
		names = append(names, name)
	}
	a.meta.Scenario = strings.Join(names, " + ")
	a.Warn(fmt.Sprintf("these results are %d different scenarios merged on purpose (--mixed): %s; every figure mixes their workloads, "+
		"and the workload described is the first file's", len(names), strings.Join(names, ", ")))
}
