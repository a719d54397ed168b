package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/servebench/servebench/selftest"
)

const selftestUsage = `Usage: bench selftest [--streams 1,64,1000,10000] [--duration 2s] [--format text|json]

Measures how many SSE chunks per second servebench's client takes in on
this machine, against a zero-latency source on loopback, beside a raw
reader that only counts data lines over the same kind of connections. The
ratio says how much of the machine's ingest capacity a run leaves usable:
below it, the harness, not the server, limits the figures. Run it on the
machine that will generate load, idle.

Examples:
  bench selftest
  bench selftest --streams 64 --duration 5s
`

func selftestCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "selftest", selftestUsage)
	streams := fs.String("streams", "1,64,1000,10000", "stream counts to measure, comma-separated")
	cfg := selftest.Config{}
	fs.DurationVar(&cfg.Duration, "duration", 0, "length of each measurement (default 2s)")
	format := choiceFlag(fs, "format", "text", []string{"text", "json"}, "output format: text or json")
	if pos, err := parseFlags(fs, args); err != nil || len(pos) > 0 {
		return errors.Join(err, usagef("selftest: takes no arguments"))
	}
	for _, s := range strings.Split(*streams, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 20000 {
			return usagef("selftest: --streams %q: want stream counts from 1 to 20000", s)
		}
		cfg.Streams = append(cfg.Streams, n)
	}
	rows, err := selftest.Run(ctx, cfg, func(r selftest.Row) {
		if r.Skipped != "" {
			fmt.Fprintf(e.stderr, "%d streams: skipped\n", r.Streams)
			return
		}
		fmt.Fprintf(e.stderr, "%d streams: servebench %.0f chunks/s, raw %.0f, ratio %.2f\n", r.Streams, r.Client.ChunksPerSec, r.Raw.ChunksPerSec, r.Ratio)
	})
	if *format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return errors.Join(err, enc.Encode(rows))
	}
	return errors.Join(err, selftest.WriteText(e.stdout, rows))
}
