package main

import (
	"context"
	"fmt"
	"runtime/debug"
)

// version is the tool version written into results headers.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	switch {
	case rev == "":
		return "devel"
	case dirty:
		return "devel+" + rev + "-dirty"
	default:
		return "devel+" + rev
	}
}

func versionCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "version", "Usage: bench version\n\nPrints servebench's version.\n")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "servebench %s\n", version())
	return nil
}
