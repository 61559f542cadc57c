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
	slackActionPrefix  = "keel_"
	slackAnswerBlockID = "keel_answer"
	slackEditCallback  = "keel_edit"
	slackEditBlockID   = "keel_edit_text"
	slackEditActionID  = "text"
	// SlackMetadataEventType marks Keel's notices in the message metadata, where the notifier
	// looks for an escalation ID before posting.
	SlackMetadataEventType = "keel_escalation"
	// slackTextMax stays below Block Kit's 3000-character limit for a section's text.
	slackTextMax = 2900
)

// buttonValue is the JSON carried by each answer button. The Approve and Deny buttons of an
// approval notice also carry the call and the digest of its arguments.
type buttonValue struct {
	WorkflowID   string `json:"workflow_id"`
	EscalationID string `json:"escalation_id"`
	CallID       string `json:"call_id,omitempty"`
	Digest       string `json:"digest,omitempty"`
}

// slackBlocks renders the escalation notice: why, what was tried, the last error, the link and
// one button per allowed choice.
func slackBlocks(e contract.Escalation) []slack.Block {
	if IsApproval(e) {
		return slackApprovalBlocks(e)
	}
	header := "A Keel session needs a person"
	if NoticeOnly(e) {
		header = "A Keel session failed"
	}
	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, header, false, false)),
		mrkdwnSection(fmt.Sprintf("*Reason:* %s\n*Session:* `%s`\n*Escalation:* `%s`", Reason(e.Reason), e.WorkflowID, e.ID)),
	}
	if e.Summary != "" {
		blocks = append(blocks, mrkdwnSection("*Summary:* "+e.Summary))
	}
	if len(e.Tried) > 0 {
		blocks = append(blocks, mrkdwnSection("*Tried:*\n• "+strings.Join(e.Tried, "\n• ")))
	}
	for _, c := range e.Calls {
		blocks = append(blocks, mrkdwnSection(fmt.Sprintf("*Call:* `%s`\n```%s```", c.Name, c.Arguments)))
	}
	if e.LastError != "" {
		blocks = append(blocks, mrkdwnSection("*Last error:*\n```"+e.LastError+"```"))
	}
	if ctx := contextLine(e); ctx != "" {
		blocks = append(blocks, slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, ctx, false, false)))
	}
	if NoticeOnly(e) {
		return append(blocks, mrkdwnSection("The session has ended; there is nothing to answer."))
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
	v, _ := json.Marshal(buttonValue{WorkflowID: e.WorkflowID, EscalationID: e.ID})
	var elems []slack.BlockElement
	for _, choice := range Choices(e) {
		label := strings.ToUpper(choice[:1]) + choice[1:]
		btn := slack.NewButtonBlockElement(slackActionPrefix+choice, string(v), slack.NewTextBlockObject(slack.PlainTextType, label, false, false))
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
	return slack.NewActionBlock(slackAnswerBlockID, elems...)
}

// mrkdwnSection is a section of Markdown text, made harmless (textfmt.Harmless: it quotes the
// model) and cut to Block Kit's limit.
func mrkdwnSection(text string) *slack.SectionBlock {
	if text = textfmt.Harmless(text); len(text) > slackTextMax {
		text = strings.ToValidUTF8(text[:slackTextMax], "") + "…"
	}
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil)
}

// editModal is the modal that asks for the edit text; the private metadata says where the answer
// goes and which message to update.
func editModal(meta editMeta) slack.ModalViewRequest {
	m, _ := json.Marshal(meta)
	input := slack.NewPlainTextInputBlockElement(
		slack.NewTextBlockObject(slack.PlainTextType, "Corrected arguments or an instruction for the model", false, false),
		slackEditActionID).WithMultiline(true)
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		CallbackID:      slackEditCallback,
		PrivateMetadata: string(m),
		Title:           slack.NewTextBlockObject(slack.PlainTextType, "Edit and continue", false, false),
		Submit:          slack.NewTextBlockObject(slack.PlainTextType, "Send", false, false),
		Close:           slack.NewTextBlockObject(slack.PlainTextType, "Cancel", false, false),
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			mrkdwnSection(fmt.Sprintf("Session `%s`, escalation `%s`", meta.WorkflowID, meta.EscalationID)),
			slack.NewInputBlock(slackEditBlockID, slack.NewTextBlockObject(slack.PlainTextType, "Text", false, false), nil, input),
		}},
	}
}

// editMeta travels in the modal's private metadata.
type editMeta struct {
	WorkflowID   string `json:"workflow_id"`
	EscalationID string `json:"escalation_id"`
	Channel      string `json:"channel"`
	TS           string `json:"ts"`
}

// answeredBlocks is the notice after an answer: the original blocks without buttons, plus who
// answered, what and when.
func answeredBlocks(original []slack.Block, rec answerRecord) []slack.Block {
	var out []slack.Block
	for _, b := range original {
		if b.BlockType() != slack.MBTAction {
			out = append(out, b)
		}
	}
	return append(out, mrkdwnSection(answeredLine(rec)))
}

// answeredLine says who answered, what and when; an approval says who approved or denied.
func answeredLine(rec answerRecord) string {
	at := rec.At.UTC().Format(time.RFC3339)
	switch rec.Action {
	case contract.ActionApprove:
		return fmt.Sprintf("*Approved* by <@%s> at %s", rec.User, at)
	case contract.ActionDeny:
		return fmt.Sprintf("*Denied* by <@%s> at %s", rec.User, at)
	}
	s := fmt.Sprintf("Answered by <@%s>: *%s* at %s", rec.User, rec.Action, at)
	if rec.Text != "" {
		s += "\n>" + strings.ReplaceAll(rec.Text, "\n", "\n>")
	}
	return s
}
