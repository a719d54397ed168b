package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestIssue22MixedScenarios (issue 22, item 4): bench report, merge and
// plot merged the results of different scenarios without a word, under
// the first file's name, and took a duplicated request line and a negative
// token count as they came. Runs of different scenarios are refused (exit
// 2) unless --mixed, which names them all and warns; runs of one scenario
// still merge; a repeated line and an impossible value are named, with
// their file and line, in the summary's warnings.
func TestIssue22MixedScenarios(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runOf := func(name, in string) string {
		out := filepath.Join(dir, name)
		e, _, errb := testEnv()
		args := []string{"run", "--target", "sim://tiny", "--virtual", "--concurrency", "1", "--requests", "4",
			"--input-tokens", in, "--output-tokens", "4", "--out", out, "--quiet"}
		if err := bench(context.Background(), e, args); err != nil {
			t.Fatalf("run %s: %v\n%s", name, err, errb)
		}
		return out
	}
	a, b, same := runOf("a", "8"), runOf("b", "16"), runOf("same", "8")
	cmd := func(args ...string) (int, string) {
		e, out, errb := testEnv()
		err := bench(context.Background(), e, args)
		text := out.String() + errb.String()
		if err != nil {
			text += err.Error()
		}
		return exitCode(err), text
	}
	const refusal = "ran different scenarios: their merged figures would describe neither; pass --mixed to merge them anyway"
	for _, args := range [][]string{
		{"report", a, b}, {"report", a, b, "--format", "csv"}, {"merge", a, b, "--out", filepath.Join(dir, "m")},
		{"plot", a, b, "--out", filepath.Join(dir, "p")}, {"check", a, b},
	} {
		if code, text := cmd(args...); code != exitUsage || !strings.Contains(text, refusal) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", args, code, exitUsage, refusal, text)
		}
	}
	if code, text := cmd("report", a, b, "--mixed"); code != exitOK ||
		!strings.Contains(text, "2 different scenarios merged on purpose (--mixed)") {
		t.Errorf("--mixed: exit %d:\n%s", code, text)
	}
	if code, text := cmd("report", a, same); code != exitOK || strings.Contains(text, "--mixed") {
		t.Errorf("two runs of one scenario: exit %d:\n%s", code, text)
	}

	// A copy of a's results with a request line repeated and another's
	// output_tokens made negative.
	data, err := os.ReadFile(filepath.Join(a, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	var first, second int // lines (from 1) of the first two request records
	for l := range strings.SplitSeq(strings.TrimSuffix(string(data), "\n"), "\n") {
		lines = append(lines, l)
		if strings.HasPrefix(l, `{"kind":"request"`) {
			if first == 0 {
				first = len(lines)
			} else if second == 0 {
				second = len(lines)
			}
		}
	}
	lines[second-1] = strings.Replace(lines[second-1], `"output_tokens":4`, `"output_tokens":-5`, 1)
	lines = append(lines[:first], append([]string{lines[first-1]}, lines[first:]...)...)
	edited := filepath.Join(dir, "edited.jsonl")
	if err := os.WriteFile(edited, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, text := cmd("report", edited)
	for _, want := range []string{
		"1 request records repeat a sequence number of their file, and are counted again",
		edited + ":" + strconv.Itoa(first+1) + ": request seq 0 again (first at line " + strconv.Itoa(first) + ")",
		"1 request records hold impossible values",
		edited + ":" + strconv.Itoa(second+1) + ": request seq 1: output_tokens is -5: a count is never negative",
		"1 request records were skipped: they have a negative token count",
	} {
		if code != exitOK || !strings.Contains(text, want) {
			t.Errorf("report of the edited file: exit %d, want %q in:\n%s", code, want, text)
		}
	}
	if _, text := cmd("report", edited, "--format", "csv"); !strings.Contains(text, "request seq 0 again") {
		t.Errorf("the CSV export does not warn of the repeated line:\n%.2000s", text)
	}
}

// TestIssue22DryRunMetricsAddr (issue 22, item 9): --dry-run accepted a
// --metrics-addr on every interface that the run itself refuses; it is
// checked the same way now, without listening.
func TestIssue22DryRunMetricsAddr(t *testing.T) {
	t.Parallel()
	base := []string{"run", "--target", "sim://tiny", "--concurrency", "1", "--requests", "1", "--input-tokens", "8", "--output-tokens", "4", "--dry-run"}
	checkCLI(t, cliCase{"every interface", append(slices.Clone(base), "--metrics-addr", "0.0.0.0:9464"), exitUsage, "want a loopback address"})
	checkCLI(t, cliCase{"loopback", append(slices.Clone(base), "--metrics-addr", "127.0.0.1:0"), exitOK, "dry run"})
}

// TestIssue22OutputsNamed (issue 22, item 9): on a full disk bench run
// named a summary and a report it had not written. Only the files there
// are named.
func TestIssue22OutputsNamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	printOutputs(&b, dir)
	want := "results: " + filepath.Join(dir, "results.jsonl") + "\nsummary: not written\nreport:  not written\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
