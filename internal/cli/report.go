package cli

import (
	"context"
	"fmt"

	"github.com/servebench/servebench/report"
)

const reportUsage = `Usage: bench report RESULTS... [--format text|json] [--partial]

Rebuilds the summary from saved results files (results.jsonl or .jsonl.gz,
or a run directory), merging several (from several load generators) into
one. The JSON output is byte for byte the summary.json 'bench run' wrote.
A sharded run's shards merge as with 'bench merge': all, unless --partial.

Examples:
  bench report runs/quickstart-20261122-030000/results.jsonl
  bench report runs/quickstart-20261122-030000 --format json > summary.json
  bench report hostA/results.jsonl hostB/results.jsonl
  bench report runs/big                    # a directory of shard-*/ run directories
`

func reportCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "report", reportUsage)
	format := fs.String("format", "text", "output format: text or json")
	partial := fs.Bool("partial", false, "accept a sharded run's results that lack shards")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		fs.Usage()
		return usagef("report: no results file given")
	}
	if *format != "text" && *format != "json" {
		return usagef("report: --format %q: want text or json", *format)
	}
	_, s, err := report.Reader{Partial: *partial}.Rebuild(paths...)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if *format == "json" {
		return report.WriteJSON(e.stdout, s)
	}
	return report.WriteText(e.stdout, s)
}
