package workflows

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/contract"
)

// escalationHelp tells a person looking at a waiting session in the Web UI what is pending and the
// exact commands that answer it: one starter line per choice and the Temporal CLI's update.
func escalationHelp(e contract.Escalation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Escalation** `%s` · reason `%s`\n\n%s\n\nAnswer with one of:\n\n", e.ID, e.Reason, e.Summary)
	for _, action := range e.Choices {
		line := fmt.Sprintf("starter answer %s %s %s", e.WorkflowID, e.ID, action)
		if action == contract.ActionEdit {
			line += ` --text "corrected arguments or an instruction for the model"`
		}
		fmt.Fprintf(&b, "    %s\n", line)
	}
	if len(e.Choices) > 0 {
		in := contract.Answer{EscalationID: e.ID, Action: e.Choices[0], By: "temporal-cli"}
		fmt.Fprintf(&b, "\nor with the Temporal CLI (action %s):\n\n    %s\n", strings.Join(e.Choices, ", "),
			updateLine(e.WorkflowID, contract.UpdateAnswerEscalation, in))
	}
	return b.String()
}

// approvalHelp is escalationHelp for a tool call waiting for approval.
func approvalHelp(workflowID string, a contract.Approval) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Approval** of call `%s`: `%s %s`\n\ndigest `%s`\n\nApprove or deny with:\n\n", a.CallID, a.Tool, clip(a.Arguments, 200), a.Digest)
	fmt.Fprintf(&b, "    starter approve %s %s --digest %s\n", workflowID, a.CallID, a.Digest)
	fmt.Fprintf(&b, "    starter approve %s %s --digest %s --deny\n", workflowID, a.CallID, a.Digest)
	in := contract.ApprovalDecision{CallID: a.CallID, Digest: a.Digest, Approve: true, By: "temporal-cli"}
	fmt.Fprintf(&b, "\nor with the Temporal CLI (\"approve\": false denies):\n\n    %s\n", updateLine(workflowID, contract.UpdateApproveCall, in))
	return b.String()
}

// updateLine is the `temporal workflow update execute` command that sends one update.
func updateLine(workflowID, name string, input any) string {
	js, _ := json.Marshal(input)
	return fmt.Sprintf("temporal workflow update execute --workflow-id %s --name %s --input '%s'", workflowID, name, js)
}
