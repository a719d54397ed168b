package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/suggest"
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
// which parseFlags then sends to stdout for --help (exit 0) and drops for
// a mistake (which gets its own short message instead); afterwards
// straight to stderr.
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
	if e.flagSets != nil {
		e.flagSets(fs)
	}
	return fs
}

// helpHint is the line that follows a command-line mistake: where to read
// the command's flags, instead of the whole usage text.
func helpHint(cmd string) string {
	return fmt.Sprintf("Run 'bench %s --help' for its flags and examples.", cmd)
}

// usageFor is a mistake in the arguments of command fs, with the pointer
// to its --help.
func usageFor(fs *flag.FlagSet, format string, args ...any) error {
	return usageError{err: fmt.Errorf(format, args...), hint: helpHint(fs.Name())}
}

// choice is a string flag that takes one of a fixed set of values; a
// mistake is answered with the values and the nearest one. Completion
// offers the values.
type choice struct {
	p       *string
	choices []string
}

// choiceVar defines a choice flag with default def ("" for none).
func choiceVar(fs *flag.FlagSet, p *string, name, def string, choices []string, usage string) {
	*p = def
	fs.Var(&choice{p: p, choices: choices}, name, usage)
}

// choiceFlag defines a choice flag and returns where its value goes.
func choiceFlag(fs *flag.FlagSet, name, def string, choices []string, usage string) *string {
	p := new(string)
	choiceVar(fs, p, name, def, choices, usage)
	return p
}

func (c *choice) String() string {
	if c == nil || c.p == nil {
		return ""
	}
	return *c.p
}

func (c *choice) Set(v string) error {
	if slices.Contains(c.choices, v) {
		*c.p = v
		return nil
	}
	msg := fmt.Sprintf("want %s, got %q", orList(c.choices), v)
	if best, ok := suggest.Closest(v, c.choices); ok {
		msg += fmt.Sprintf(" (did you mean %s?)", best)
	}
	return errors.New(msg)
}

// orList writes a, b or c.
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// printFlags lists fs's flags as they are typed, with two dashes, their
// meaning, default and, for the common ones, environment variable.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		if c, ok := f.Value.(*choice); ok && name == "value" {
			name = strings.Join(c.choices, "|")
		}
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
		out.buf.Reset() // Go's message and the whole usage: flagMistake says it shorter
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
			return nil, usageError{err: flagMistake(fs, err), hint: helpHint(fs.Name())}
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

// The messages of package flag's parse errors.
var (
	undefinedRE = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	badValueRE  = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-+(\S+): (.*)$`)
	noValueRE   = regexp.MustCompile(`^flag needs an argument: -+(\S+)$`)
)

// flagMistake rewords one of package flag's parse errors for people: two
// dashes, the nearest flag for one that is not defined, and a bad value in
// the words the scenario file's messages use.
func flagMistake(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if m := undefinedRE.FindStringSubmatch(msg); m != nil {
		var known []string
		fs.VisitAll(func(f *flag.Flag) { known = append(known, f.Name) })
		s := fmt.Sprintf("%s: unknown flag --%s", fs.Name(), m[1])
		if best, ok := suggest.Closest(m[1], known); ok {
			s += fmt.Sprintf(" (did you mean --%s?)", best)
		}
		return errors.New(s)
	}
	if m := badValueRE.FindStringSubmatch(msg); m != nil {
		f := fs.Lookup(m[2])
		if f == nil {
			return fmt.Errorf("%s: --%s: %s", fs.Name(), m[2], m[3])
		}
		if _, ok := f.Value.(*choice); ok {
			return fmt.Errorf("%s: --%s: %s", fs.Name(), f.Name, m[3])
		}
		return fmt.Errorf("%s: --%s: want %s, got %q", fs.Name(), f.Name, valueWords(f), m[1])
	}
	if m := noValueRE.FindStringSubmatch(msg); m != nil {
		if f := fs.Lookup(m[1]); f != nil {
			return fmt.Errorf("%s: --%s needs a value: %s", fs.Name(), f.Name, valueWords(f))
		}
	}
	return fmt.Errorf("%s: %s", fs.Name(), msg)
}

// valueWords says what a flag's value must be, in the words the scenario
// file's messages use for the same kind of value.
func valueWords(f *flag.Flag) string {
	if c, ok := f.Value.(*choice); ok {
		return orList(c.choices)
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return "a value"
	}
	switch g.Get().(type) {
	case time.Duration:
		return `a duration with a unit, like "30s"`
	case int, int64, uint, uint64:
		return "an integer"
	case float64:
		return "a number"
	case bool:
		return "true or false"
	}
	return "a value"
}
