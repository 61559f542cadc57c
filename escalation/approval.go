package escalation

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/keelrun/keel/internal/contract"
)

// approvalArgsMax bounds the argument text a notice shows: enough to judge a write, short enough
// for a chat message. The digest still names the exact, whole text.
const approvalArgsMax = 1500

// IsApproval reports whether e asks a person to approve one tool call rather than to answer an
// escalation: such a notice is answered with the approve_call update (approve or deny), never
// with retry, edit or abort.
func IsApproval(e contract.Escalation) bool { return e.Approval != nil }

// ApproveCommand is the CLI line that approves the waiting call, or denies it with --deny. It
// names the call and the digest of its arguments, so it can only ever decide this exact call.
func ApproveCommand(e contract.Escalation) string { return approveLine(e) + " [--deny]" }

// approveLine is the command that approves the call, ready to paste.
func approveLine(e contract.Escalation) string {
	a := e.Approval
	return fmt.Sprintf("starter approve %s %s --digest %s", e.WorkflowID, a.CallID, a.Digest)
}

// approvalText is the plain-text rendering of an approval notice.
func approvalText(e contract.Escalation) string {
	a := e.Approval
	var b strings.Builder
	fmt.Fprintf(&b, "Session %s waits for approval of a %s call (%s)\n", e.WorkflowID, a.Tool, contract.ReasonApproval)
	fmt.Fprintf(&b, "Approval: %s\n", e.ID)
	fmt.Fprintf(&b, "Tool: %s\n", a.Tool)
	fmt.Fprintf(&b, "Call: %s\n", a.CallID)
	fmt.Fprintf(&b, "Arguments: %s\n", clip(a.Arguments, approvalArgsMax))
	fmt.Fprintf(&b, "Digest: %s\n", a.Digest)
	if e.Link != "" {
		fmt.Fprintf(&b, "Web UI: %s\n", e.Link)
	}
	fmt.Fprintf(&b, "Choices: %s\n", strings.Join(Choices(e), ", "))
	if d := approvalDeadline(e); !d.IsZero() {
		b.WriteString(deadlineLine(d, contract.ActionDeny, time.Now()))
	}
	fmt.Fprintf(&b, "Answer with: %s\n", ApproveCommand(e))
	return b.String()
}

// approvalDeadline is when the call is denied unless someone answers: the approval's own
// deadline, or the notice's when the approval lacks one.
func approvalDeadline(e contract.Escalation) time.Time {
	if e.Approval != nil && !e.Approval.Deadline.IsZero() {
		return e.Approval.Deadline
	}
	return e.Deadline
}

// clip shortens s to at most max bytes on a rune boundary and marks the cut, so a long argument
// text never swamps a notice.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes in all)", len(s))
}
