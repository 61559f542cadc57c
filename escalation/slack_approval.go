package escalation

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/keelrun/keel/internal/contract"
)

// slackApprovalBlocks renders an approval notice: the tool, its whole arguments (in parts), the digest,
// when no answer denies the call, the CLI command, and the Approve and Deny buttons.
func slackApprovalBlocks(e contract.Escalation) []slack.Block {
	a := e.Approval
	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, "A Keel session waits for approval", false, false)),
		SlackSection(fmt.Sprintf("*Tool:* `%s`\n*Session:* `%s`\n*Call:* `%s`", a.Tool, e.WorkflowID, a.CallID)),
	}
	blocks = append(blocks, slackWholeCall(e)...)
	blocks = append(blocks, SlackSection(fmt.Sprintf("*Digest:* `%s`", a.Digest)))
	if ctx := approvalContextLine(e); ctx != "" {
		blocks = append(blocks, slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, ctx, false, false)))
	}
	blocks = append(blocks, SlackSection(fmt.Sprintf("Or from a shell: `%s`", ApproveCommand(e))))
	return append(blocks, approvalButtons(e))
}

// slackCallPieces is how many sections of slackTextMax the whole call may fill; Slack folds a long
// message behind "Show more". A longer call says how much is left out and how to see it all.
const slackCallPieces = 8

// slackWholeCall is the call's whole argument text in sections.
func slackWholeCall(e contract.Escalation) []slack.Block {
	pieces, hidden := WholeCall(e, slackTextMax-100, slackCallPieces)
	out := []slack.Block{}
	for i, p := range pieces {
		head := ""
		if i == 0 {
			head = "*Arguments:*\n"
		}
		out = append(out, SlackSection(head+"```"+strings.ReplaceAll(p, "```", "'''")+"```"))
	}
	if hidden > 0 {
		out = append(out, SlackSection(fmt.Sprintf("The last %d characters of the call are not shown here: `%s` prints it whole.", hidden, ShowCommand(e))))
	}
	return out
}

// approvalContextLine is the small print of an approval: the deadline and the Web UI link.
func approvalContextLine(e contract.Escalation) string {
	var parts []string
	if d := approvalDeadline(e); !d.IsZero() {
		parts = append(parts, fmt.Sprintf("no answer by <!date^%d^{date_short_pretty} {time}|%s> denies the call", d.Unix(), d.UTC().Format(time.RFC3339)))
	}
	if e.Link != "" {
		parts = append(parts, fmt.Sprintf("<%s|Open in the Web UI>", e.Link))
	}
	return strings.Join(parts, " · ")
}

// approvalButtons builds Approve (primary) and Deny (danger). Their value names the session, the
// notice, the call and the digest of its arguments, which is all the approve_call update needs.
func approvalButtons(e contract.Escalation) *slack.ActionBlock {
	v, _ := json.Marshal(SlackButton{WorkflowID: e.WorkflowID, EscalationID: e.ID, CallID: e.Approval.CallID, Digest: e.Approval.Digest})
	approve := slack.NewButtonBlockElement(SlackActionPrefix+contract.ActionApprove, string(v),
		slack.NewTextBlockObject(slack.PlainTextType, "Approve", false, false)).WithStyle(slack.StylePrimary)
	deny := slack.NewButtonBlockElement(SlackActionPrefix+contract.ActionDeny, string(v),
		slack.NewTextBlockObject(slack.PlainTextType, "Deny", false, false)).WithStyle(slack.StyleDanger)
	return slack.NewActionBlock(SlackAnswerBlockID, approve, deny)
}
