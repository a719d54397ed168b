package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// envPrefix starts the environment variables that stand in for common
// flags: SERVEBENCH_TARGET for --target, SERVEBENCH_ALLOW_REMOTE for
// --allow-remote, SERVEBENCH_QUIET for --quiet.
const envPrefix = "SERVEBENCH_"

// envFlags are the flags an environment variable may set, where a command
// has them. A flag on the command line wins over its variable, and the
// variable over the scenario file.
var envFlags = []string{"target", "allow-remote", "quiet"}

// envName is the environment variable for flag name: SERVEBENCH_ and the
// name in capitals, dashes as underscores.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// flagOutput is where a flag set writes: while parsing, into a buffer,
// which parseFlags then sends to stdout for --help (exit 0) and to stderr
// for a mistake; afterwards straight to stderr (a command printing its
// usage for a wrong argument count).
type flagOutput struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	parsing        bool
	buf            bytes.Buffer
}

func (o *flagOutput) Write(p []byte) (int, error) {
	if o.parsing {
		return o.buf.Write(p)
	}
	return o.stderr.Write(p)
}

// newFlagSet returns a flag set whose --help prints usage (the teaching
// text) followed by the flags, to stdout.
func newFlagSet(e env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(&flagOutput{stdout: e.stdout, stderr: e.stderr, getenv: e.getenv})
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), e.named(usage))
		fmt.Fprintln(fs.Output(), "\nFlags:")
		printFlags(fs.Output(), fs)
	}
	return fs
}

// printFlags lists fs's flags as they are typed, with two dashes, their
// meaning, default and, for the common ones, environment variable.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		// flag names an unnamed argument by its Go type: say what to type.
		switch name {
		case "string", "value":
			name = "VALUE"
		case "int", "uint":
			name = "N"
		case "float":
			name = "NUMBER"
		case "duration":
			name = "DURATION"
		}
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		fmt.Fprintln(w, line)
		if isZeroDefault(f) || strings.Contains(usage, "(default") {
			fmt.Fprintf(w, "      %s\n", usage)
		} else {
			fmt.Fprintf(w, "      %s (default %s)\n", usage, f.DefValue)
		}
		for _, n := range envFlags {
			if n == f.Name {
				fmt.Fprintf(w, "      environment: %s\n", envName(n))
			}
		}
	})
}

func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "[]", "0s":
		return true
	}
	return false
}

// parseFlags parses args, allowing flags after positional arguments
// ("bench run x.yaml --out d"), and maps parse errors to usage errors.
// --help prints the command's usage to stdout and ends the command with
// exit code 0. Flags not on the command line take their SERVEBENCH_*
// environment variable, if set.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	out, _ := fs.Output().(*flagOutput)
	if out != nil {
		out.parsing = true
		defer func() {
			out.parsing = false
		}()
	}
	pos, err := parseAll(fs, args)
	if out == nil {
		return pos, err
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		_, _ = out.buf.WriteTo(out.stdout)
		return nil, err
	case err != nil:
		_, _ = out.buf.WriteTo(out.stderr)
		return nil, err
	}
	if err := fromEnv(fs, out.getenv); err != nil {
		return nil, err
	}
	return pos, nil
}

func parseAll(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, reported{usageError{err}}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// fromEnv sets the flags of envFlags that fs has and the command line did
// not set from their environment variables.
func fromEnv(fs *flag.FlagSet, getenv func(string) string) error {
	if getenv == nil {
		return nil
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, name := range envFlags {
		if set[name] || fs.Lookup(name) == nil {
			continue
		}
		v := getenv(envName(name))
		if v == "" {
			continue
		}
		if err := fs.Set(name, v); err != nil {
			return usagef("%s=%q: %v", envName(name), v, err)
		}
	}
	return nil
}
