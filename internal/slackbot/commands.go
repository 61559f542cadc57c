package slackbot

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/contract"
)

// slackUsage is the reply to an empty or unknown slash command.
const slackUsage = "Usage: `/keel status WORKFLOW_ID`, `/keel stop WORKFLOW_ID [reason]`, `/keel say WORKFLOW_ID message` or `/keel interrupt WORKFLOW_ID message`"

// commandReply is the JSON body Slack shows for a slash command, at once or via response_url.
type commandReply struct {
	ResponseType string `json:"response_type"`
	Text         string `json:"text"`
}

// handleCommand serves the slash command: status runs the status query, stop sends the cancel
// signal, say and interrupt add a message to the session (interrupt cancels the turn in flight
// first). It acknowledges at once and posts the outcome to the command's response_url.
func (b *Bot) handleCommand(w http.ResponseWriter, r *http.Request) {
	form, ok := b.verified(w, r)
	if !ok || !b.allowed(w, form.Get("team_id"), form.Get("user_id")) {
		return
	}
	fields := strings.Fields(form.Get("text"))
	if len(fields) < 2 || !knownVerb(fields[0]) || (isSay(fields[0]) && len(fields) < 3) {
		writeJSON(w, commandReply{ResponseType: "ephemeral", Text: slackUsage})
		return
	}
	verb, wf, user, respURL := fields[0], fields[1], form.Get("user_id"), form.Get("response_url")
	reason := strings.Join(fields[2:], " ")
	writeJSON(w, commandReply{ResponseType: "ephemeral", Text: fmt.Sprintf("Working on `%s %s`…", verb, wf)})
	b.background(func(ctx context.Context) {
		var text string
		switch {
		case verb == "status":
			text = b.runStatus(ctx, wf)
		case isSay(verb):
			text = b.runSay(ctx, wf, user, verb == "interrupt", sayText(form.Get("text")))
		default:
			text = b.runStop(ctx, wf, user, reason)
		}
		b.respond(ctx, respURL, text)
	})
}

func knownVerb(v string) bool { return v == "status" || v == "stop" || isSay(v) }

func isSay(v string) bool { return v == contract.ActionSay || v == "interrupt" }

// sayText is the message of a say command as the person typed it: everything after the verb and
// the workflow ID, with its own spacing and line breaks.
func sayText(text string) string {
	rest := strings.TrimSpace(text)
	for range 2 {
		if i := strings.IndexFunc(rest, unicode.IsSpace); i >= 0 {
			rest = strings.TrimSpace(rest[i:])
		}
	}
	return rest
}

// runSay adds a person's message to the session through the say update.
func (b *Bot) runSay(ctx context.Context, wf, user string, interrupt bool, text string) string {
	res, err := b.cfg.Answerer.Say(ctx, wf, contract.Say{Text: text, By: "<@" + user + ">", Via: "slack", Interrupt: interrupt})
	if err != nil {
		b.cfg.Logger.Warn("slack say command", "workflow_id", wf, "error", err)
		return fmt.Sprintf("Could not send the message to `%s`: %v", wf, err)
	}
	if !res.Accepted {
		return fmt.Sprintf("`%s` did not take the message: %s", wf, res.Message)
	}
	return fmt.Sprintf("Message sent to `%s`: %s", wf, res.Message)
}

// runStatus asks the session for its status and renders it.
func (b *Bot) runStatus(ctx context.Context, wf string) string {
	st, err := b.cfg.Answerer.Status(ctx, wf)
	if err != nil {
		b.cfg.Logger.Warn("slack status command", "workflow_id", wf, "error", err)
		return fmt.Sprintf("Could not get the status of `%s`: %v", wf, err)
	}
	return StatusText(wf, st)
}

// runStop sends the cancel signal on behalf of a person.
func (b *Bot) runStop(ctx context.Context, wf, user, reason string) string {
	if reason == "" {
		reason = "stopped from Slack"
	}
	if err := b.cfg.Answerer.Cancel(ctx, wf, contract.CancelRequest{Reason: reason, By: "slack:" + user}); err != nil {
		b.cfg.Logger.Warn("slack stop command", "workflow_id", wf, "error", err)
		return fmt.Sprintf("Could not stop `%s`: %v", wf, err)
	}
	return fmt.Sprintf("Stop sent to `%s` by <@%s>.", wf, user)
}

// respond posts a delayed reply to a slash command's response_url.
func (b *Bot) respond(ctx context.Context, respURL, text string) {
	if respURL == "" {
		return
	}
	body, _ := json.Marshal(commandReply{ResponseType: "ephemeral", Text: text})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, respURL, bytes.NewReader(body))
	if err != nil {
		b.cfg.Logger.Warn("building slack command reply", "error", err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.cfg.HTTPClient.Do(req)
	if err != nil {
		b.cfg.Logger.Warn("posting slack command reply", "error", err)
		return
	}
	defer resp.Body.Close()
	if err := escalation.CheckStatus("posting slack command reply", resp); err != nil {
		b.cfg.Logger.Warn("posting slack command reply", "error", err)
	}
}

// StatusText renders a session's status in a few lines for chat.
func StatusText(wf string, st contract.SessionStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Session `%s`: *%s*, turn %d, %d tokens, %d tool calls (%d blocked)",
		wf, st.Status, st.Turn, st.Usage.Total(), st.Counters.ToolCalls, st.Counters.BlockedCalls)
	if st.Running > 0 {
		fmt.Fprintf(&b, "\nTurn %d is running (the counts above are of the turns done)", st.Running)
	}
	if e := st.Escalation; e != nil && e.Answer == nil {
		fmt.Fprintf(&b, "\nWaiting on escalation `%s`: %s", e.ID, escalation.Reason(e.Reason))
	}
	if a := st.Approval; a != nil {
		fmt.Fprintf(&b, "\nWaiting on approval of `%s`", a.Tool)
	}
	return b.String()
}
