package scenario

import (
	"fmt"
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
