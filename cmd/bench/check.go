package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/scenario"
)

const checkUsage = `Usage: bench check RESULTS... [--budgets SCENARIO] [--format text|json|markdown|junit] [--out DIR]

Judges saved results against latency budgets, without running anything.
RESULTS are results files or run directories (several are merged, as by
'bench report'). The budgets (and the slo for goodput) come from the
scenario file given with --budgets, or else from the scenario recorded in
the results header: 'bench check DIR' re-judges a run with its own budgets.

Each budget passes or fails with the measured value, the limit and the
margin. A percentile measured on fewer samples than its minimum is a
warning (a failure with budgets.strict: true). The exit code is 0 when
every budget is met and 3 when one is missed; 2 for a bad budgets file, 1
for unreadable results.

--format chooses what goes to stdout: the text table, the summary JSON with
its "verdict", a Markdown snippet for a pull-request comment, or JUnit XML
(one test case per budget) for CI. --out DIR also writes summary.json,
junit.xml and verdict.md there.

Examples:
  bench check results/gate-20261122-030000
  bench check results/gate-20261122-030000 --budgets scenarios/release-gate.yaml
  bench check hostA/results.jsonl hostB/results.jsonl --budgets gate.yaml --format junit > junit.xml
  bench check results/nightly --budgets gate.yaml --format markdown > comment.md
`

// errBudget marks a run or check that completed but missed a budget
// (exit code 3).
var errBudget = errors.New("budget missed")

func checkCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "check", checkUsage)
	budgetsFile := fs.String("budgets", "", "scenario `file` whose budgets and slo to judge by (default: the results' own scenario)")
	format := fs.String("format", "text", "stdout format: text, json, markdown or junit")
	outDir := fs.String("out", "", "also write summary.json, junit.xml and verdict.md into `DIR`")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		fs.Usage()
		return usagef("check: no results file given")
	}
	switch *format {
	case "text", "json", "markdown", "junit":
	default:
		return usagef("check: --format %q: want text, json, markdown or junit", *format)
	}
	for i, p := range paths {
		paths[i] = resultsPath(p)
	}
	g, err := checkGate(paths[0], *budgetsFile)
	if err != nil {
		return err
	}
	agg, err := report.FromFiles(paths, nil)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	sum := agg.Summary()
	sum.Verdict = agg.Evaluate(sum, g.budgets, g.slo)
	sum.Verdict.Source = g.source
	if *outDir != "" {
		if err := os.MkdirAll(*outDir, 0o755); err != nil {
			return fmt.Errorf("check: %w", err)
		}
		if err := writeVerdictFiles(*outDir, sum); err != nil {
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
	budgets *scenario.Budgets
	slo     *scenario.SLO
	source  string // the budgets file, for Verdict.Source; "" for the run's own scenario
}

// checkGate reads the budgets from a scenario file, or from the resolved
// scenario in the header of the results file at path.
func checkGate(path, file string) (gate, error) {
	if file != "" {
		sc, err := scenario.Load(file)
		if err != nil {
			return gate{}, usageError{err}
		}
		if sc.Budgets == nil {
			return gate{}, usagef("check: %s has no budgets block", file)
		}
		return gate{sc.Budgets, sc.SLO, file}, nil
	}
	r, err := client.Open(path)
	if err != nil {
		return gate{}, fmt.Errorf("check: %w", err)
	}
	defer r.Close()
	if !r.Scan() || r.Kind() != client.KindHeader {
		if r.Err() != nil {
			return gate{}, fmt.Errorf("check: %w", r.Err())
		}
		return gate{}, fmt.Errorf("check: %s: no header record", path)
	}
	var sc struct {
		SLO     *scenario.SLO     `json:"slo"`
		Budgets *scenario.Budgets `json:"budgets"`
	}
	if err := json.Unmarshal(r.Header().Scenario, &sc); err != nil {
		return gate{}, fmt.Errorf("check: %s: scenario in the header: %w", path, err)
	}
	if sc.Budgets == nil {
		return gate{}, usagef("check: the scenario recorded in %s has no budgets: pass --budgets SCENARIO", path)
	}
	return gate{sc.Budgets, sc.SLO, ""}, nil
}

// judgeByHeader judges sum by the budgets recorded in the header of the
// results file at path, when it has any, so that 'bench report' rebuilds a
// gated run's summary.json byte for byte.
func judgeByHeader(agg *report.Aggregate, sum *report.Summary, path string) {
	g, err := checkGate(path, "")
	if err != nil {
		return
	}
	sum.Verdict = agg.Evaluate(sum, g.budgets, g.slo)
	sum.Verdict.Source = g.source
}

// summarize rebuilds the summary from a run's results file, exactly as
// 'bench report' does, judges it when g has budgets, and writes
// summary.json into dir; with a verdict, also junit.xml and verdict.md.
func summarize(results, dir string, g gate) (*report.Summary, error) {
	agg, err := report.FromFiles([]string{results}, nil)
	if err != nil {
		return nil, err
	}
	sum := agg.Summary()
	if g.budgets != nil {
		sum.Verdict = agg.Evaluate(sum, g.budgets, g.slo)
		sum.Verdict.Source = g.source
	}
	return sum, writeVerdictFiles(dir, sum)
}

// writeVerdictFiles writes summary.json into dir and, when the summary has
// a verdict, junit.xml and verdict.md.
func writeVerdictFiles(dir string, sum *report.Summary) error {
	type output struct {
		name  string
		write func(io.Writer, *report.Summary) error
	}
	files := []output{{"summary.json", report.WriteJSON}}
	if sum.Verdict != nil {
		files = append(files, output{"junit.xml", report.WriteJUnit}, output{"verdict.md", report.WriteVerdictMarkdown})
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(dir, f.name), func(w io.Writer) error { return f.write(w, sum) }); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
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
	fmt.Fprintf(e.stdout, "verdict: %s, %s\n", filepath.Join(dir, "junit.xml"), filepath.Join(dir, "verdict.md"))
	return budgetErr(sum.Verdict)
}

func budgetErr(v *report.Verdict) error {
	if v == nil || v.Pass {
		return nil
	}
	return fmt.Errorf("%w: %d of %d budgets missed", errBudget, v.Failed, len(v.Checks))
}
