package escalation

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
)

// approvalArgsMax bounds the argument text a notice shows on its line: enough to judge a write,
// short enough for a chat message. A longer call shows its start and its end and says how much
// is hidden and how to see it all (ShowCommand); Slack and GitHub carry the whole call as well
// (WholeCall). The digest still names the exact, whole text.
const approvalArgsMax = 1500

// ShowCommand is the CLI line that prints the whole call waiting for approval, deciding nothing.
func ShowCommand(e contract.Escalation) string {
	return fmt.Sprintf("starter approve %s %s --show", e.WorkflowID, e.Approval.CallID)
}

// argumentsShown is the call's argument text as a notice's line shows it: harmless, whole up to
// approvalArgsMax characters, else its start and end with how much is hidden and how to see it.
func argumentsShown(e contract.Escalation) string {
	return textfmt.Preview(e.Approval.Arguments, approvalArgsMax, "`"+ShowCommand(e)+"` prints the whole call")
}

// WholeCall splits the call's whole argument text, made harmless, into at most n pieces of at
// most size bytes, cut on rune boundaries, for a channel that shows the whole call folded or in
// parts; hidden is how many characters did not fit (0 when all did).
func WholeCall(e contract.Escalation, size, n int) (pieces []string, hidden int) {
	s := textfmt.Harmless(e.Approval.Arguments)
	for s != "" && len(pieces) < n {
		cut := min(size, len(s))
		for cut < len(s) && cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		pieces, s = append(pieces, s[:cut]), s[cut:]
	}
	return pieces, utf8.RuneCountInString(s)
}

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
	fmt.Fprintf(&b, "Arguments: %s\n", argumentsShown(e))
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
