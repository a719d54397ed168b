package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
)

const reportUsage = `Usage: bench report RESULTS... [--format text|json|csv|vllm] [--verbose] [--partial] [--mixed]

Rebuilds the summary from saved results files (results.jsonl or .jsonl.gz,
or a run directory), merging several (from several load generators) into
one. The JSON output is byte for byte the summary.json 'bench run' wrote.
A sharded run's shards merge as with 'bench merge': all, unless --partial.
Files of different scenarios (another file, --set or --target) are refused
unless --mixed: their merged figures would describe neither. A request line
repeated, or one with an impossible value (a negative token count, a time
before the request was sent), is named with its file and line in a warning.

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
	format := choiceFlag(fs, "format", "text", []string{"text", "json", "csv", "vllm"}, "output format: text, json, csv (one row per request) or vllm (vllm bench serve's result JSON)")
	partial := fs.Bool("partial", false, "accept a sharded run's results that lack shards")
	mixed := fs.Bool("mixed", false, "merge results of different scenarios (refused otherwise: the figures would mix their workloads)")
	verbose := fs.Bool("verbose", false, "text: print every finding and the analyst's detail (decode law, Pearson r, throughput by KV-cache usage, cross-checks)")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return usageFor(fs, "report: no results file given")
	}
	switch *format {
	case "text", "json", "vllm":
	case "csv":
		warns, err := report.Reader{Mixed: *mixed}.WriteCSV(e.stdout, paths...)
		for _, w := range warns {
			fmt.Fprintf(e.stderr, "warning: %v\n", w)
		}
		if err != nil {
			return readError("report", err)
		}
		return nil
	default:
		return usagef("report: --format %q: want text, json, csv or vllm", *format)
	}
	_, s, err := report.Reader{Partial: *partial, Mixed: *mixed}.Rebuild(paths...)
	if err != nil {
		return readError("report", err)
	}
	switch *format {
	case "json":
		return report.WriteJSON(e.stdout, s)
	case "vllm":
		return report.WriteVLLM(e.stdout, s)
	}
	return report.Text{Verbose: *verbose}.Write(e.stdout, s)
}

// readError is cmd's failure to read results files: files of different
// scenarios are the command line's fault (exit 2), anything else the
// files' (exit 1).
func readError(cmd string, err error) error {
	err = fmt.Errorf("%s: %w", cmd, err)
	if errors.Is(err, results.ErrMixedScenarios) {
		return usageError{err: err}
	}
	return err
}
