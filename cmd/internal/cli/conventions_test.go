package cli

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestHelpGolden: `bench CMD --help` prints the command's usage to stdout,
// nothing to stderr, and exits 0, for every command; `bench help CMD`
// prints the same. The texts are golden files (go test -update rewrites
// them), so a change to a usage text is seen in review.
func TestHelpGolden(t *testing.T) {
	t.Parallel()
	for _, c := range append([]command{{name: ""}}, commands()...) {
		if c.name == "help" {
			continue
		}
		name := c.name
		if name == "" {
			name = "main"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := []string{c.name, "--help"}
			if c.name == "" {
				args = []string{"--help"}
			}
			e, out, errb := testEnv()
			err := bench(context.Background(), e, args)
			if code := exitCode(err); code != exitOK {
				t.Fatalf("%v: exit code %d (%v), want 0", args, code, err)
			}
			if errb.Len() > 0 {
				t.Errorf("%v wrote to stderr:\n%s", args, errb)
			}
			if strings.Contains(out.String(), "\n  -") && !strings.Contains(out.String(), "\n  --") {
				t.Errorf("%v lists flags with one dash", args)
			}
			golden.Check(t, filepath.Join("testdata", "help", name+".golden"), out.Bytes(), *update)

			if c.name == "" {
				return
			}
			e2, out2, errb2 := testEnv()
			err = bench(context.Background(), e2, []string{"help", c.name})
			if exitCode(err) != exitOK || out2.String() != out.String() || errb2.Len() > 0 {
				t.Errorf("bench help %s differs from bench %s --help (exit %d, stderr %q)", c.name, c.name, exitCode(err), errb2)
			}
		})
	}
}

// TestFlagMistakeToStderr: a mistaken flag prints a short message and
// the pointer to --help to stderr, nothing to stdout, and exits 2.
func TestFlagMistakeToStderr(t *testing.T) {
	t.Parallel()
	e, out, errb := testEnv()
	err := bench(context.Background(), e, []string{"report", "--no-such-flag"})
	if code := exitCode(err); code != exitUsage {
		t.Fatalf("exit code %d, want %d", code, exitUsage)
	}
	printError(e, err)
	want := "bench: report: unknown flag --no-such-flag\nRun 'bench report --help' for its flags and examples.\n"
	if out.Len() > 0 || errb.String() != want {
		t.Errorf("stdout %q\nstderr %q\nwant   %q", out, errb, want)
	}
}

// TestForgivingCLI: a mistyped flag, command or value is answered in at
// most three lines on stderr, naming what was meant, in the words the
// scenario file's messages use, with the pointer to --help instead of the
// usage text; exit code 2.
func TestForgivingCLI(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string // each must be in the output
	}{
		{[]string{"run", "--concurency", "4", "--target", "sim://tiny"}, []string{"unknown flag --concurency (did you mean --concurrency?)", "Run 'bench run --help'"}},
		{[]string{"rnu", "scenarios/quickstart.yaml"}, []string{`unknown command "rnu" (did you mean run?)`, "Run 'bench help'"}},
		{[]string{"help", "rnu"}, []string{`unknown command "rnu" (did you mean run?)`}},
		{[]string{"run", "--duration", "30"}, []string{`run: --duration: want a duration with a unit, like "30s", got "30"`}},
		{[]string{"run", "--concurrency", "four"}, []string{`--concurrency: want an integer, got "four"`}},
		{[]string{"run", "--rate", "fast"}, []string{`--rate: want a number, got "fast"`}},
		{[]string{"run", "--arrival", "poison"}, []string{`--arrival: want poisson, constant or gamma, got "poison" (did you mean poisson?)`}},
		{[]string{"run", "--concurrency"}, []string{"--concurrency needs a value: an integer"}},
		{[]string{"report", "x.jsonl", "--format", "jsno"}, []string{`--format: want text, json, csv or vllm, got "jsno" (did you mean json?)`}},
		{[]string{"sim", "--preset", "tiy"}, []string{`(did you mean tiny?)`}},
		{[]string{"run", "--target", "127.0.0.1:8000", "--concurrency", "1", "--requests", "1", "--input-tokens", "8", "--output-tokens", "8", "--dry-run"},
			[]string{`want a URL with its scheme, like http://127.0.0.1:8000, got "127.0.0.1:8000" (did you mean http://127.0.0.1:8000?)`}},
		{[]string{"run", "a.yaml", "b.yaml"}, []string{"want one scenario file", "Run 'bench run --help'"}},
	} {
		e, out, errb := testEnv()
		err := bench(context.Background(), e, tc.args)
		printError(e, err)
		if code := exitCode(err); code != exitUsage {
			t.Errorf("%v: exit code %d, want %d", tc.args, code, exitUsage)
		}
		if n := strings.Count(errb.String(), "\n"); n > 3 || out.Len() > 0 {
			t.Errorf("%v: %d lines on stderr (at most 3), stdout %q:\n%s", tc.args, n, out, errb)
		}
		for _, w := range tc.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, errb)
			}
		}
	}
}

// TestHelpHelp: 'bench help --help' and 'bench help help' print the main
// usage to stdout and exit 0.
func TestHelpHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help", "--help"}, {"help", "help"}, {"help", "-h"}} {
		e, out, errb := testEnv()
		err := bench(context.Background(), e, args)
		if exitCode(err) != exitOK || !strings.Contains(out.String(), "Commands:") || errb.Len() > 0 {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr %q", args, exitCode(err), out.Len(), errb)
		}
	}
}

// TestVersion: --version and -v print the version to stdout; the version
// command takes no arguments.
func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--version"}, {"-v"}, {"version"}} {
		e, out, errb := testEnv()
		if err := bench(context.Background(), e, args); err != nil || !strings.HasPrefix(out.String(), "servebench ") || errb.Len() > 0 {
			t.Errorf("%v: err %v, stdout %q, stderr %q", args, err, out, errb)
		}
	}
	checkCLI(t, cliCase{"version with an argument", []string{"version", "extra"}, exitUsage, `version: takes no arguments, got ["extra"]`})
}

// TestEnvFlags: SERVEBENCH_TARGET stands in for --target when the flag is
// absent; the flag wins when both are given; a bad value names the
// variable.
func TestEnvFlags(t *testing.T) {
	t.Parallel()
	scenarioFile := "../../../scenarios/mnbt-sweep.yaml"
	for _, tc := range []struct {
		name, env string
		args      []string
		want      string
	}{
		{"variable", "sim://tiny", nil, "target  sim://tiny?max_num_batched_tokens=1024"},
		{"flag wins", "sim://tiny", []string{"--target", "sim://gpt-oss-20b-a100?seed=3"}, "target  sim://gpt-oss-20b-a100?max_num_batched_tokens=1024&seed=3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, out, errb := testEnv()
			e.getenv = func(k string) string {
				if k == "SERVEBENCH_TARGET" {
					return tc.env
				}
				return ""
			}
			args := append([]string{"sweep", scenarioFile, "--dry-run", "--out", t.TempDir()}, tc.args...)
			if err := bench(context.Background(), e, args); err != nil {
				t.Fatalf("%v: %v\n%s", args, err, errb)
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("dry run lacks %q:\n%s", tc.want, out)
			}
		})
	}
	e, _, _ := testEnv()
	e.getenv = func(k string) string {
		if k == "SERVEBENCH_QUIET" {
			return "maybe"
		}
		return ""
	}
	err := bench(context.Background(), e, []string{"run", "../../../scenarios/quickstart.yaml"})
	if exitCode(err) != exitUsage || !strings.Contains(err.Error(), `SERVEBENCH_QUIET="maybe"`) {
		t.Errorf("a bad SERVEBENCH_QUIET: %v", err)
	}
}

// TestCompletionBash loads the bash completion script in bash and
// completes a command, a flag, a shell name and a help topic with it.
func TestCompletionBash(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on this machine")
	}
	e, out, _ := testEnv()
	if err := bench(context.Background(), e, []string{"completion", "bash"}); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "bench.bash")
	if err := os.WriteFile(script, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// COMP_LINE and COMP_POINT as bash sets them; COMP_WORDS as bash splits
	// them, at ':' and '=' too.
	prog := `source "$1"; shift
for w in "$@"; do COMP_LINE="$w"; COMP_POINT=${#w}; read -ra COMP_WORDS <<<"$(sed 's/[:=]/ & /g' <<<"$w")"; COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMPREPLY=(); _bench; echo "$w -> ${COMPREPLY[*]}"; done`
	cases := []string{"bench cal", "bench run --allow", "bench completion f", "bench help pre",
		"bench run --arrival p", "bench report x.jsonl --format c", "bench sim --preset gpt-oss-1",
		"bench run --set load.stages[0].ra", "bench run --target sim://ti", "bench sim --set max_num_s",
		"bench run --tokenizer o2", "bench run --concurrency 4 --over"}
	got, err := exec.Command(bash, append([]string{"-c", prog, "bash", script}, cases...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	want := "bench cal -> calibrate\nbench run --allow -> --allow-remote\nbench completion f -> fish\nbench help pre -> predict\n" +
		"bench run --arrival p -> poisson\nbench report x.jsonl --format c -> csv\nbench sim --preset gpt-oss-1 -> gpt-oss-120b-h100\n" +
		"bench run --set load.stages[0].ra -> load.stages[0].rate=\nbench run --target sim://ti -> //tiny\nbench sim --set max_num_s -> max_num_seqs=\n" +
		"bench run --tokenizer o2 -> o200k_base\nbench run --concurrency 4 --over -> --overflow\n"
	if string(got) != want {
		t.Errorf("completions:\n%s\nwant:\n%s", got, want)
	}
	for _, shell := range []string{"zsh", "fish"} {
		e, out, _ := testEnv()
		if err := bench(context.Background(), e, []string{"completion", shell}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "--allow-remote") && !strings.Contains(out.String(), "-l allow-remote") {
			t.Errorf("%s completion lacks run's flags:\n%s", shell, out)
		}
		if path, err := exec.LookPath(shell); err == nil && shell == "zsh" {
			if b, err := exec.Command(path, "-n", "-c", out.String()).CombinedOutput(); err != nil {
				t.Errorf("zsh -n: %v\n%s", err, b)
			}
		}
	}
}

// TestSimListSettings: bench sim --list-settings prints every setting with
// the chosen preset's value and meaning (golden), after --set.
func TestSimListSettings(t *testing.T) {
	t.Parallel()
	e, out, errb := testEnv()
	if err := bench(context.Background(), e, []string{"sim", "--list-settings", "--set", "max_num_seqs=7"}); err != nil {
		t.Fatalf("%v\n%s", err, errb)
	}
	if !strings.Contains(out.String(), "max_num_seqs = 7  (integer)\n    caps the running requests.") {
		t.Errorf("max_num_seqs not listed with its --set value:\n%s", out)
	}
	golden.Check(t, filepath.Join("testdata", "sim-list-settings.golden"), out.Bytes(), *update)
	checkCLI(t, cliCase{"unknown sim setting", []string{"sim", "--set", "max_num_seq=3"}, exitUsage, "unknown setting max_num_seq (did you mean max_num_seqs?)"})
}

// TestProgramName: installed as servebench, the program names itself so
// in its usage texts, messages' examples and completion scripts; words
// containing bench (servebench, benchmark) are left alone.
func TestProgramName(t *testing.T) {
	t.Parallel()
	e, out, _ := testEnv()
	e.prog = "servebench"
	if err := bench(context.Background(), e, []string{"--help"}); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "  servebench run scenarios/quickstart.yaml") || !strings.Contains(s, "servebench — a benchmark harness") || strings.Contains(s, "  bench ") {
		t.Errorf("main usage as servebench:\n%s", s)
	}
	e, out, _ = testEnv()
	e.prog = "servebench"
	if err := bench(context.Background(), e, []string{"completion", "bash"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "complete -o filenames -F _servebench servebench") {
		t.Errorf("completion as servebench:\n%s", out)
	}
}

// TestTerminalGolden: the budget table of bench check --format text,
// stdout and stderr each against its own golden file, with the exit code
// (TestReportTextGolden pins the terminal summary).
func TestTerminalGolden(t *testing.T) {
	t.Parallel()
	const results = "../../../report/testdata/preempt.jsonl.gz"
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"check", []string{"check", results, "--budgets", "../../../scenarios/release-gate.yaml", "--format", "text"}, exitBudget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, out, errb := testEnv()
			err := bench(context.Background(), e, tc.args)
			if code := exitCode(err); code != tc.code {
				t.Fatalf("exit code %d (%v), want %d", code, err, tc.code)
			}
			golden.Check(t, filepath.Join("testdata", "terminal", tc.name+".stdout.golden"), out.Bytes(), *update)
			golden.Check(t, filepath.Join("testdata", "terminal", tc.name+".stderr.golden"), errb.Bytes(), *update)
		})
	}
}

// TestNamedKeepsVLLMsCommand: usage texts take the program's own name, but
// vLLM's "vllm bench serve" keeps its word.
func TestNamedKeepsVLLMsCommand(t *testing.T) {
	t.Parallel()
	e := env{prog: "servebench"}
	got := e.named("keys of 'vllm bench serve --save-result'; bench run x.yaml; benchmark")
	want := "keys of 'vllm bench serve --save-result'; servebench run x.yaml; benchmark"
	if got != want {
		t.Errorf("named = %q, want %q", got, want)
	}
}
