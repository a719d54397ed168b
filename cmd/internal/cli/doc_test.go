package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/servebench/servebench/scenario"
)

// docFiles are the documents whose commands and scenarios the tests keep
// true, relative to the repository root.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CONTRIBUTING.md"}
	more, err := filepath.Glob("../../../docs/*.md")
	if err != nil || len(more) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	for _, m := range more {
		files = append(files, strings.TrimPrefix(filepath.ToSlash(m), "../../../"))
	}
	return files
}

// TestREADMEShort keeps the README what a newcomer reads in five minutes:
// at most 250 lines, the rest in docs/.
func TestREADMEShort(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > 250 {
		t.Errorf("README.md has %d lines; keep it at most 250 and move detail to docs/", n)
	}
	for _, must := range []string{"go run ./cmd/bench run scenarios/quickstart.yaml", "    go test ./...\n"} {
		if !strings.Contains(string(data), must) {
			t.Errorf("README lacks %q (.ci/run and the quick start rely on it)", must)
		}
	}
}

// TestDocs keeps README.md, CONTRIBUTING.md and docs/ honest: every yaml
// block loads as a scenario, every 'bench COMMAND' mentioned exists, and
// every relative link points at a file that exists.
func TestDocs(t *testing.T) {
	t.Parallel()
	known := map[string]bool{}
	for _, c := range commands() {
		known[c.name] = true
	}
	flags := map[string]map[string]bool{}
	for _, c := range commandFlags(context.Background()) {
		flags[c.name] = map[string]bool{"help": true}
		for _, f := range c.flags {
			flags[c.name][f.name] = true
		}
	}
	link := regexp.MustCompile(`\]\(([^)#:]*)(#[^)]*)?\)`)
	for _, name := range docFiles(t) {
		data, err := os.ReadFile("../../../" + name)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for i, b := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(text, -1) {
			if _, err := scenario.Parse(name+" yaml block", []byte(b[1])); err != nil {
				t.Errorf("%s: yaml block %d does not load: %v", name, i+1, err)
			}
		}
		for _, m := range regexp.MustCompile("`bench ([a-z]+)").FindAllStringSubmatch(text, -1) {
			if !known[m[1]] {
				t.Errorf("%s mentions 'bench %s', which is not a command", name, m[1])
			}
		}
		checkInlineFlags(t, name, text, flags)
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := filepath.Join("../../..", filepath.Dir(name), m[1])
			if m[1] == "" {
				target = filepath.Join("../../..", name)
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links to %s, which does not exist", name, m[1])
				continue
			}
			if m[2] != "" && strings.HasSuffix(target, ".md") && !hasAnchor(t, target, m[2][1:]) {
				t.Errorf("%s links to %s%s, a heading %s does not have", name, m[1], m[2], m[1])
			}
		}
	}
}

// checkInlineFlags checks the flags of every inline code span that shows
// a command ("`bench run SCENARIO --virtual`"): each must be one of the
// command's flags.
func checkInlineFlags(t *testing.T, name, text string, flags map[string]map[string]bool) {
	t.Helper()
	span := regexp.MustCompile("`(?:bench|servebench) ([a-z]+)([^`]*)`")
	flag := regexp.MustCompile(`(?:^|[\s\[|(])--([a-z][a-z0-9-]*)`)
	for _, m := range span.FindAllStringSubmatch(text, -1) {
		known, ok := flags[m[1]]
		if !ok {
			continue // TestDocs reports the command
		}
		for _, f := range flag.FindAllStringSubmatch(m[2], -1) {
			if !known[f[1]] {
				t.Errorf("%s: `bench %s%s` shows --%s, which 'bench %s' does not have", name, m[1], m[2], f[1], m[1])
			}
		}
	}
}

// hasAnchor tells whether the Markdown file has a heading whose GitHub
// anchor is anchor: lower case, punctuation dropped, spaces as dashes.
func hasAnchor(t *testing.T, file, anchor string) bool {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	drop := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	for _, l := range strings.Split(string(data), "\n") {
		if h, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " "); ok && strings.HasPrefix(l, "#") {
			if strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-") == anchor {
				return true
			}
		}
	}
	return false
}

// docCommand is one command line shown in a code block of a document.
type docCommand struct {
	file string
	line int
	args []string // after the program name
}

// docCommands finds the command lines of bench and servebench (or go run
// ./cmd/bench) in the fenced and indented code blocks of text, joining
// lines continued with a backslash and dropping comments.
func docCommands(file, text string) []docCommand {
	var out []docCommand
	lines := strings.Split(text, "\n")
	fenced := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced && !strings.HasPrefix(l, "    ") {
			continue
		}
		cmd, start := strings.TrimSpace(l), i+1
		for strings.HasSuffix(cmd, `\`) && i+1 < len(lines) {
			i++
			cmd = strings.TrimSuffix(cmd, `\`) + " " + strings.TrimSpace(lines[i])
		}
		cmd = strings.TrimPrefix(cmd, "$ ")
		words := shellWords(cmd)
		switch {
		case len(words) > 2 && words[0] == "go" && words[1] == "run" && (words[2] == "./cmd/bench" || words[2] == "./cmd/servebench"):
			words = words[3:]
		case len(words) > 0 && (words[0] == "bench" || words[0] == "servebench"):
			words = words[1:]
		default:
			continue
		}
		if len(words) > 0 && commandWord.MatchString(words[0]) {
			out = append(out, docCommand{file, start, words})
		}
	}
	return out
}

// commandWord is what a command line's first argument looks like; output
// that starts with the program's name ("servebench · scenario …") does not.
var commandWord = regexp.MustCompile(`^-{0,2}[a-z]+$`)

// shellWords splits a command line as a POSIX shell would for the lines
// the documents show: words, single and double quotes, and a comment from
// an unquoted '#' that starts a word.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case (r == '#' || r == '>' || r == '|') && !inWord:
			return words // a comment, a redirection or a pipe: the command ended
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// TestDocCommands runs every command line the README and docs show: with
// --dry-run where the command has it and its files are here (a run sends
// nothing, a sweep launches nothing), else with --help, which still parses
// every flag and value before it. A misspelled flag or a value the command
// refuses fails the test, with the document's file and line.
func TestDocCommands(t *testing.T) {
	t.Chdir("../../..")
	var all []docCommand
	for _, name := range []string{"README.md", "CONTRIBUTING.md"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, docCommands(name, string(data))...)
	}
	more, _ := filepath.Glob("docs/*.md")
	for _, name := range more {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, docCommands(name, string(data))...)
	}
	if len(all) < 20 {
		t.Fatalf("found %d command lines in the documents; the parser is broken", len(all))
	}
	t.Logf("%d command lines", len(all))
	for _, c := range all {
		args, mode := docArgs(c.args)
		var stdout, stderr bytes.Buffer
		e := env{stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
		err := bench(context.Background(), e, args)
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%s:%d: bench %s (%s): %v\n%s", c.file, c.line, strings.Join(c.args, " "), mode, err, lastLines(stderr.String(), 5))
		}
	}
}

// docArgs decides how a documented command is checked without sending
// load: a run or sweep whose files exist gets --dry-run, anything else
// --help (after its own flags, so they are parsed first).
func docArgs(args []string) ([]string, string) {
	if args[0] == "run" || args[0] == "sweep" {
		dry := true
		for _, a := range args[1:] {
			if !strings.HasPrefix(a, "-") && strings.HasSuffix(a, ".yaml") {
				if _, err := os.Stat(a); err != nil {
					dry = false
				}
			}
			if a == "--resume" {
				dry = false
			}
		}
		if dry {
			return append(append([]string{}, args...), "--dry-run"), "--dry-run"
		}
	}
	switch args[0] {
	case "help", "version", "--version", "-v", "--help":
		return args, "as shown"
	case "completion":
		if len(args) > 1 {
			return args, "as shown"
		}
	}
	return append(append([]string{}, args...), "--help"), "--help"
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
