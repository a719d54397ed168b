package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/servebench/servebench/internal/atomicfile"
	"github.com/servebench/servebench/twin"
	"github.com/servebench/servebench/vllmlog"
)

const calibrateUsage = `Usage: bench calibrate RESULTS... --out twin.yaml [--force] [capacity flags] [--server-log FILE]
       bench calibrate RESULTS... --holdout STAGE [--holdout STAGE ...] [--out twin.yaml]

Fits the built-in simulator to saved runs of a server (results files or run
directories, streamed with chunk times) and writes a twin: a simulator
preset file that 'target.url: sim://./twin.yaml' runs like any preset and
'bench predict' runs in virtual time.

The cost model is fitted from the token arrivals: every engine step emits a
token to each running request, so the arrivals are placed on steps, and the
steps' durations are regressed on the requests they served, the context
they read and the prompt tokens they prefilled. It prints each coefficient
with its standard error and source, and what the runs could not show:

  step_overhead_us       the fixed cost of a step
  per_seq_us             the cost of each request in a step (needs runs at two
                         or more concurrencies to be told from the fixed cost)
  per_kv_token_ns        the cost of each token of context read
  per_prefill_token_us   the cost of each prompt token (best from a low-load run)

Capacity: KV-cache blocks from the scraped KV-cache usage against the
context in flight; max_num_seqs from the server's own word where it gives
one (llama.cpp's GET /props total_slots, recorded by bench run), else from
the running gauge while requests waited. What the runs cannot show is
assumed (vLLM's defaults), said so, and recorded in the twin: bench predict
marks a value that rests on it extrapolated. Give it with the flags below.

Run-to-run variation: when a load ran more than once (give the results of
repeated runs), the spread of their step times against the fit is added
to the twin's covariance, so that bench predict's bands hold what a new
run measures; from single runs the bands are the fit's alone, and say so.

--holdout STAGE fits on the other stages and runs each held-out stage on
the twin, printing measured against predicted figures and the error of
each: how far to trust the twin on loads it has not seen.

--server-log FILE takes the capacity a vLLM server log states (its last
server start): max_num_seqs, max_num_batched_tokens, max_model_len, the
block size and the KV cache's size in tokens. Flags given explicitly win.

Exit codes: 0 done, 1 the runs cannot be fitted, 2 bad flags.

Examples:
  bench calibrate runs/c2 runs/c8 --out twin.yaml
  bench calibrate runs/c2 runs/c8 --out twin.yaml --max-num-batched-tokens 8192 --max-num-seqs 256
  bench calibrate runs/ladder --holdout c16
`

func calibrateCmd(ctx context.Context, e env, args []string) error {
	fset := newFlagSet(e, "calibrate", calibrateUsage)
	out := fset.String("out", "", "write the twin (a simulator preset file) to `FILE`")
	force := fset.Bool("force", false, "replace an existing --out file")
	serverLog := fset.String("server-log", "", "take the capacity from the vLLM server log `FILE`")
	var opts twin.Options
	fset.IntVar(&opts.BlockSize, "block-size", 0, "KV-cache block size in tokens (default 16)")
	fset.IntVar(&opts.KVBlocks, "kv-blocks", 0, "usable KV-cache blocks (default: from scraped KV-cache usage)")
	fset.IntVar(&opts.MaxNumSeqs, "max-num-seqs", 0, "the server's max_num_seqs (default: the server's /props slots, else from the scrapes, else 256)")
	fset.IntVar(&opts.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "the server's max_num_batched_tokens (default 2048)")
	fset.IntVar(&opts.MaxModelLen, "max-model-len", 0, "the server's max_model_len (default: the KV capacity, at most 131072)")
	var holdout multiFlag
	fset.Var(&holdout, "holdout", "hold out the stage `NAME` (repeatable, or comma-separated): fit on the others, predict it")
	paths, err := parseFlags(fset, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return usageFor(fset, "calibrate: no results file given")
	}
	for _, h := range holdout {
		for _, name := range strings.Split(h, ",") {
			if name = strings.TrimSpace(name); name != "" {
				opts.Holdout = append(opts.Holdout, name)
			}
		}
	}
	if *out == "" && len(opts.Holdout) == 0 {
		return usagef("calibrate: --out FILE is required (where to write the twin)")
	}
	if *out != "" && !*force {
		if _, err := os.Stat(*out); err == nil {
			return usagef("calibrate: %s exists: choose another --out, or pass --force to replace it", *out)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if *serverLog != "" {
		rep, err := vllmlog.ParseFiles(ctx, []string{*serverLog}, vllmlog.Options{})
		if err != nil {
			return usageError{err: fmt.Errorf("calibrate: --server-log: %w", err)}
		}
		taken, err := opts.FromLog(rep)
		if err != nil {
			return usageError{err: fmt.Errorf("calibrate: --server-log %s: %w", *serverLog, err)}
		}
		for _, t := range taken {
			fmt.Fprintf(e.stderr, "from %s: %s\n", *serverLog, t)
		}
	}
	var res *twin.Result
	if len(opts.Holdout) > 0 {
		h, err := twin.Holdout(ctx, paths, opts)
		if err != nil {
			return calibrateErr(err)
		}
		res = h.Calibration
		if err := twin.WriteReport(e.stdout, res); err != nil {
			return err
		}
		if err := twin.WriteHoldout(e.stdout, h); err != nil {
			return err
		}
	} else {
		if res, err = twin.Calibrate(paths, opts); err != nil {
			return calibrateErr(err)
		}
		if err := twin.WriteReport(e.stdout, res); err != nil {
			return err
		}
	}
	if *out == "" {
		return nil
	}
	var b bytes.Buffer
	if err := twin.WriteConfig(&b, res); err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(*out, b.Bytes()); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	url := "sim://" + *out
	if !filepath.IsAbs(*out) {
		url = "sim://./" + strings.TrimPrefix(*out, "./")
	}
	fmt.Fprintf(e.stdout, "twin: %s (run it with target.url: %s, or bench predict SCENARIO --twin %s)\n", *out, url, *out)
	return nil
}

// calibrateErr maps a stage the runs lack to a usage error.
func calibrateErr(err error) error {
	if strings.Contains(err.Error(), "no stage") {
		return usageError{err: err}
	}
	return err
}
