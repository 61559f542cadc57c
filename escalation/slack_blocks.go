package escalation

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
)

// Slack identifiers shared by the notice and the bot. The action IDs name the choice; the button
// value carries the workflow and escalation IDs, so a click needs no state on the bot's side.
const (
	SlackActionPrefix  = "keel_"
	SlackAnswerBlockID = "keel_answer"
	// SlackMetadataEventType marks Keel's notices in the message metadata, where the notifier
	// looks for an escalation ID before posting.
	SlackMetadataEventType = "keel_escalation"
	// slackTextMax stays below Block Kit's 3000-character limit for a section's text.
	slackTextMax = 2900
)

// SlackButton is the JSON carried by each answer button. The Approve and Deny buttons of an
// approval notice also carry the call and the digest of its arguments.
type SlackButton struct {
	WorkflowID   string `json:"workflow_id"`
	EscalationID string `json:"escalation_id"`
	CallID       string `json:"call_id,omitempty"`
	Digest       string `json:"digest,omitempty"`
}

// SlackBlocks renders the escalation notice: why, what was tried, the last error, the link and
// one button per allowed choice.
func SlackBlocks(e contract.Escalation) []slack.Block {
	if IsApproval(e) {
		return slackApprovalBlocks(e)
	}
	header := "A Keel session needs a person"
	if NoticeOnly(e) {
		header = "A Keel session failed"
	}
	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, header, false, false)),
		SlackSection(fmt.Sprintf("*Reason:* %s\n*Session:* `%s`\n*Escalation:* `%s`", Reason(e.Reason), e.WorkflowID, e.ID)),
	}
	if e.Summary != "" {
		blocks = append(blocks, SlackSection("*Summary:* "+e.Summary))
	}
	if len(e.Tried) > 0 {
		blocks = append(blocks, SlackSection("*Tried:*\n• "+strings.Join(e.Tried, "\n• ")))
	}
	for _, c := range e.Calls {
		blocks = append(blocks, SlackSection(fmt.Sprintf("*Call:* `%s`\n```%s```", c.Name, c.Arguments)))
	}
	if e.LastError != "" {
		blocks = append(blocks, SlackSection("*Last error:*\n```"+e.LastError+"```"))
	}
	if ctx := contextLine(e); ctx != "" {
		blocks = append(blocks, slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, ctx, false, false)))
	}
	if NoticeOnly(e) {
		return append(blocks, SlackSection("The session has ended; there is nothing to answer."))
	}
	return append(blocks, answerButtons(e))
}

// contextLine is the small print: facts, deadline and the Web UI link.
func contextLine(e contract.Escalation) string {
	var parts []string
	if facts := factsLine(e); facts != "" {
		parts = append(parts, facts)
	}
	if !e.Deadline.IsZero() && !NoticeOnly(e) {
		parts = append(parts, fmt.Sprintf("answer before <!date^%d^{date_short_pretty} {time}|%s>", e.Deadline.Unix(), e.Deadline.UTC().Format(time.RFC3339)))
	}
	if e.Link != "" {
		parts = append(parts, fmt.Sprintf("<%s|Open in the Web UI>", e.Link))
	}
	return strings.Join(parts, " · ")
}

// answerButtons builds the Retry / Edit / Abort buttons; abort asks for confirmation because it
// ends the session.
func answerButtons(e contract.Escalation) *slack.ActionBlock {
	v, _ := json.Marshal(SlackButton{WorkflowID: e.WorkflowID, EscalationID: e.ID})
	var elems []slack.BlockElement
	for _, choice := range Choices(e) {
		label := strings.ToUpper(choice[:1]) + choice[1:]
		btn := slack.NewButtonBlockElement(SlackActionPrefix+choice, string(v), slack.NewTextBlockObject(slack.PlainTextType, label, false, false))
		switch choice {
		case contract.ActionRetry:
			btn = btn.WithStyle(slack.StylePrimary)
		case contract.ActionAbort:
			btn = btn.WithStyle(slack.StyleDanger).WithConfirm(slack.NewConfirmationBlockObject(
				slack.NewTextBlockObject(slack.PlainTextType, "Abort the session?", false, false),
				slack.NewTextBlockObject(slack.PlainTextType, "The session stops and does not resume.", false, false),
				slack.NewTextBlockObject(slack.PlainTextType, "Abort", false, false),
				slack.NewTextBlockObject(slack.PlainTextType, "Keep waiting", false, false)))
		}
		elems = append(elems, btn)
	}
	return slack.NewActionBlock(SlackAnswerBlockID, elems...)
}

// SlackSection is a section of Markdown text, made harmless (textfmt.Harmless: it quotes the
// model) and cut to Block Kit's limit.
func SlackSection(text string) *slack.SectionBlock {
	if text = textfmt.Harmless(text); len(text) > slackTextMax {
		text = strings.ToValidUTF8(text[:slackTextMax], "") + "…"
	}
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil)
}
