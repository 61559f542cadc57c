// Package feedbacktest checks, in tests, that a message fed back to a model follows Keel's
// wording rules: it says whether anything changed, it names a next action, and it carries nothing
// technical (absolute paths, error numbers, system call names, goroutine dumps, formatting
// mistakes or chains of wrapped Go errors). Any package that writes feedback can use it.
package feedbacktest

import (
	"regexp"
	"strings"
	"testing"
)

// changeMarkers are phrases that say whether something changed.
var changeMarkers = []string{"chang", "nothing was run", "was not run", "not run"}

// actionMarkers are phrases that name a next action.
var actionMarkers = []string{
	"retry", "re-read", "read ", "list ", "use ", "send ", "fix ", "change approach", "conclude",
	"continue", "try ", "add ", "check ", "call ", "run ", "choose ", "copy ", "look ", "ask ", "wait",
}

// technical are fragments that only a program's internals produce.
var technical = []string{
	"errno", "syscall", "goroutine", "%!", "panic:", "exec:", "fork/exec", "signal: ",
	"no such file or directory", "permission denied", "file exists",
	"invalid argument", "operation not permitted", "bad file descriptor",
	"broken pipe", "text file busy", "input/output error", "read-only file system",
	"too many open files", "no space left on device", "<nil>", "0x",
}

// absPath finds an absolute path: a slash that starts a word and is followed by a name.
var absPath = regexp.MustCompile(`(^|[\s"'(=\[,])/[A-Za-z0-9._~-]`)

// Problems lists every wording rule the text breaks; none means it is fine.
func Problems(text string) []string {
	var out []string
	lower := strings.ToLower(text)
	if !containsAny(lower, changeMarkers) {
		out = append(out, "does not say whether anything changed")
	}
	if !containsAny(lower, actionMarkers) {
		out = append(out, "names no next action")
	}
	for _, t := range technical {
		if strings.Contains(lower, t) {
			out = append(out, "contains technical detail "+strconvQuote(t))
		}
	}
	if m := absPath.FindString(text); m != "" {
		out = append(out, "contains an absolute path near "+strconvQuote(strings.TrimSpace(m)))
	}
	for _, s := range sentences(text) {
		if strings.Count(s, ": ") >= 2 {
			out = append(out, "looks like a chain of wrapped errors "+strconvQuote(s))
		}
	}
	return out
}

// Check fails the test when text breaks a wording rule.
func Check(t testing.TB, text string) {
	t.Helper()
	if p := Problems(text); len(p) > 0 {
		t.Errorf("feedback %q breaks the wording rules: %s", text, strings.Join(p, "; "))
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// sentences splits text at sentence ends and line breaks.
func sentences(text string) []string {
	return regexp.MustCompile(`[.!?]\s+|\n+`).Split(text, -1)
}

func strconvQuote(s string) string { return `"` + s + `"` }
