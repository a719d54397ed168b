// Package cli is servebench's command-line interface, which the servebench
// and bench commands run: it runs scenario files against OpenAI-compatible
// servers (or the built-in simulator), rebuilds reports from saved results,
// and serves the simulator. Each subcommand parses its flags, calls the
// library packages, and maps their errors to exit codes.
//
// Main is the only place that touches process state: it turns signals into
// context cancellation (the first Ctrl-C stops the run gracefully, the
// second aborts at once, after the abort hooks subcommands registered) and
// an error into an exit code.
//
// It lives under cmd/internal so that only the two commands can import
// it: the compiler keeps it the top of the layering, above run, report,
// sweep and the rest, which never import it.
package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"
)

// Main runs the command line os.Args as the program prog (the name its
// usage texts give: servebench or bench) and returns the exit code.
func Main(prog string) int {
	ctx, cancel := context.WithCancel(context.Background())
	aborts := &abortHooks{}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "\ninterrupt: stopping new requests, finishing in-flight ones (Ctrl-C again to abort)")
		cancel()
		<-sigs
		// What must not outlive the process (a sweep's servers) is ended
		// before it exits: os.Exit runs no deferred call.
		aborts.run()
		fmt.Fprintln(os.Stderr, "aborted")
		os.Exit(exitInterrupted)
	}()
	e := env{
		stdout:     os.Stdout,
		stderr:     os.Stderr,
		getenv:     os.Getenv,
		isTerminal: term.IsTerminal(int(os.Stderr.Fd())),
		aborts:     aborts,
		prog:       prog,
	}
	err := bench(ctx, e, os.Args[1:])
	printError(e, err)
	return exitCode(err)
}
