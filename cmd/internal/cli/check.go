package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
)

const checkUsage = `Usage: bench check RESULTS... [--budgets SCENARIO] [--format text|json|markdown|junit] [--out DIR] [--partial] [--mixed]

Judges saved results (files or run directories, merged as by 'bench
report') against the budgets and slo of --budgets SCENARIO, or of the
scenario recorded in the results: 'bench check DIR' re-judges a run.

Each budget passes or fails with its value, limit and margin; a percentile
on too few samples warns (fails with budgets.strict: true). Exit codes: 0
all met, 3 one missed, 2 bad budgets file, 1 unreadable results.

--format: the text table, the summary JSON with its verdict, Markdown for a
pull-request comment, or JUnit XML for CI. --out DIR also writes
summary.json, junit.xml and verdict.md.

Examples:
  bench check runs/gate-20261122-030000
  bench check runs/gate-20261122-030000 --budgets scenarios/release-gate.yaml
  bench check hostA/results.jsonl hostB/results.jsonl --budgets gate.yaml --format junit > junit.xml
  bench check runs/nightly --budgets gate.yaml --format markdown > comment.md
`

// errBudget marks a run or check that completed but missed a budget
// (exit code 3).
var errBudget = errors.New("budget missed")

// errInconclusive marks a run or check that completed, missed no budget,
// but could not tell whether some were met: exit code 4.
var errInconclusive = errors.New("budget inconclusive")

func checkCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "check", checkUsage)
	budgetsFile := fs.String("budgets", "", "scenario `file` whose budgets and slo to judge by (default: the results' own scenario)")
	format := choiceFlag(fs, "format", "text", []string{"text", "json", "markdown", "junit"}, "stdout format: text, json, markdown or junit")
	outDir := fs.String("out", "", "also write summary.json, junit.xml and verdict.md into `DIR`")
	partial := fs.Bool("partial", false, "accept a sharded run's results that lack shards (and judge them)")
	mixed := fs.Bool("mixed", false, "merge results of different scenarios (refused otherwise: the figures would mix their workloads)")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return usageFor(fs, "check: no results file given")
	}
	switch *format {
	case "text", "json", "markdown", "junit":
	default:
		return usagef("check: --format %q: want text, json, markdown or junit", *format)
	}
	// A bad budgets file is the user's to fix before any results are read.
	g, err := budgetsGate(*budgetsFile)
	if err != nil {
		return err
	}
	agg, err := report.Reader{Partial: *partial, Mixed: *mixed}.FromFiles(paths...)
	if err != nil {
		return readError("check", err)
	}
	if g.budgets == nil {
		if g, err = headerGate(agg); err != nil {
			return err
		}
	}
	sum := agg.Summary()
	sum.Verdict = agg.Evaluate(sum, g.budgets, g.slo)
	sum.Verdict.Source = g.source
	if *outDir != "" {
		if err := os.MkdirAll(*outDir, 0o755); err != nil {
			return fmt.Errorf("check: %w", err)
		}
		if err := run.WriteSummaryFiles(*outDir, sum); err != nil {
			return fmt.Errorf("check: %w", err)
		}
	}
	switch *format {
	case "json":
		err = report.WriteJSON(e.stdout, sum)
	case "markdown":
		err = report.WriteVerdictMarkdown(e.stdout, sum)
	case "junit":
		err = report.WriteJUnit(e.stdout, sum)
	default:
		err = report.WriteVerdictText(e.stdout, sum.Verdict)
	}
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	return budgetErr(sum.Verdict)
}

// gate is what results are judged against.
type gate struct {
	budgets *results.Budgets
	slo     *results.SLO
	source  string // the budgets file, for Verdict.Source; "" for the run's own scenario
}

// budgetsGate reads the budgets of a scenario file; an empty file name
// gives an empty gate.
func budgetsGate(file string) (gate, error) {
	if file == "" {
		return gate{}, nil
	}
	sc, err := scenario.Load(file)
	if err != nil {
		return gate{}, usageError{err: err}
	}
	if sc.Budgets == nil {
		return gate{}, usagef("check: %s has no budgets block", file)
	}
	return gate{sc.Budgets, sc.SLO, file}, nil
}

// headerGate reads the budgets of the resolved scenario recorded in the
// results' header.
func headerGate(agg *report.Aggregate) (gate, error) {
	spec := agg.Spec()
	if spec == nil || spec.Budgets == nil {
		return gate{}, usagef("check: the scenario recorded in the results has no budgets: pass --budgets SCENARIO")
	}
	return gate{spec.Budgets, spec.SLO, ""}, nil
}

// printVerdict prints a run's verdict under its summary table and returns
// errBudget when a budget was missed.
func printVerdict(e env, sum *report.Summary, dir string) error {
	if sum.Verdict == nil {
		return nil
	}
	if err := report.WriteVerdictText(e.stdout, sum.Verdict); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "verdict: %s, %s\n", filepath.Join(dir, run.FileJUnit), filepath.Join(dir, run.FileVerdict))
	return budgetErr(sum.Verdict)
}

func budgetErr(v *report.Verdict) error {
	switch {
	case v == nil || v.Pass:
		return nil
	case v.Failed == 0:
		return fmt.Errorf("%w: %d of %d budgets cannot be told met or missed (their 95 %% intervals straddle the limits)", errInconclusive, v.Inconclusive, len(v.Checks))
	}
	return fmt.Errorf("%w: %d of %d budgets missed", errBudget, v.Failed, len(v.Checks))
}
