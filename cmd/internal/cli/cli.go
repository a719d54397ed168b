package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/servebench/servebench/internal/suggest"
)

// Exit codes. They are part of servebench's contract with CI systems.
const (
	exitOK           = 0   // the run completed (and every budget, if any, was met)
	exitFailed       = 1   // the run could not be carried out (target unreachable, I/O error, …)
	exitUsage        = 2   // bad command line or invalid scenario file
	exitBudget       = 3   // the run completed but a latency budget was missed
	exitInconclusive = 4   // the run completed, no budget was missed, but some could not be told met (their intervals straddle the limits)
	exitInterrupted  = 130 // stopped by Ctrl-C or SIGTERM (results and summary are still written)
)

// env is the process environment a subcommand may use; tests pass buffers.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	isTerminal     bool                // stderr is a terminal: draw a live status line
	aborts         *abortHooks         // run on an abort (a second Ctrl-C) before exiting; nil: none
	prog           string              // the program's name in usage texts; "" is bench
	flagSets       func(*flag.FlagSet) // told of each flag set a command makes (completion reads them); nil: none
	noPlots        bool                // runs draw no plots and no report.html (the tests under the race detector)
}

// benchWord is the program's name as the usage texts write it.
var benchWord = regexp.MustCompile(`\bbench\b`)

// named rewrites a usage text for the program's own name (servebench
// installs as servebench; the texts say bench). vLLM's own command, "vllm
// bench serve", keeps its word.
func (e env) named(text string) string {
	if e.prog == "" || e.prog == "bench" {
		return text
	}
	var b strings.Builder
	last := 0
	for _, m := range benchWord.FindAllStringIndex(text, -1) {
		b.WriteString(text[last:m[0]])
		if strings.HasSuffix(text[:m[0]], "vllm ") {
			b.WriteString("bench")
		} else {
			b.WriteString(e.prog)
		}
		last = m[1]
	}
	b.WriteString(text[last:])
	return b.String()
}

// abortHooks are what an abort runs before the process exits at once (a
// second Ctrl-C or SIGTERM): a subcommand registers what must not outlive
// it, such as a sweep's servers. A nil *abortHooks registers nothing. It is
// safe for concurrent use: main runs the hooks from its signal goroutine.
type abortHooks struct {
	mu    sync.Mutex
	hooks map[int]func()
	next  int
}

// add registers fn and returns the function that removes it.
func (h *abortHooks) add(fn func()) (remove func()) {
	if h == nil {
		return func() {}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hooks == nil {
		h.hooks = map[int]func(){}
	}
	id := h.next
	h.next++
	h.hooks[id] = fn
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.hooks, id)
	}
}

// run calls every registered hook.
func (h *abortHooks) run() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, fn := range h.hooks {
		fn()
	}
}

// usageError is a command-line or scenario problem (exit code 2). hint,
// when set, is a line printed after the message: where to read the usage.
type usageError struct {
	err  error
	hint string
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{err: fmt.Errorf(format, args...)} }

// printError writes err as the program reports it on stderr: one line
// "prog: message" (unless the command printed it already) and, for a
// command-line mistake, the line that says where the usage is.
func printError(e env, err error) {
	if err == nil || isReported(err) {
		return
	}
	prog := e.prog
	if prog == "" {
		prog = "bench"
	}
	fmt.Fprintf(e.stderr, "%s: %v\n", prog, err)
	var u usageError
	if errors.As(err, &u) && u.hint != "" {
		fmt.Fprintln(e.stderr, e.named(u.hint))
	}
}

// errInterrupted marks a run stopped by a signal.
var errInterrupted = errors.New("interrupted")

// reported wraps an error whose message the subcommand already printed.
type reported struct{ err error }

func (e reported) Error() string { return e.err.Error() }
func (e reported) Unwrap() error { return e.err }

func isReported(err error) bool {
	var r reported
	return errors.As(err, &r) || errors.Is(err, flag.ErrHelp)
}

func exitCode(err error) int {
	var u usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	case errors.As(err, &u):
		return exitUsage
	case errors.Is(err, errBudget):
		return exitBudget
	case errors.Is(err, errInconclusive):
		return exitInconclusive
	default:
		return exitFailed
	}
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e env, args []string) error
}

func commands() []command {
	return []command{
		{"run", "run a scenario file and write results, summary and report", runCmd},
		{"sweep", "run a scenario once per server-setting value; recommend one", sweepCmd},
		{"report", "rebuild the summary from one or more results files", reportCmd},
		{"merge", "merge a sharded run's results into one summary, plots and report", mergeCmd},
		{"plot", "draw the plots and report.html from one or more results files", plotCmd},
		{"check", "judge saved results against a scenario's budgets", checkCmd},
		{"compare", "compare two runs, benchstat-style; gate on regressions", compareCmd},
		{"logs", "explain vLLM server logs: settings, start-up, KV cache, decay", logsCmd},
		{"calibrate", "fit the simulator to saved runs: a twin of the server", calibrateCmd},
		{"predict", "run a scenario's sweep or search on a twin, with bands", predictCmd},
		{"sim", "serve the built-in vLLM-like simulator", simCmd},
		{"selftest", "measure this machine's ingest ceiling: servebench against a raw reader", selftestCmd},
		{"completion", "print a shell completion script (bash, zsh, fish)", completionCmd},
		{"version", "print the version (also --version, -v)", versionCmd},
		{"help", "explain a command", nil},
	}
}

const mainUsage = `servebench — a benchmark harness for OpenAI-compatible LLM servers

Usage:
  bench <command> [arguments]

Commands:
%s
Examples:
  bench run scenarios/quickstart.yaml             # against the built-in simulator, no server needed
  bench run my.yaml --target http://127.0.0.1:8000 --set load.stages[0].concurrency=32
  bench report runs/quickstart-*/results.jsonl --format json
  bench merge runs/big/shard-0 runs/big/shard-1 --out runs/big/merged   # shards of one run
  bench sim --preset gpt-oss-120b-h100        # serve the simulator for another client

Environment: SERVEBENCH_TARGET, SERVEBENCH_ALLOW_REMOTE and SERVEBENCH_QUIET stand
in for --target, --allow-remote and --quiet where a command has them. Precedence:
the scenario file < the environment < flags < --set.

Exit codes: 0 ok, 1 run failed, 2 usage or scenario error, 3 budget missed, 130 interrupted.
Run 'bench help <command>' (or 'bench <command> --help') for its flags and examples.
`

func printMainUsage(e env, w io.Writer) {
	var b strings.Builder
	width := 0
	for _, c := range commands() {
		width = max(width, len(c.name))
	}
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprint(w, e.named(fmt.Sprintf(mainUsage, b.String())))
}

// bench dispatches to a subcommand: the whole command line, minus the
// program name, as main hands it over.
func bench(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		printMainUsage(e, e.stderr)
		return usagef("no command given")
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help":
		printMainUsage(e, e.stdout)
		return nil
	case "-v", "-version", "--version":
		name = "version"
	case "help":
		if len(rest) == 0 || rest[0] == "-h" || rest[0] == "-help" || rest[0] == "--help" || rest[0] == "help" {
			printMainUsage(e, e.stdout)
			return nil
		}
		name, rest = rest[0], []string{"--help"}
		e.stderr = e.stdout
	}
	for _, c := range commands() {
		if c.name == name && c.run != nil {
			return c.run(ctx, e, rest)
		}
	}
	return unknownCommand(name)
}

// unknownCommand answers a command name that is not one, with the nearest
// command and where the list is.
func unknownCommand(name string) error {
	var known []string
	for _, c := range commands() {
		known = append(known, c.name)
	}
	msg := fmt.Sprintf("unknown command %q", name)
	if strings.HasPrefix(name, "-") {
		msg += " (flags come after the command: bench run --target URL …)"
	} else if best, ok := suggest.Closest(name, known); ok {
		msg += fmt.Sprintf(" (did you mean %s?)", best)
	}
	return usageError{err: errors.New(msg), hint: "Run 'bench help' for the commands."}
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
