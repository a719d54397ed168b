// Command servebench is servebench's command-line interface: a benchmark harness for
// OpenAI-compatible LLM servers. 'go install
// github.com/servebench/servebench/cmd/servebench@latest' installs it; 'servebench
// help' lists its commands (see package cmd/internal/cli).
package main

import (
	"os"

	"github.com/servebench/servebench/cmd/internal/cli"
)

func main() { os.Exit(cli.Main("servebench")) }
