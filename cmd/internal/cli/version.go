package cli

import (
	"context"
	"fmt"

	"github.com/servebench/servebench/run"
)

func versionCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "version", "Usage: bench version\n\nPrints servebench's version.\n")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("version: takes no arguments, got %q", pos)
	}
	fmt.Fprintf(e.stdout, "servebench %s\n", run.Version())
	return nil
}
