package tools

import (
	"fmt"
	"strings"

	"github.com/mattn/go-shellwords"
)

// splitWords splits a command line into words the way a shell would, without running one, using
// go-shellwords: spaces separate words, single quotes keep text literally, double quotes allow
// backslash escapes, and $VAR and `cmd` stay literal text. Commands run without a shell, so a
// line that uses a shell operator (|, &&, ;, >, ...) would not do what the model expects and is
// refused, as are an unclosed quote and an empty line. The second result is that refusal for the
// model, empty when the line is fine.
func splitWords(line string) ([]string, string) {
	p := shellwords.NewParser()
	words, err := p.Parse(line)
	if err != nil {
		return nil, fmt.Sprintf("The command has an opening quote (%s) without a closing one; nothing was run and nothing changed. "+
			"Close the quote and send the command again.", unclosedQuote(line))
	}
	if p.Position >= 0 {
		op := strings.TrimSpace(line[p.Position:])
		op = op[:len(op)-len(strings.TrimLeft(op, "0123456789|&;<>"))]
		return nil, fmt.Sprintf("The command uses the shell operator %q, but commands run without a shell, so nothing was run and nothing changed. "+
			"Run one program at a time, or pass the whole line to sh -c if sh is allowed.", op)
	}
	if len(words) == 0 {
		return nil, "The command is empty; nothing was run and nothing changed. Send a program and its arguments, such as \"go test ./...\"."
	}
	return words, ""
}

// unclosedQuote names the quote a line leaves open: the one whose closing makes it parse.
func unclosedQuote(line string) string {
	for _, q := range []string{"'", `"`} {
		if _, err := shellwords.Parse(line + q); err == nil {
			return q
		}
	}
	return `' or "`
}
