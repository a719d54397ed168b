package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/servebench/servebench/replay"
	"github.com/servebench/servebench/report/chart"
	"github.com/servebench/servebench/vllmlog"
)

const logsUsage = `Usage: bench logs FILE... [--format text|json|markdown] [--out DIR] [--model-config FILE] [--follow]
       bench logs FILE --replay DIR [--force] [--model-config FILE]

Explains vLLM server logs (V0 and V1 engines, 0.2 to 0.24; raw, or pasted
from a terminal, a web page, CI output, docker or journalctl), each server
start: the settings and why each figure is what it is, where start-up time
went, the KV cache recomputed from the model's layers (built in for the seed
logs' models, else --model-config), throughput over time and what the numbers
imply (a stalled engine, what held requests waiting, decode decay), each
diagnosis with the lines it rests on, tracebacks folded to their exception,
warnings, hints, and how many lines were not understood. --out DIR adds
logs.json and startup and decay plots; --follow prints each new stats line of
one growing log until Ctrl-C.

--replay DIR rebuilds the load the log's stats lines show (requests
arriving, running, waiting and leaving; prompt and generation throughput)
and writes DIR/replay.yaml, a scenario that replays it on DIR/server.yaml,
a simulator built from the log's settings and KV-cache figures with a step
cost fitted to its throughput, through DIR/trace.jsonl, the arrivals.
It then runs the scenario on the simulator in virtual time and prints the
log's stats lines beside the simulator's at the same times, and what was
assumed and what the log could not tell (also in the scenario's
description). 'bench run DIR/replay.yaml' replays it in real time; the
run's sim.log prints the simulator's stats lines. A log with fewer than two
timed stats lines, or none showing work, is refused (exit 1) with why.

Exits 1 when a file is another engine's log (SGLang, TGI, llama.cpp: named)
or holds nothing bench logs understood.

Examples:
  bench logs server.log
  bench logs server.log --format markdown --out log-report > server-log.md
  bench logs server.log --model-config config.json --follow
  bench logs server.log --replay replay && bench run replay/replay.yaml
`

func logsCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "logs", logsUsage)
	format := choiceFlag(fs, "format", "text", []string{"text", "json", "markdown"}, "output format: text, json or markdown")
	out := fs.String("out", "", "directory for logs.json and the plots")
	var opts vllmlog.Options
	fs.StringVar(&opts.ModelConfig, "model-config", "", "the served model's config.json, for the KV check")
	follow := fs.Bool("follow", false, "tail one growing log; print each new stats line")
	replayDir := fs.String("replay", "", "write a scenario, simulator and trace replaying the log's load into `DIR`")
	force := fs.Bool("force", false, "with --replay, replace the files of an earlier replay")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 || (*follow && len(paths) > 1) || !vllmlog.ValidFormat(*format) {
		return usageFor(fs, "logs: want log files (one with --follow) and --format text, json or markdown")
	}
	if *replayDir != "" && (len(paths) > 1 || *follow || *out != "" || *format != "text") {
		return usagef("logs: --replay takes one log file, and neither --follow, --out nor --format")
	}
	if *follow {
		return vllmlog.Follow(ctx, paths[0], opts, *format, 0, e.stdout)
	}
	rep, err := vllmlog.ParseFiles(ctx, paths, opts)
	if err == nil && *replayDir != "" {
		return replayLog(ctx, e, rep, *replayDir, *force)
	}
	if err == nil && *out != "" {
		_, err = chart.WriteLogFiles(*out, rep)
	}
	if err != nil {
		return err
	}
	if err := vllmlog.Write(e.stdout, rep, *format); err != nil {
		return err
	}
	if bad := rep.Unreadable(); len(bad) > 0 {
		return fmt.Errorf("logs: %s (bench logs explains vLLM server logs)", strings.Join(bad, "; "))
	}
	return nil
}

// replayLog writes the replay of the log's load into dir, runs it in
// virtual time and prints the comparison.
func replayLog(ctx context.Context, e env, rep *vllmlog.Report, dir string, force bool) error {
	if bad := rep.Unreadable(); len(bad) > 0 {
		return fmt.Errorf("logs: %s (bench logs explains vLLM server logs)", strings.Join(bad, "; "))
	}
	r, err := replay.Build(rep)
	if err != nil {
		return fmt.Errorf("logs --replay: %w", err)
	}
	path, err := r.Write(dir, force)
	if err != nil {
		if strings.Contains(err.Error(), "--force") {
			return usageError{err: err}
		}
		return err
	}
	cmp, err := replay.Check(ctx, path, r)
	if err != nil {
		return err
	}
	return replay.WriteSummary(e.stdout, r, path, cmp)
}
