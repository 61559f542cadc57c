package toolspec

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
)

// policyOpening starts every policy refusal, so that IsPolicyViolation can recognise one after it
// has travelled through an activity result.
const policyOpening = "The tool policy does not allow this call to "

// Feedback turns a Problem into the message fed back to the model. repairsLeft is how many more
// invalid calls to this tool the session accepts before it asks a person; a negative value means
// the count is not known (the check ran outside the workflow) and is left out.
func (p *Problem) Feedback(tool string, repairsLeft int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The call to %s was not run and nothing changed, because its arguments need this fix — %s. ", tool, sentence(p.Fix))
	b.WriteString("Send the call again with corrected arguments")
	switch {
	case repairsLeft < 0:
		b.WriteString(".")
	case repairsLeft == 0:
		b.WriteString("; this is the last repair, and the next invalid call is handed to a person.")
	case repairsLeft == 1:
		b.WriteString(" (1 more invalid call is allowed before a person is asked).")
	default:
		fmt.Fprintf(&b, " (%d more invalid calls are allowed before a person is asked).", repairsLeft)
	}
	return b.String()
}

// RepeatKey is the key of repeat detection: the tool name and the argument text exactly as sent.
// Text, not meaning, is compared on purpose: a call that differs by one space is at least trying
// something new, while spinning repeats itself character for character.
func RepeatKey(call contract.ToolCall) string {
	return call.Name + "\x00" + call.Arguments
}

// RepeatFeedback answers the identical call that was not run because it was made times times in a
// row. It points back at the earlier results instead of producing them again.
func RepeatFeedback(tool string, times int) string {
	return fmt.Sprintf("You have made this exact call to %s %d times in a row; its results are above. "+
		"Nothing was run this time and nothing changed. Change approach or conclude.", tool, times)
}

// BreakerOpenFeedback answers a call to a tool whose circuit breaker is open. With a fallback the
// model gets a tool to use instead; without one it is told to carry on without the tool.
func BreakerOpenFeedback(tool, fallback string) string {
	head := fmt.Sprintf("The tool %s is unavailable right now; nothing was run and nothing changed. ", tool)
	if fallback != "" {
		return head + fmt.Sprintf("Use %s instead.", fallback)
	}
	return head + "Continue without it, or conclude if the task cannot go on without it."
}

// ApprovalDeniedFeedback answers a call a person did not approve (or that waited too long).
func ApprovalDeniedFeedback(tool, why string) string {
	return fmt.Sprintf("A person did not approve this call to %s%s; nothing was run and nothing changed. "+
		"Do not repeat the same call; choose another way to make progress or conclude.", tool, because(why))
}

// PolicyDeniedFeedback answers a call the tool policy refuses outright. Such a refusal is also a
// reason to tell a person, which IsPolicyViolation lets the caller detect.
func PolicyDeniedFeedback(tool, why string) string {
	return fmt.Sprintf(policyOpening+"%s%s; nothing was run and nothing changed. "+
		"Do not try to get around it; use an allowed tool or conclude.", tool, because(why))
}

// IsPolicyViolation reports whether a tool result is a policy refusal, so the session can escalate
// it (reason contract.ReasonPolicy) after feeding it back.
func IsPolicyViolation(res contract.ToolResult) bool {
	return res.IsError && strings.HasPrefix(res.Content, policyOpening)
}

// OutcomeUnknownFeedback answers a call whose worker stopped mid-call: the tool may or may not
// have done its work, so the model is told what to look at before it tries again (the tool row's
// Interrupted advice).
func OutcomeUnknownFeedback(tool string, args string) string {
	head := fmt.Sprintf("The call to %s was interrupted, so its outcome is unknown. ", tool)
	t, builtin := toolNamed(tool)
	switch {
	case builtin && !t.Writes:
		return head + "It only reads, so nothing changed; retry as is."
	case builtin && t.Interrupted != nil:
		return head + t.Interrupted(args)
	}
	return head + "It may or may not have changed something; check the state it works on before calling it again."
}

// fileInterrupted is the advice after an interrupted call that writes one file.
func fileInterrupted(args string) string {
	if p := pathArg(args); p != "" {
		return fmt.Sprintf("The file %q may or may not have changed; read it with read_file before trying again.", p)
	}
	return "The file may or may not have changed; read it with read_file before trying again."
}

// pathArg pulls a workdir-relative "path" out of argument text, or "" when there is none worth
// repeating (absolute paths and escapes are left out).
func pathArg(args string) string {
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal([]byte(args), &a) != nil || a.Path == "" {
		return ""
	}
	p := path.Clean(a.Path)
	if path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
		return ""
	}
	return p
}

// UnknownToolFeedback answers a call to a tool that does not exist, listing the tools that do and
// suggesting the closest name.
func UnknownToolFeedback(name string, known []string) string {
	names := append([]string(nil), known...)
	sort.Strings(names)
	msg := fmt.Sprintf("There is no tool named %q; nothing was run and nothing changed. ", name)
	if len(names) == 0 {
		return msg + "No tools are available, so continue without tools or conclude."
	}
	if best := closest(name, names); best != "" {
		msg += fmt.Sprintf("Did you mean %s? ", best)
	}
	return msg + "Call one of these instead — " + strings.Join(names, ", ") + "."
}

// closest returns the known name nearest to name by edit distance, if it is near enough to be a
// likely typo.
func closest(name string, names []string) string {
	best, bestD := "", len(name)/2+1
	for _, n := range names {
		if d := textfmt.EditDistance(strings.ToLower(name), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// because renders a reason as " (why)", trimmed of a trailing period; empty when there is none.
func because(why string) string {
	why = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(why), "."))
	if why == "" {
		return ""
	}
	return " (" + why + ")"
}

// sentence trims a fix so it can sit inside a sentence.
func sentence(s string) string {
	return strings.TrimRight(strings.TrimSpace(s), ".")
}
