package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/chart"
	"github.com/servebench/servebench/results"
)

const plotUsage = `Usage: bench plot RESULTS... [--out DIR] [--partial] [--mixed]

Draws a run's plots and HTML report from saved results files (results.jsonl
or .jsonl.gz, or a run directory), exactly as 'bench run' drew them, into DIR
(default: the first results file's directory): timeline, decay, latency and
stages as PNG and SVG, and report.html. Files of different scenarios are
refused unless --mixed, as by 'bench report'.

Examples:
  bench plot runs/quickstart-20261122-030000
  bench plot runs/decay/results.jsonl --out /tmp/decay-plots
  bench plot hostA/results.jsonl hostB/results.jsonl --out merged
`

func plotCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "plot", plotUsage)
	outDir := fs.String("out", "", "output directory (default: the first results file's directory)")
	partial := fs.Bool("partial", false, "accept a sharded run's results that lack shards")
	mixed := fs.Bool("mixed", false, "merge results of different scenarios (refused otherwise: the figures would mix their workloads)")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return usageFor(fs, "plot: no results file given")
	}
	dir := *outDir
	if dir == "" {
		dir = filepath.Dir(results.Path(paths[0]))
		if fi, err := os.Stat(paths[0]); err == nil && fi.IsDir() {
			dir = paths[0] // a run directory, or a directory of shards
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	agg, sum, err := report.Reader{Partial: *partial, Mixed: *mixed}.Rebuild(paths...)
	if err != nil {
		return readError("plot", err)
	}
	written, err := chart.WriteFiles(dir, agg, sum)
	for _, p := range written {
		fmt.Fprintln(e.stdout, p)
	}
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}
