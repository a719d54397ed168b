package cli

import (
	"context"
	"fmt"

	"github.com/servebench/servebench/report"
)

const reportUsage = `Usage: bench report RESULTS... [--format text|json|csv|vllm] [--partial]

Rebuilds the summary from saved results files (results.jsonl or .jsonl.gz,
or a run directory), merging several (from several load generators) into
one. The JSON output is byte for byte the summary.json 'bench run' wrote.
A sharded run's shards merge as with 'bench merge': all, unless --partial.

--format csv writes one row per request (its times, tokens and outcome),
for a spreadsheet or a notebook; --format vllm writes one JSON object per
stage with the keys of 'vllm bench serve --save-result', so dashboards
and scripts built on vLLM's benchmark keep working.

Examples:
  bench report runs/quickstart-20261122-030000/results.jsonl
  bench report runs/quickstart-20261122-030000 --format json > summary.json
  bench report hostA/results.jsonl hostB/results.jsonl
  bench report runs/quickstart-20261122-030000 --format csv > requests.csv
  bench report runs/big                    # a directory of shard-*/ run directories
`

func reportCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "report", reportUsage)
	format := fs.String("format", "text", "output format: text, json, csv (one row per request) or vllm (vllm bench serve's result JSON)")
	partial := fs.Bool("partial", false, "accept a sharded run's results that lack shards")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		fs.Usage()
		return usagef("report: no results file given")
	}
	switch *format {
	case "text", "json", "vllm":
	case "csv":
		warns, err := report.WriteCSV(e.stdout, paths...)
		for _, w := range warns {
			fmt.Fprintf(e.stderr, "warning: %v\n", w)
		}
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		return nil
	default:
		return usagef("report: --format %q: want text, json, csv or vllm", *format)
	}
	_, s, err := report.Reader{Partial: *partial}.Rebuild(paths...)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	switch *format {
	case "json":
		return report.WriteJSON(e.stdout, s)
	case "vllm":
		return report.WriteVLLM(e.stdout, s)
	}
	return report.WriteText(e.stdout, s)
}
