package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

const completionUsage = `Usage: bench completion bash|zsh|fish

Prints a completion script for the shell: commands, then each command's
flags, and file names where a file is expected. Load it with

  bash:  source <(bench completion bash)         (or save it under /etc/bash_completion.d/)
  zsh:   source <(bench completion zsh)          (after compinit)
  fish:  bench completion fish > ~/.config/fish/completions/bench.fish

The script completes the program by the name it was run as; for another
name (bench and servebench are the same program), pass --name.
`

func completionCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "completion", completionUsage)
	name := e.prog
	if name == "" {
		name = "bench"
	}
	prog := fs.String("name", name, "the program `NAME` to complete")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return usagef("completion: want one shell (bash, zsh or fish), got %d arguments", len(pos))
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_.-]+$`).MatchString(*prog) {
		return usagef("completion: --name %q: want a program name (letters, digits, _ . -)", *prog)
	}
	cmds := commandFlags(ctx)
	switch pos[0] {
	case "bash":
		return writeBash(e.stdout, *prog, cmds)
	case "zsh":
		return writeZsh(e.stdout, *prog, cmds)
	case "fish":
		return writeFish(e.stdout, *prog, cmds)
	}
	return usagef("completion: unknown shell %q: want bash, zsh or fish", pos[0])
}

// cmdFlags is one command and the flags its --help lists.
type cmdFlags struct {
	name, summary string
	flags         []string // without dashes
}

var helpFlag = regexp.MustCompile(`(?m)^  --([a-z0-9-]+)`)

// commandFlags asks every command for its --help and collects the flags
// it lists, so the completions cannot drift from the commands.
func commandFlags(ctx context.Context) []cmdFlags {
	var out []cmdFlags
	for _, c := range commands() {
		cf := cmdFlags{name: c.name, summary: c.summary}
		if c.run != nil {
			var b bytes.Buffer
			_ = c.run(ctx, env{stdout: &b, stderr: io.Discard, getenv: func(string) string { return "" }}, []string{"--help"})
			for _, m := range helpFlag.FindAllStringSubmatch(b.String(), -1) {
				cf.flags = append(cf.flags, m[1])
			}
		}
		out = append(out, cf)
	}
	return out
}

func names(cmds []cmdFlags) string {
	var n []string
	for _, c := range cmds {
		n = append(n, c.name)
	}
	return strings.Join(n, " ")
}

func dashed(flags []string) string {
	var d []string
	for _, f := range flags {
		d = append(d, "--"+f)
	}
	return strings.Join(d, " ")
}

// fn is prog as part of a shell function name.
func fn(prog string) string { return strings.NewReplacer("-", "_", ".", "_").Replace(prog) }

func writeBash(w io.Writer, prog string, cmds []cmdFlags) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# bash completion for %s (bench completion bash)\n_%s() {\n", prog, fn(prog))
	b.WriteString("  local cur=\"${COMP_WORDS[COMP_CWORD]}\"\n")
	b.WriteString("  if [ \"$COMP_CWORD\" -eq 1 ]; then\n")
	fmt.Fprintf(&b, "    COMPREPLY=($(compgen -W %q -- \"$cur\")); return\n  fi\n", names(cmds)+" --help --version")
	b.WriteString("  local flags=\"\"\n  case \"${COMP_WORDS[1]}\" in\n")
	for _, c := range cmds {
		switch {
		case c.name == "completion":
			fmt.Fprintf(&b, "    completion) [[ \"$cur\" == -* ]] || { COMPREPLY=($(compgen -W \"bash zsh fish\" -- \"$cur\")); return; }; flags=%q ;;\n", dashed(c.flags)+" --help")
		case len(c.flags) > 0:
			fmt.Fprintf(&b, "    %s) flags=%q ;;\n", c.name, dashed(c.flags)+" --help")
		}
	}
	b.WriteString("    help) COMPREPLY=($(compgen -W \"" + names(cmds) + "\" -- \"$cur\")); return ;;\n")
	b.WriteString("  esac\n")
	b.WriteString("  if [[ \"$cur\" == -* ]]; then\n    COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n  else\n    COMPREPLY=($(compgen -f -- \"$cur\"))\n  fi\n}\n")
	fmt.Fprintf(&b, "complete -o filenames -F _%s %s\n", fn(prog), prog)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeZsh(w io.Writer, prog string, cmds []cmdFlags) error {
	var b strings.Builder
	fmt.Fprintf(&b, "#compdef %s\n# zsh completion for %s (bench completion zsh)\n_%s() {\n", prog, prog, fn(prog))
	b.WriteString("  local -a cmds\n  cmds=(\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "    %s\n", zshQuote(c.name+":"+c.summary))
	}
	b.WriteString("  )\n  if (( CURRENT == 2 )); then\n    _describe 'command' cmds; return\n  fi\n")
	b.WriteString("  local -a flags\n  case ${words[2]} in\n")
	for _, c := range cmds {
		switch {
		case c.name == "completion":
			fmt.Fprintf(&b, "    completion) [[ $PREFIX == -* ]] || { compadd bash zsh fish; return; }; flags=(%s --help) ;;\n", dashed(c.flags))
		case len(c.flags) > 0:
			fmt.Fprintf(&b, "    %s) flags=(%s --help) ;;\n", c.name, dashed(c.flags))
		}
	}
	b.WriteString("    help) _describe 'command' cmds; return ;;\n")
	b.WriteString("  esac\n  if [[ $PREFIX == -* ]]; then\n    compadd -- $flags\n  else\n    _files\n  fi\n}\n")
	fmt.Fprintf(&b, "compdef _%s %s\n", fn(prog), prog)
	_, err := io.WriteString(w, b.String())
	return err
}

func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func writeFish(w io.Writer, prog string, cmds []cmdFlags) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# fish completion for %s (bench completion fish)\n", prog)
	fmt.Fprintf(&b, "complete -c %s -f -n '__fish_use_subcommand' -l help -d 'print the usage'\n", prog)
	fmt.Fprintf(&b, "complete -c %s -f -n '__fish_use_subcommand' -l version -d 'print the version'\n", prog)
	for _, c := range cmds {
		fmt.Fprintf(&b, "complete -c %s -f -n '__fish_use_subcommand' -a %s -d %s\n", prog, c.name, zshQuote(c.summary))
	}
	for _, c := range cmds {
		flags := slices.Clone(c.flags)
		for _, f := range append(flags, "help") {
			fmt.Fprintf(&b, "complete -c %s -n '__fish_seen_subcommand_from %s' -l %s\n", prog, c.name, f)
		}
	}
	fmt.Fprintf(&b, "complete -c %s -f -n '__fish_seen_subcommand_from help' -a %q\n", prog, names(cmds))
	fmt.Fprintf(&b, "complete -c %s -f -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'\n", prog)
	_, err := io.WriteString(w, b.String())
	return err
}
