package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/sim"
	"github.com/servebench/servebench/sweep"
	"github.com/servebench/servebench/twin"
)

const predictUsage = `Usage: bench predict SCENARIO --twin twin.yaml [--out DIR] [--no-band] [--format text|json] [--set path=value ...]

Runs a scenario's sweep or search (or the scenario once, without a sweep
block) on a twin written by 'bench calibrate', in virtual time, and prints
the predicted TTFT, ITL and throughput per value, each with a band: the
sweep runs again on twins perturbed by one standard deviation along each
principal direction of the twin's covariance (the fit's uncertainty, plus
the run-to-run variation when the calibration repeated a load), and the
band is ±1.96 propagated standard deviations (95 %, a linear
approximation; Student's t for the run-to-run variation's degrees of
freedom). The header says whether the band is the fit's alone
("fit-only"). A search prints the capacity and its spread over those twins.

The twin replaces the scenario's target and any sweep.server section;
server-setting parameters become the twin's settings (vLLM's names, like
max_num_batched_tokens). DIR receives the central prediction: a directory
per value with its results and summary, and sweep.json, sweep.csv,
sweep.png and sweep.html.

A twin extrapolates with the simulator's cost law: trust it most between
the loads it was calibrated on (see 'bench calibrate --holdout'). A value
beyond them (more requests at once than the runs decoded, longer prompts
or responses) or resting on a setting the calibration assumed is marked *
and explained under the table, with no band.

Exit codes: 0 done (a prediction is never a verdict), 1 the prediction
failed, 2 bad scenario, twin or flags.

Examples:
  bench predict scenarios/mnbt-sweep.yaml --twin twin.yaml
  bench predict scenarios/release-gate.yaml --twin twin.yaml --set 'sweep.search.parameter=load.stages[1].rate' --set 'sweep.search.between=[5, 80]'
  bench predict my.yaml --twin twin.yaml --no-band --format json > prediction.json
`

func predictCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "predict", predictUsage)
	twinFile := fs.String("twin", "", "the twin `FILE` from bench calibrate")
	outDir := fs.String("out", "", "output directory (default runs/NAME-predict-YYYYMMDD-HHMMSS)")
	noBand := fs.Bool("no-band", false, "skip the band (one sweep instead of one per perturbed twin)")
	format := choiceFlag(fs, "format", "text", []string{"text", "json"}, "stdout format: text or json")
	var sets multiFlag
	fs.Var(&sets, "set", "override a scenario field, `path=value` (repeatable)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageFor(fs, "predict: want exactly one scenario file, got %d", len(pos))
	}
	if *twinFile == "" {
		return usagef("predict: --twin FILE is required (write one with bench calibrate)")
	}
	if *format != "text" && *format != "json" {
		return usagef("predict: --format %q: want text or json", *format)
	}
	sc, err := scenario.Load(pos[0])
	if err != nil {
		return usageError{err: err}
	}
	if err := sc.ApplyFlags(scenario.Flags{}, sets...); err != nil {
		return usageError{err: err}
	}
	dir := *outDir
	if dir == "" {
		dir = filepath.Join("runs", safeName(sc.Name)+"-predict-"+time.Now().Format("20060102-150405"))
	}
	if _, err := sim.LoadConfig(*twinFile); err != nil {
		return usageError{err: fmt.Errorf("predict: --twin: %w", err)}
	}
	pred, err := twin.Predict(ctx, sc, *twinFile, twin.PredictOptions{Dir: dir, NoBand: *noBand, Log: e.stderr})
	var fe *scenario.FieldError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return errInterrupted
	case errors.As(err, &fe):
		return usageError{err: fmt.Errorf("predict: %w", err)}
	default:
		return fmt.Errorf("predict: %w", err)
	}
	if *format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(pred)
	}
	if err := twin.WritePrediction(e.stdout, pred); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "prediction: %s, %s\n", filepath.Join(dir, sweep.FileJSON), filepath.Join(dir, sweep.FileHTML))
	return nil
}
