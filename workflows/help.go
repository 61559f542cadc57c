package workflows

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/contract"
)

// The answer instructions below are Markdown for the Web UI's current details (User Metadata).
// The UI shows code blocks without wrapping them, so a long line is cut off at the pane's edge:
// each choice starts with its action word in bold, and every command is broken into short
// continued lines (the action word is never last on a long line). Arguments and JSON sit in code
// spans and blocks only, where the UI keeps quotes plain instead of curling them. The text lives
// in the metadata query, not in history, so changing it changes no recorded history.

// actionDoes says in a few words what each answer does, after its action word.
var actionDoes = map[string]string{
	contract.ActionRetry:   "run the step that failed again, as it was",
	contract.ActionEdit:    "send the model corrected arguments or an instruction",
	contract.ActionAbort:   "end the session here",
	contract.ActionApprove: "run the call as shown",
	contract.ActionDeny:    "refuse the call; the model is told it was denied",
}

// escalationHelp tells a person looking at a waiting session in the Web UI what is pending and the
// exact commands that answer it: one starter command per choice and the Temporal CLI's update.
func escalationHelp(e contract.Escalation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Escalation** `%s` · reason `%s`\n\n%s\n\nAnswer with one of these (the first answer wins):\n\n", e.ID, e.Reason, e.Summary)
	for _, action := range e.Choices {
		lines := []string{"starter answer " + e.WorkflowID + " \\", "  " + e.ID + " " + action}
		if action == contract.ActionEdit {
			lines[1] += " \\"
			lines = append(lines, `  --text "corrected arguments or an instruction for the model"`)
		}
		choice(&b, action, "", lines)
	}
	if len(e.Choices) > 0 {
		in := contract.Answer{EscalationID: e.ID, Action: e.Choices[0], By: "temporal-cli"}
		others := make([]string, 0, len(e.Choices)-1)
		for _, a := range e.Choices[1:] {
			others = append(others, fmt.Sprintf("`\"action\":%q`", a))
		}
		choice(&b, e.Choices[0], " with the Temporal CLI (for another answer put "+strings.Join(others, " or ")+" in the input)",
			updateLines(e.WorkflowID, contract.UpdateAnswerEscalation, in))
	}
	return b.String()
}

// approvalHelp is escalationHelp for a tool call waiting for approval: the call's arguments in a
// code block, then approve and deny, each with the starter and with the Temporal CLI.
func approvalHelp(workflowID string, a contract.Approval) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Approval** of call `%s` to `%s`, with the arguments:\n\n%s\ndigest `%s`\n\n", a.CallID, a.Tool, codeBlock([]string{clip(a.Arguments, 200)}), a.Digest)
	for _, approve := range []bool{true, false} {
		action, flag := contract.ActionApprove, ""
		if !approve {
			action, flag = contract.ActionDeny, " --deny"
		}
		choice(&b, action, "", []string{"starter approve" + flag + " \\", "  " + workflowID + " \\", "  " + a.CallID + " \\", "  --digest " + a.Digest})
		in := contract.ApprovalDecision{CallID: a.CallID, Digest: a.Digest, Approve: approve, By: "temporal-cli"}
		choice(&b, action, " with the Temporal CLI", updateLines(workflowID, contract.UpdateApproveCall, in))
	}
	return b.String()
}

// choice writes one answer: its action word first, in bold, what it does, then the command.
func choice(b *strings.Builder, action, how string, lines []string) {
	fmt.Fprintf(b, "**%s**%s: %s\n\n%s\n", action, how, actionDoes[action], codeBlock(lines))
}

// codeBlock indents lines into a Markdown code block, each line of a multi-line text included.
func codeBlock(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		for _, part := range strings.Split(l, "\n") {
			b.WriteString("    " + part + "\n")
		}
	}
	return b.String()
}

// updateLines is the `temporal workflow update execute` command that sends one update, one flag
// a line and the input one field a line (JSON may span lines inside the shell's single quotes).
func updateLines(workflowID, name string, input any) []string {
	js, _ := json.MarshalIndent(input, "", "  ")
	return []string{
		"temporal workflow update execute \\",
		"  --workflow-id " + workflowID + " \\",
		"  --name " + name + " \\",
		"  --input '" + string(js) + "'",
	}
}
