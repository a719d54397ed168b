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

const selftestUsage = `Usage: bench selftest [--streams 1,64,1000,10000] [--duration 3s] [--warmup 1s] [--rounds 3]
                      [--chunks 2000] [--source URL [--allow-remote] [--model NAME]] [--format text|json]

Measures how many SSE chunks per second servebench takes in on this
machine from a zero-latency source (the client, with each record written
to a results file and aggregated, as a run does), beside a raw reader that
only counts data lines over the same kind of connections. The ratio says how
much of the machine's ingest capacity a run leaves usable: below it, the
harness, not the server, limits the figures. Run it on the machine that
will generate load, idle.

Both sides are measured alike: each runs its streams for --warmup, then
counts the chunks that arrive within --duration (finished responses or
not); the sides alternate over --rounds rounds, and the table gives each
figure's median and the ratio's spread (its range over the rounds). With
--source the chunks come from that server (the one a run will load, or a
mock), so its own pace is part of what both sides read; a host that is
not loopback needs --allow-remote. Without it, a built-in source in this
process serves --chunks chunks per response.

Examples:
  bench selftest
  bench selftest --streams 64 --duration 5s --rounds 5
  bench selftest --streams 1,64,1000 --source http://127.0.0.1:8100
`

func selftestCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "selftest", selftestUsage)
	streams := fs.String("streams", "1,64,1000,10000", "stream counts to measure, comma-separated")
	cfg := selftest.Config{}
	fs.DurationVar(&cfg.Duration, "duration", 0, "measured window of each side in each round (default 3s)")
	fs.DurationVar(&cfg.Warmup, "warmup", 0, "each side's run before its window (default 1s)")
	fs.IntVar(&cfg.Rounds, "rounds", 0, "interleaved rounds (default 3)")
	fs.IntVar(&cfg.Chunks, "chunks", 0, "token chunks per response (default 2000)")
	fs.StringVar(&cfg.Source, "source", "", "an external OpenAI-compatible server to read from (default: a built-in source)")
	fs.BoolVar(&cfg.AllowRemote, "allow-remote", false, "let --source be a host that is not loopback")
	fs.StringVar(&cfg.Model, "model", "", "the model to ask --source for (default: the first it lists)")
	format := choiceFlag(fs, "format", "text", []string{"text", "json"}, "output format: text or json")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageFor(fs, "selftest: takes no arguments, got %q", pos)
	}
	if cfg.Rounds < 0 || cfg.Chunks < 0 || cfg.Duration < 0 || cfg.Warmup < 0 {
		return usagef("selftest: --rounds, --chunks, --duration and --warmup cannot be negative")
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
		fmt.Fprintf(e.stderr, "%d streams: servebench %.0f chunks/s, raw %.0f, ratio %.2f (%.2f–%.2f)\n", r.Streams, r.Client.ChunksPerSec, r.Raw.ChunksPerSec,
			r.Ratio, r.RatioMin, r.RatioMax)
	})
	if *format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return errors.Join(err, enc.Encode(rows))
	}
	return errors.Join(err, selftest.WriteText(e.stdout, rows))
}
