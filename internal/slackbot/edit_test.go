package slackbot

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/internal/contract"
)

func TestSlackBotEditFlow(t *testing.T) {
	h := newBotHarness(t)
	code, _ := h.do(h.click("U1", testTeam, contract.ActionEdit))
	require.Equal(t, http.StatusOK, code)

	req := receive(t, h.slack.views, "views.open")
	assert.Equal(t, "trig-U1", req["trigger_id"])
	view := req["view"].(map[string]any)
	assert.Equal(t, "modal", view["type"])
	assert.Equal(t, "keel_edit", view["callback_id"])
	meta := view["private_metadata"].(string)
	var m editMeta
	require.NoError(t, json.Unmarshal([]byte(meta), &m))
	assert.Equal(t, editMeta{WorkflowID: h.e.WorkflowID, EscalationID: "esc-b1", Channel: "C1", TS: "1700000000.000100"}, m)
	h.bot.Wait()
	n, _, _ := h.ans.calls()
	require.Zero(t, n, "opening the modal is not an answer")

	// An empty submission is refused inside the modal.
	code, body := h.do(h.submit("U1", meta, "   "))
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"response_action":"errors"`)
	assert.Contains(t, body, slackEditBlockID)

	code, body = h.do(h.submit("U1", meta, `{"path":"b.txt"}`))
	require.Equal(t, http.StatusOK, code)
	assert.Empty(t, body, "an empty 200 closes the modal")
	upd := receive(t, h.slack.updates, "chat.update")
	assert.Equal(t, "1700000000.000100", upd.Get("ts"))
	assert.Contains(t, upd.Get("blocks"), "*edit*")
	assert.Contains(t, upd.Get("blocks"), `b.txt`)
	h.bot.Wait()
	h.ans.mu.Lock()
	require.Len(t, h.ans.answers, 1)
	assert.Equal(t, contract.Answer{EscalationID: "esc-b1", Action: contract.ActionEdit, Text: `{"path":"b.txt"}`, By: "slack:U1", Via: "slack"}, h.ans.answers[0].Answer)
	h.ans.mu.Unlock()

	// A second modal submitted later (another approver) is told, in the modal, who answered.
	code, body = h.do(h.submit("U2", meta, "something else"))
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"response_action":"errors"`)
	assert.Contains(t, body, "Already answered by @U1: edit")
	// And Edit on an answered escalation opens no modal.
	code, _ = h.do(h.click("U2", testTeam, contract.ActionEdit))
	require.Equal(t, http.StatusOK, code)
	receive(t, h.slack.ephemerals, "already answered note")
	h.bot.Wait()
	assert.Empty(t, h.slack.views)
	n, _, _ = h.ans.calls()
	assert.Equal(t, 1, n)
}

func TestSlackBotCommands(t *testing.T) {
	tests := []struct {
		name        string
		text        string
		wantAck     string
		wantReply   string
		wantStatus  int
		wantCancels []cancelCall
		wantSays    []sayCall
	}{
		{name: "say", text: "say keel-abc  use the table,\nplease", wantAck: "Working on `say keel-abc`",
			wantReply: "Message sent to `keel-abc`: message queued", wantSays: []sayCall{{"keel-abc", contract.Say{Text: "use the table,\nplease", By: "<@U2>", Via: "slack"}}}},
		{name: "interrupt", text: "interrupt keel-abc stop and read the README", wantAck: "Working on `interrupt keel-abc`",
			wantReply: "Message sent", wantSays: []sayCall{{"keel-abc", contract.Say{Text: "stop and read the README", By: "<@U2>", Via: "slack", Interrupt: true}}}},
		{name: "say without a message", text: "say keel-abc", wantAck: "Usage:"},
		{name: "status", text: "status keel-abc", wantAck: "Working on `status keel-abc`", wantStatus: 1,
			wantReply: "Session `keel-abc`: *waiting*, turn 3, 1234 tokens, 5 tool calls (1 blocked)\nWaiting on escalation `esc-1`"},
		{name: "stop with reason", text: "stop keel-abc wrong branch", wantAck: "Working on `stop keel-abc`",
			wantReply: "Stop sent to `keel-abc` by <@U2>.", wantCancels: []cancelCall{{"keel-abc", contract.CancelRequest{Reason: "wrong branch", By: "slack:U2"}}}},
		{name: "stop", text: "stop keel-abc", wantAck: "Working on",
			wantReply: "Stop sent", wantCancels: []cancelCall{{"keel-abc", contract.CancelRequest{Reason: "stopped from Slack", By: "slack:U2"}}}},
		{name: "help", text: "", wantAck: "Usage: `/keel status WORKFLOW_ID`"},
		{name: "unknown verb", text: "delete keel-abc", wantAck: "Usage:"},
		{name: "missing id", text: "status", wantAck: "Usage:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newBotHarness(t)
			code, body := h.do(h.command("U2", testTeam, tt.text))
			require.Equal(t, http.StatusOK, code)
			var ack commandReply
			require.NoError(t, json.Unmarshal([]byte(body), &ack))
			assert.Equal(t, "ephemeral", ack.ResponseType)
			assert.Contains(t, ack.Text, tt.wantAck)
			if tt.wantReply != "" {
				rep := receive(t, h.slack.replies, "response_url reply")
				assert.Contains(t, rep.Text, tt.wantReply)
			}
			h.bot.Wait()
			h.ans.mu.Lock()
			defer h.ans.mu.Unlock()
			assert.Empty(t, h.ans.answers)
			assert.Len(t, h.ans.status, tt.wantStatus)
			assert.Equal(t, tt.wantCancels, h.ans.cancels)
			assert.Equal(t, tt.wantSays, h.ans.says)
			assert.Empty(t, h.slack.replies)
		})
	}
}
