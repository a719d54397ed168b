package main

import (
	"context"
	"fmt"

	"github.com/servebench/servebench/run"
)

func versionCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "version", "Usage: bench version\n\nPrints servebench's version.\n")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "servebench %s\n", run.Version())
	return nil
}
