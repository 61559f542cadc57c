package slackbot

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/contract"
)

// The edit modal's identifiers: its callback, and the input block and action that hold the text.
const (
	slackEditCallback = "keel_edit"
	slackEditBlockID  = "keel_edit_text"
	slackEditActionID = "text"
)

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
			escalation.SlackSection(fmt.Sprintf("Session `%s`, escalation `%s`", meta.WorkflowID, meta.EscalationID)),
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
	return append(out, escalation.SlackSection(answeredLine(rec)))
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

// isApprovalAction reports whether a button's action is an answer to an approval notice.
func isApprovalAction(action string) bool {
	return action == contract.ActionApprove || action == contract.ActionDeny
}
