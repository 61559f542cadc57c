package escalation

import (
	"fmt"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
)

// reasonText says in words why a session stopped; the reason code stays next to it so people can
// search for it.
var reasonText = map[string]string{
	contract.ReasonGatewayRetries: "the model gateway kept failing after every retry",
	contract.ReasonRepairCap:      "the model could not produce valid tool arguments",
	contract.ReasonLoop:           "the model keeps repeating the same call",
	contract.ReasonFatalTool:      "a tool failed in a way the model cannot fix",
	contract.ReasonPolicy:         "a tool call was refused by the policy",
	contract.ReasonBudget:         "a budget or quota is exhausted",
	contract.ReasonApproval:       "a tool call waits for approval",
}

// Reason renders an escalation reason for people: the words, then the code.
func Reason(code string) string {
	if t, ok := reasonText[code]; ok {
		return fmt.Sprintf("%s (%s)", t, code)
	}
	if code == "" {
		return "unknown reason"
	}
	return code
}

// Choices returns the actions a person may take; an escalation that lists none allows all three
// (an approval: approve and deny), so an old record never leaves a person without a way out.
func Choices(e contract.Escalation) []string {
	if len(e.Choices) > 0 {
		return e.Choices
	}
	if IsApproval(e) {
		return []string{contract.ActionApprove, contract.ActionDeny}
	}
	return []string{contract.ActionRetry, contract.ActionEdit, contract.ActionAbort}
}

// NoticeOnly reports whether e only tells people that a session failed (gateway retries exhausted,
// budget): the session did not wait, so there is nothing to answer and no buttons or commands are
// offered.
func NoticeOnly(e contract.Escalation) bool {
	return len(e.Choices) == 0 && (e.Reason == contract.ReasonGatewayRetries || e.Reason == contract.ReasonBudget)
}

// AnswerCommand is the exact CLI line that answers the escalation, shared by every channel so
// people learn one command; an approval is answered with ApproveCommand.
func AnswerCommand(e contract.Escalation) string {
	if IsApproval(e) {
		return ApproveCommand(e)
	}
	return fmt.Sprintf("starter answer %s %s %s", e.WorkflowID, e.ID, strings.Join(Choices(e), "|"))
}

// Text is the plain-text rendering of an escalation used by the terminal and the CLI: everything a
// person needs to decide without opening anything else. Its summary, calls and errors quote the
// model, so it is made harmless (textfmt.Harmless) for every channel that shows it.
func Text(e contract.Escalation) string {
	if IsApproval(e) {
		return textfmt.Harmless(approvalText(e))
	}
	return textfmt.Harmless(escalationText(e))
}

// escalationText is Text of an escalation that is not an approval.
func escalationText(e contract.Escalation) string {
	var b strings.Builder
	if NoticeOnly(e) {
		fmt.Fprintf(&b, "Session %s failed: %s\n", e.WorkflowID, Reason(e.Reason))
	} else {
		fmt.Fprintf(&b, "Session %s needs a person: %s\n", e.WorkflowID, Reason(e.Reason))
	}
	fmt.Fprintf(&b, "Escalation: %s\n", e.ID)
	if e.Summary != "" {
		fmt.Fprintf(&b, "Summary: %s\n", e.Summary)
	}
	if facts := factsLine(e); facts != "" {
		fmt.Fprintf(&b, "%s\n", facts)
	}
	if len(e.Tried) > 0 {
		b.WriteString("Tried:\n")
		for _, t := range e.Tried {
			fmt.Fprintf(&b, "  - %s\n", t)
		}
	}
	for _, c := range e.Calls {
		fmt.Fprintf(&b, "Call: %s %s\n", c.Name, c.Arguments)
	}
	if e.LastError != "" {
		fmt.Fprintf(&b, "Last error: %s\n", e.LastError)
	}
	if e.Link != "" {
		fmt.Fprintf(&b, "Web UI: %s\n", e.Link)
	}
	if NoticeOnly(e) {
		b.WriteString("Nothing to answer: the session has ended.\n")
		return b.String()
	}
	fmt.Fprintf(&b, "Choices: %s\n", strings.Join(Choices(e), ", "))
	if !e.Deadline.IsZero() {
		b.WriteString(deadlineLine(e.Deadline, e.DefaultAction, time.Now()))
	}
	fmt.Fprintf(&b, "Answer with: %s\n", AnswerCommand(e))
	return b.String()
}

// factsLine joins the failure class, attempt count and time spent, leaving out what is unknown.
func factsLine(e contract.Escalation) string {
	var parts []string
	if e.Class != "" {
		parts = append(parts, "class "+e.Class)
	}
	if e.Attempts > 0 {
		parts = append(parts, fmt.Sprintf("%d attempts", e.Attempts))
	}
	if e.SpentMS > 0 {
		parts = append(parts, "spent "+textfmt.Duration(time.Duration(e.SpentMS)*time.Millisecond))
	}
	return strings.Join(parts, ", ")
}

// deadlineLine says how long is left to answer and what happens then, with the moment itself:
// "Deadline in 29m 58s (then: abort), at 2026-12-01T10:00:00Z". then is left out when unknown
// (records of sessions started before it was recorded).
func deadlineLine(deadline time.Time, then string, now time.Time) string {
	when := "passed"
	if left := deadline.Sub(now); left > 0 {
		when = "in " + textfmt.Duration(left)
	}
	if then != "" {
		when += " (then: " + then + ")"
	}
	return fmt.Sprintf("Deadline %s, at %s\n", when, deadline.UTC().Format(time.RFC3339))
}
