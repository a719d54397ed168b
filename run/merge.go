package run

import (
	"fmt"

	"github.com/servebench/servebench/report"
)

// Merge reads several results files as one run (the shards of a sharded
// run, or files of one run from several machines; rd says whether a
// partial shard set is accepted) and writes into dir, which must exist,
// what a run writes beside its results: summary.json, judged by the
// recorded budgets when the files hold the whole load (with junit.xml and
// verdict.md), and the pictures through r (nil: none). It returns the
// summary.
func Merge(dir string, rd report.Reader, r Renderer, paths ...string) (*report.Summary, error) {
	agg, sum, err := rd.Rebuild(paths...)
	if err != nil {
		return nil, err
	}
	if err := WriteSummaryFiles(dir, sum); err != nil {
		return sum, err
	}
	if r == nil || sum.Overall.Requests.OK == 0 { // no plots of nothing
		return sum, nil
	}
	if err := r.Render(dir, agg, sum); err != nil {
		return sum, fmt.Errorf("plots: %w", err)
	}
	return sum, nil
}
