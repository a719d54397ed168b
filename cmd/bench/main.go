// Command bench is servebench's command-line interface, under its short
// name (the same program as cmd/servebench). 'go install
// github.com/servebench/servebench/cmd/bench@latest' installs it; 'bench
// help' lists its commands (see package cmd/internal/cli).
package main

import (
	"os"

	"github.com/servebench/servebench/cmd/internal/cli"
)

func main() { os.Exit(cli.Main("bench")) }
