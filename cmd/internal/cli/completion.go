package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/sim"
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
		return usageFor(fs, "completion: want one shell (bash, zsh or fish), got %d arguments", len(pos))
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

// cmdFlags is one command and its flags.
type cmdFlags struct {
	name, summary string
	flags         []flagInfo
}

// flagInfo is one flag as completion sees it: its name (without dashes),
// whether it takes a value, the values it takes when they are known, and
// whether a value is completed without a space after it ("path=").
type flagInfo struct {
	name    string
	valued  bool
	values  []string
	nospace bool
}

// commandFlags asks every command for its --help and collects the flag
// sets it makes, so the completions cannot drift from the commands.
func commandFlags(ctx context.Context) []cmdFlags {
	var out []cmdFlags
	for _, c := range commands() {
		cf := cmdFlags{name: c.name, summary: c.summary}
		if c.run != nil {
			var sets []*flag.FlagSet
			e := env{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" },
				flagSets: func(fs *flag.FlagSet) { sets = append(sets, fs) }}
			_ = c.run(ctx, e, []string{"--help"})
			seen := map[string]bool{}
			for _, fs := range sets {
				fs.VisitAll(func(f *flag.Flag) {
					if !seen[f.Name] {
						seen[f.Name] = true
						cf.flags = append(cf.flags, describeFlag(c.name, f))
					}
				})
			}
		}
		out = append(out, cf)
	}
	return out
}

// describeFlag finds what a flag of command cmd takes: a choice flag's
// values, the field paths of --set (a scenario's, or the simulator's
// settings for bench sim), the simulator's presets as targets, the
// tokenizers by name; file names otherwise.
func describeFlag(cmd string, f *flag.Flag) flagInfo {
	fi := flagInfo{name: f.Name, valued: true}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		fi.valued = false
		return fi
	}
	if c, ok := f.Value.(*choice); ok {
		fi.values = slices.Clone(c.choices)
		return fi
	}
	switch f.Name {
	case "set":
		fi.nospace = true
		if cmd == "sim" {
			settings, _ := sim.Settings()
			for _, s := range settings {
				fi.values = append(fi.values, s.Name+"=")
			}
			return fi
		}
		for _, p := range scenario.Paths() {
			fi.values = append(fi.values, p+"=")
		}
	case "target":
		for _, p := range sim.PresetNames() {
			fi.values = append(fi.values, "sim://"+p)
		}
		fi.values = append(fi.values, "http://127.0.0.1:8000")
	case "tokenizer":
		fi.values = []string{"o200k_base", "cl100k_base", "server"}
	case "search":
		fi.values = []string{"load.stages[0].rate", "load.stages[0].concurrency"}
	}
	return fi
}

func names(cmds []cmdFlags) string {
	var n []string
	for _, c := range cmds {
		n = append(n, c.name)
	}
	return strings.Join(n, " ")
}

func dashed(flags []flagInfo) string {
	var d []string
	for _, f := range flags {
		d = append(d, "--"+f.name)
	}
	return strings.Join(d, " ")
}

// bashValues writes the case arms that complete the values of c's flags
// after the flag ("--arrival p" → poisson); a flag whose values are not
// known completes file names.
func bashValues(b *strings.Builder, c cmdFlags) {
	var arms []string
	for _, f := range c.flags {
		if len(f.values) == 0 {
			continue
		}
		nospace := ""
		if f.nospace {
			nospace = "compopt -o nospace 2>/dev/null; "
		}
		arms = append(arms, fmt.Sprintf("        --%s) %s_values %q; return ;;\n", f.name, nospace, strings.Join(f.values, " ")))
	}
	if len(arms) == 0 {
		return
	}
	b.WriteString("      case \"$prev\" in\n")
	for _, a := range arms {
		b.WriteString(a)
	}
	b.WriteString("      esac\n")
}

// fn is prog as part of a shell function name.
func fn(prog string) string { return strings.NewReplacer("-", "_", ".", "_").Replace(prog) }

func writeBash(w io.Writer, prog string, cmds []cmdFlags) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# bash completion for %s (bench completion bash)\n_%s() {\n", prog, fn(prog))
	// The words up to the cursor from COMP_LINE, not COMP_WORDS: bash
	// splits words at ':' and '=', which sim://tiny and --set a.b=c hold.
	b.WriteString("  local line=\"${COMP_LINE:0:$COMP_POINT}\"\n")
	b.WriteString("  local cur=\"${line##*[[:space:]]}\" prev=\"\"\n")
	b.WriteString("  local -a words; read -ra words <<<\"${line%\"$cur\"}\"\n")
	b.WriteString("  [ ${#words[@]} -gt 0 ] && prev=\"${words[${#words[@]}-1]}\"\n")
	b.WriteString("  _values() {\n    COMPREPLY=($(compgen -W \"$1\" -- \"$cur\"))\n")
	b.WriteString("    # bash replaces the part after its last ':' or '=': drop what comes before.\n")
	b.WriteString("    local pre=\"${cur%\"${cur##*[:=]}\"}\" i\n")
	b.WriteString("    [ -n \"$pre\" ] && for i in \"${!COMPREPLY[@]}\"; do COMPREPLY[$i]=\"${COMPREPLY[$i]#\"$pre\"}\"; done\n  }\n")
	b.WriteString("  if [ ${#words[@]} -le 1 ]; then\n")
	fmt.Fprintf(&b, "    COMPREPLY=($(compgen -W %q -- \"$cur\")); return\n  fi\n", names(cmds)+" --help --version")
	b.WriteString("  local flags=\"\"\n  case \"${words[1]}\" in\n")
	for _, c := range cmds {
		switch {
		case c.name == "completion":
			fmt.Fprintf(&b, "    completion) [[ \"$cur\" == -* ]] || { COMPREPLY=($(compgen -W \"bash zsh fish\" -- \"$cur\")); return; }; flags=%q ;;\n", dashed(c.flags)+" --help")
		case len(c.flags) > 0:
			fmt.Fprintf(&b, "    %s)\n", c.name)
			bashValues(&b, c)
			fmt.Fprintf(&b, "      flags=%q ;;\n", dashed(c.flags)+" --help")
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
			fmt.Fprintf(&b, "    %s)\n", c.name)
			zshValues(&b, c)
			fmt.Fprintf(&b, "      flags=(%s --help) ;;\n", dashed(c.flags))
		}
	}
	b.WriteString("    help) _describe 'command' cmds; return ;;\n")
	b.WriteString("  esac\n  if [[ $PREFIX == -* ]]; then\n    compadd -- $flags\n  else\n    _files\n  fi\n}\n")
	fmt.Fprintf(&b, "compdef _%s %s\n", fn(prog), prog)
	_, err := io.WriteString(w, b.String())
	return err
}

// zshValues writes the case arms that complete the values of c's flags
// after the flag.
func zshValues(b *strings.Builder, c cmdFlags) {
	var arms []string
	for _, f := range c.flags {
		if len(f.values) == 0 {
			continue
		}
		var q []string
		for _, v := range f.values {
			q = append(q, zshQuote(v))
		}
		suffix := ""
		if f.nospace {
			suffix = "-S '' "
		}
		arms = append(arms, fmt.Sprintf("        --%s) compadd %s-- %s; return ;;\n", f.name, suffix, strings.Join(q, " ")))
	}
	if len(arms) == 0 {
		return
	}
	b.WriteString("      case ${words[CURRENT-1]} in\n")
	for _, a := range arms {
		b.WriteString(a)
	}
	b.WriteString("      esac\n")
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
		for _, f := range append(slices.Clone(c.flags), flagInfo{name: "help"}) {
			line := fmt.Sprintf("complete -c %s -n '__fish_seen_subcommand_from %s' -l %s", prog, c.name, f.name)
			switch {
			case len(f.values) > 0:
				line += " -x -a " + zshQuote(strings.Join(f.values, " "))
			case f.valued:
				line += " -r"
			}
			b.WriteString(line + "\n")
		}
	}
	fmt.Fprintf(&b, "complete -c %s -f -n '__fish_seen_subcommand_from help' -a %q\n", prog, names(cmds))
	fmt.Fprintf(&b, "complete -c %s -f -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'\n", prog)
	_, err := io.WriteString(w, b.String())
	return err
}
