package slackbot

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/contract"
)

// delivery is one answer on its way from Slack to a session, and the notice to update after.
// CallID and Digest are set for an approval: the answer is then an approve_call update.
type delivery struct {
	WorkflowID   string
	EscalationID string
	CallID       string
	Digest       string
	Channel      string
	TS           string
	Record       answerRecord
}

// key names the escalation in the bot's state. It includes the workflow ID, so two sessions
// whose escalation IDs happen to be equal never share an answer.
func (d delivery) key() string { return answerKey(d.WorkflowID, d.EscalationID) }

// answerKey is the bot state's key of one escalation of one session.
func answerKey(workflowID, escalationID string) string { return workflowID + "\x00" + escalationID }

// handleInteraction serves button clicks and modal submissions.
func (b *Bot) handleInteraction(w http.ResponseWriter, r *http.Request) {
	form, ok := b.verified(w, r)
	if !ok {
		return
	}
	var cb slack.InteractionCallback
	if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil {
		http.Error(w, "bad payload", http.StatusBadRequest)
		return
	}
	if !b.allowed(w, cb.Team.ID, cb.User.ID) {
		return
	}
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		b.onBlockAction(w, cb, r.Header.Get(slackRetryHeader) != "")
	case slack.InteractionTypeViewSubmission:
		b.onViewSubmission(w, cb)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// onBlockAction handles a click on Retry, Edit or Abort, or on Approve or Deny. Retry, abort,
// approve and deny claim the notice and become the answer; edit opens the modal and claims nothing
// until the text is submitted.
func (b *Bot) onBlockAction(w http.ResponseWriter, cb slack.InteractionCallback, redelivered bool) {
	act := keelAction(cb)
	if act == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	var v escalation.SlackButton
	choice := strings.TrimPrefix(act.ActionID, escalation.SlackActionPrefix)
	if err := json.Unmarshal([]byte(act.Value), &v); err != nil || !validButton(choice, v) {
		http.Error(w, "bad button", http.StatusBadRequest)
		return
	}
	d := delivery{WorkflowID: v.WorkflowID, EscalationID: v.EscalationID, Channel: cb.Channel.ID, TS: cb.Container.MessageTs}
	if isApprovalAction(choice) {
		d.CallID, d.Digest = v.CallID, v.Digest
	}
	if d.Channel == "" {
		d.Channel = cb.Container.ChannelID
	}
	if d.TS == "" {
		d.TS = cb.Message.Timestamp
	}
	b.state.rememberNotice(d.key(), cb.Message.Blocks.BlockSet)
	w.WriteHeader(http.StatusOK)

	user := cb.User.ID
	if prev, ok := b.state.answered(d.key()); ok {
		b.noteDuplicate(d, user, prev, redelivered)
		return
	}
	if choice == contract.ActionEdit {
		meta := editMeta{WorkflowID: d.WorkflowID, EscalationID: d.EscalationID, Channel: d.Channel, TS: d.TS}
		b.background(func(ctx context.Context) { b.openEdit(ctx, cb.TriggerID, meta, user) })
		return
	}
	d.Record = answerRecord{User: user, Action: choice, At: b.cfg.Now()}
	if prev, ok := b.state.claim(d.key(), d.Record); !ok {
		b.noteDuplicate(d, user, prev, redelivered)
		return
	}
	b.background(func(ctx context.Context) { b.deliver(ctx, d) })
}

// onViewSubmission turns the edit modal's text into an edit answer. Problems are shown in the
// modal itself, next to the text field.
func (b *Bot) onViewSubmission(w http.ResponseWriter, cb slack.InteractionCallback) {
	if cb.View.CallbackID != slackEditCallback {
		w.WriteHeader(http.StatusOK)
		return
	}
	var m editMeta
	if err := json.Unmarshal([]byte(cb.View.PrivateMetadata), &m); err != nil || m.WorkflowID == "" || m.EscalationID == "" {
		http.Error(w, "bad modal metadata", http.StatusBadRequest)
		return
	}
	text := ""
	if cb.View.State != nil {
		text = strings.TrimSpace(cb.View.State.Values[slackEditBlockID][slackEditActionID].Value)
	}
	if text == "" {
		writeJSON(w, slack.NewErrorsViewSubmissionResponse(map[string]string{slackEditBlockID: "Write the corrected arguments or an instruction for the model."}))
		return
	}
	d := delivery{WorkflowID: m.WorkflowID, EscalationID: m.EscalationID, Channel: m.Channel, TS: m.TS,
		Record: answerRecord{User: cb.User.ID, Action: contract.ActionEdit, Text: text, At: b.cfg.Now()}}
	if prev, ok := b.state.claim(d.key(), d.Record); !ok {
		writeJSON(w, slack.NewErrorsViewSubmissionResponse(map[string]string{slackEditBlockID: slackMarkupFree(alreadyNote(prev))}))
		return
	}
	w.WriteHeader(http.StatusOK)
	b.background(func(ctx context.Context) { b.deliver(ctx, d) })
}

// deliver sends the answer and, once the session accepted it, edits the notice. An answer that
// did not get through or was not accepted frees the escalation so someone can try again.
func (b *Bot) deliver(ctx context.Context, d delivery) {
	rec := d.Record
	res, err := b.send(ctx, d)
	if err != nil {
		b.state.release(d.key())
		b.cfg.Logger.Error("delivering slack answer", "workflow_id", d.WorkflowID, "escalation_id", d.EscalationID, "error", err)
		b.ephemeral(ctx, d.Channel, rec.User, fmt.Sprintf("Your answer did not reach session `%s`; nothing changed. Try again.", d.WorkflowID))
		return
	}
	if !res.Accepted {
		b.state.release(d.key())
		b.ephemeral(ctx, d.Channel, rec.User, fmt.Sprintf("Session `%s` did not accept the answer: %s", d.WorkflowID, res.Message))
		return
	}
	rec = b.state.settle(d.key())
	b.updateNotice(ctx, d, rec)
}

// send hands the answer to the session: an approve_call update for an approval, the answer
// update otherwise.
func (b *Bot) send(ctx context.Context, d delivery) (contract.AnswerResult, error) {
	rec := d.Record
	if d.CallID != "" {
		return b.cfg.Answerer.Approve(ctx, d.WorkflowID, contract.ApprovalDecision{
			CallID: d.CallID, Digest: d.Digest, Approve: rec.Action == contract.ActionApprove, By: "slack:" + rec.User,
		})
	}
	return b.cfg.Answerer.Answer(ctx, d.WorkflowID, contract.Answer{
		EscalationID: d.EscalationID, Action: rec.Action, Text: rec.Text, By: "slack:" + rec.User, Via: "slack",
	})
}

// updateNotice rewrites the notice to show the answer, without buttons.
func (b *Bot) updateNotice(ctx context.Context, d delivery, rec answerRecord) {
	if d.Channel == "" || d.TS == "" {
		return
	}
	blocks := answeredBlocks(b.state.notice(d.key()), rec)
	fallback := fmt.Sprintf("Escalation %s of %s answered by %s: %s", d.EscalationID, d.WorkflowID, rec.User, rec.Action)
	if d.CallID != "" {
		fallback = fmt.Sprintf("Call %s of %s %s by %s", d.CallID, d.WorkflowID, verdict(rec.Action), rec.User)
	}
	if _, _, _, err := b.cfg.API.UpdateMessageContext(ctx, d.Channel, d.TS, slack.MsgOptionText(fallback, false), slack.MsgOptionBlocks(blocks...)); err != nil {
		b.cfg.Logger.Warn("updating slack notice", "channel", d.Channel, "ts", d.TS, "error", err)
	}
}

// openEdit opens the edit modal; Slack's trigger ID is valid for 3 seconds, so this runs first
// thing in the background.
func (b *Bot) openEdit(ctx context.Context, triggerID string, meta editMeta, user string) {
	if _, err := b.cfg.API.OpenViewContext(ctx, triggerID, editModal(meta)); err != nil {
		b.cfg.Logger.Warn("opening slack edit modal", "escalation_id", meta.EscalationID, "error", err)
		b.ephemeral(ctx, meta.Channel, user, "The edit form could not be opened; click Edit again.")
	}
}

// noteDuplicate tells a later clicker who answered first. A redelivery by Slack gets no note:
// the person already saw the outcome of the first delivery.
func (b *Bot) noteDuplicate(d delivery, user string, prev answerRecord, redelivered bool) {
	if redelivered {
		return
	}
	b.background(func(ctx context.Context) { b.ephemeral(ctx, d.Channel, user, alreadyNote(prev)) })
}

// alreadyNote says who answered first, or who is answering right now.
func alreadyNote(prev answerRecord) string {
	if !prev.Done {
		return fmt.Sprintf("<@%s> is answering this escalation (%s) right now.", prev.User, prev.Action)
	}
	return fmt.Sprintf("Already answered by <@%s>: %s at %s.", prev.User, prev.Action, prev.At.UTC().Format(time.RFC3339))
}

// slackMarkupFree turns <@U123> into @U123 for plain-text places such as modal errors.
func slackMarkupFree(s string) string {
	return strings.NewReplacer("<@", "@", ">", "").Replace(s)
}

// keelAction returns the first of Keel's buttons in a block_actions payload.
func keelAction(cb slack.InteractionCallback) *slack.BlockAction {
	for _, a := range cb.ActionCallback.BlockActions {
		if strings.HasPrefix(a.ActionID, escalation.SlackActionPrefix) {
			return a
		}
	}
	return nil
}

// knownAction reports whether s is one of the answer actions.
func knownAction(s string) bool {
	return s == contract.ActionRetry || s == contract.ActionEdit || s == contract.ActionAbort
}

// verdict is an approval action as a past participle: approved or denied.
func verdict(action string) string {
	if action == contract.ActionApprove {
		return "approved"
	}
	return "denied"
}

// validButton checks a button's value against its action: every button names the session and
// the notice; Approve and Deny also name the call and its digest, or the update could not be sent.
func validButton(choice string, v escalation.SlackButton) bool {
	if v.WorkflowID == "" || v.EscalationID == "" {
		return false
	}
	if isApprovalAction(choice) {
		return v.CallID != "" && v.Digest != ""
	}
	return knownAction(choice)
}

// writeJSON answers 200 with a JSON body.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
