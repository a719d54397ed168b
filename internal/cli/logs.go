package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/servebench/servebench/vllmlog"
)

const logsUsage = `Usage: bench logs FILE... [--format text|json|markdown] [--out DIR] [--model-config FILE] [--follow]

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

Exits 1 when a file is another engine's log (SGLang, TGI, llama.cpp: named)
or holds nothing bench logs understood.

Examples:
  bench logs server.log
  bench logs server.log --format markdown --out log-report > server-log.md
  bench logs server.log --model-config config.json --follow
`

func logsCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "logs", logsUsage)
	format := fs.String("format", "text", "output format: text, json or markdown")
	out := fs.String("out", "", "directory for logs.json and the plots")
	var opts vllmlog.Options
	fs.StringVar(&opts.ModelConfig, "model-config", "", "the served model's config.json, for the KV check")
	follow := fs.Bool("follow", false, "tail one growing log; print each new stats line")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 || (*follow && len(paths) > 1) || !vllmlog.ValidFormat(*format) {
		fs.Usage()
		return usagef("logs: want log files (one with --follow) and --format text, json or markdown")
	}
	if *follow {
		return vllmlog.Follow(ctx, paths[0], opts, *format, 0, e.stdout)
	}
	rep, err := vllmlog.ParseFiles(ctx, paths, opts)
	if err == nil && *out != "" {
		_, err = vllmlog.WriteFiles(*out, rep)
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
