package scenario

import (
	"fmt"
	"regexp"
	"strings"
)

// A sweep's server command given as one string runs under /bin/sh -c. The
// parameter values substituted into it are data, never shell syntax: each
// is single-quoted (a ' inside becomes '\''), so "6ms $(touch pwned)"
// reaches the server as that one argument and nothing runs. Quoting was
// chosen over refusing values with shell metacharacters: any value can be
// swept (a JSON snippet, a path with a space), and there is no list of
// characters to get wrong. The cost is that a template action must be
// written bare ({{.x}}, not '{{.x}}' or "{{.x}}", which would pass the
// quotes along): Validate refuses an action inside quotes.

// shellQuote returns s single-quoted for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellQuoted returns vars with every value single-quoted for the shell.
func shellQuoted(vars map[string]string) map[string]string {
	q := make(map[string]string, len(vars))
	for k, v := range vars {
		q[k] = shellQuote(v)
	}
	return q
}

// quotedAction returns the first template action ({{...}}) of a shell
// command template that sits inside single or double quotes, or "".
func quotedAction(tmpl string) string {
	var quote byte // ' or " while inside quotes
	for i := 0; i < len(tmpl); i++ {
		c := tmpl[i]
		if strings.HasPrefix(tmpl[i:], "{{") {
			end := strings.Index(tmpl[i:], "}}")
			if end < 0 {
				return "" // a template syntax error, reported as such
			}
			if quote != 0 {
				return tmpl[i : i+end+2]
			}
			i += end + 1
			continue
		}
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
		case c == '\\':
			i++ // the next byte is escaped (inside double quotes too)
		case quote == '"':
			if c == '"' {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		}
	}
	return ""
}

// checkShellTemplate reports a template action inside quotes in a shell
// command.
func checkShellTemplate(tmpl string) error {
	if a := quotedAction(tmpl); a != "" {
		return fmt.Errorf("%s is inside quotes: write it bare, since values are substituted single-quoted for the shell", a)
	}
	return nil
}

// notExecutable are first words after which "exec" would be wrong: shell
// syntax and builtins that are not programs.
var notExecutable = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "do": true, "done": true,
	"case": true, "esac": true, "while": true, "until": true, "for": true, "in": true, "{": true,
	"}": true, "!": true, "[[": true, "function": true, "select": true, "time": true, "exec": true,
	":": true, ".": true, "break": true, "continue": true, "eval": true, "exit": true, "export": true,
	"readonly": true, "return": true, "set": true, "shift": true, "times": true, "trap": true,
	"unset": true, "cd": true, "source": true, "wait": true, "command": true, "builtin": true,
}

// execShell returns a shell command with "exec" before its command word
// when it is one simple command: words, leading NAME=value assignments and
// redirections, with no ; & | ( ) or newline outside quotes. The shell then
// becomes the server: the process launched, which the harness signals and
// which the kernel signals if the harness dies (Linux's parent-death
// signal, kept across exec), is the server itself, not a shell that would
// die and leave it running. Any other command is returned as it is: a
// list or pipeline should exec its server itself ("cd /m && exec vllm
// serve …").
func execShell(cmd string) string {
	var words []int // byte offsets where top-level words start
	var quote byte
	inWord := false
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
			continue
		case quote == '"':
			if c == '\\' {
				i++
			} else if c == '"' {
				quote = 0
			}
			continue
		}
		switch c {
		case ' ', '\t':
			inWord = false
			continue
		case ';', '|', '(', ')', '\n', '\r':
			if c == '|' && i > 0 && cmd[i-1] == '>' {
				break // >| is a redirection
			}
			return cmd
		case '&':
			if i > 0 && (cmd[i-1] == '>' || cmd[i-1] == '<') {
				break // >& and <& are redirections
			}
			return cmd
		}
		if !inWord {
			words = append(words, i)
			inWord = true
		}
		switch c {
		case '\\':
			i++
		case '\'', '"':
			quote = c
		}
	}
	for _, start := range words {
		end := start
		for end < len(cmd) && cmd[end] != ' ' && cmd[end] != '\t' {
			end++
		}
		word := cmd[start:end]
		if assignmentRE.MatchString(word) {
			continue
		}
		if notExecutable[word] {
			return cmd
		}
		return cmd[:start] + "exec " + cmd[start:]
	}
	return cmd // assignments only, or nothing
}

// assignmentRE matches a word that assigns a shell variable (NAME=…).
var assignmentRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
