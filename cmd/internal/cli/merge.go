package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/chart"
	"github.com/servebench/servebench/run"
)

const mergeUsage = `Usage: bench merge RESULTS... --out DIR [--partial] [--mixed] [--force]

Merges the results of a sharded run ('bench run --shard I/N' on N machines)
into the run's: one summary, the plots and report.html in DIR, exactly as
one machine sending the whole load would have written them. RESULTS are
results files, run directories, or a directory whose subdirectories are
the shards' run directories (shard-0/, shard-1/, … on a shared volume).

The merge is exact: every request record of every shard goes into one
aggregation (the latency histograms record every value; counts and tokens
add up), on one timeline aligned by the shards' wall-clock start times.
When several shards scraped the same server, one shard's scrapes are kept.
The order of RESULTS does not matter.

It refuses files of different scenarios (the headers' scenario hashes
differ; whole runs of different scenarios too, unless --mixed), a shard
given twice, whole runs mixed with shards, and a set that lacks shards
unless --partial. A request line repeated, or one with an impossible value,
is named with its file and line in a warning. It warns when a shard began its load more
than a second after the agreed --start-at, or the shards began more than a
second apart. The scenario's budgets judge the merged set (exit code 3
when one is missed; junit.xml and verdict.md in DIR), unless --partial
left shards out.

'bench report', 'plot', 'check' and 'compare' read shard sets the same
way, with --partial and --mixed too.

Examples:
  bench merge runs/big/shard-0 runs/big/shard-1 runs/big/shard-2 --out runs/big/merged
  bench merge runs/big --out runs/big/merged          # every shard-*/ inside runs/big
  bench merge hostA/results.jsonl hostC/results.jsonl --out partial --partial
`

func mergeCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "merge", mergeUsage)
	outDir := fs.String("out", "", "output `directory` for summary.json, the plots and report.html (required)")
	partial := fs.Bool("partial", false, "merge a shard set that lacks shards (the summary names the missing ones)")
	mixed := fs.Bool("mixed", false, "merge results of different scenarios (refused otherwise: the figures would mix their workloads)")
	force := fs.Bool("force", false, "write into an --out directory that already holds a run, replacing its files")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return usageFor(fs, "merge: no results file given")
	}
	if *outDir == "" {
		return usagef("merge: --out DIR is required")
	}
	if err := run.PrepareDir(*outDir, *force, chart.Renderer{}); err != nil {
		var used *run.UsedDirError
		if errors.As(err, &used) {
			return usageError{err: err}
		}
		return fmt.Errorf("merge: %w", err)
	}
	sum, err := run.Merge(*outDir, report.Reader{Partial: *partial, Mixed: *mixed}, chart.Renderer{}, paths...)
	if sum == nil {
		return readError("merge", err)
	}
	if werr := report.WriteText(e.stdout, sum); werr != nil {
		return errors.Join(err, werr)
	}
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	fmt.Fprintf(e.stdout, "summary: %s\nreport:  %s\n", filepath.Join(*outDir, run.FileSummary), filepath.Join(*outDir, chart.HTMLName))
	return printVerdict(e, sum, *outDir)
}
