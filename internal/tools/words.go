package tools

import (
	"fmt"
	"strings"
)

// shellOperators are words a shell would interpret. Commands run without a shell, so a command
// that uses them would not do what the model expects and is refused before it runs.
var shellOperators = map[string]bool{
	"|": true, "||": true, "&&": true, ";": true, "&": true,
	">": true, ">>": true, "<": true, "2>": true, "2>&1": true, "&>": true,
}

// splitWords splits a command line into words the way a simple shell would, without running
// one: words are separated by spaces, single quotes keep text literally, double quotes allow
// backslash escapes, and a backslash outside quotes escapes the next character. The second result
// is a refusal for the model, empty when the line is fine.
func splitWords(line string) ([]string, string) {
	var (
		words   []string
		cur     strings.Builder
		inWord  bool
		quoted  bool
		quote   rune
		escaped bool
	)
	flush := func() {
		if inWord {
			w := cur.String()
			if !quoted && shellOperators[w] {
				words = append(words, "\x00"+w) // marked so the caller can name it
			} else {
				words = append(words, w)
			}
		}
		cur.Reset()
		inWord, quoted = false, false
	}
	for _, r := range line {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				cur.WriteRune(r)
			}
		case r == '\\':
			inWord, escaped = true, true
		case r == '\'' || r == '"':
			inWord, quoted, quote = true, true, r
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			flush()
		default:
			inWord = true
			cur.WriteRune(r)
		}
	}
	if quote != 0 {
		return nil, fmt.Sprintf("The command has an opening quote (%c) without a closing one; nothing was run and nothing changed. "+
			"Close the quote and send the command again.", quote)
	}
	if escaped {
		cur.WriteRune('\\')
	}
	flush()
	if len(words) == 0 {
		return nil, "The command is empty; nothing was run and nothing changed. Send a program and its arguments, such as \"go test ./...\"."
	}
	for _, w := range words {
		if strings.HasPrefix(w, "\x00") {
			return nil, fmt.Sprintf("The command uses the shell operator %q, but commands run without a shell, so nothing was run and nothing changed. "+
				"Run one program at a time, or pass the whole line to sh -c if sh is allowed.", w[1:])
		}
	}
	return words, ""
}
