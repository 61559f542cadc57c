package slackbot

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/samples"
	"github.com/keelrun/keel/internal/session"
)

// newApprovalHarness is the bot harness with an approval notice as the clicked message.
func newApprovalHarness(t *testing.T) *botHarness {
	h := newBotHarness(t)
	h.e = samples.Approval("apr-b1")
	return h
}

// TestSlackBotApprovalClick: a click on Approve or Deny becomes one approve_call decision naming
// the call and its digest, and the notice loses its buttons and says who decided and when.
func TestSlackBotApprovalClick(t *testing.T) {
	tests := []struct {
		choice  string
		approve bool
		line    string
	}{
		{contract.ActionApprove, true, "*Approved* by <@U1> at "},
		{contract.ActionDeny, false, "*Denied* by <@U1> at "},
	}
	for _, tt := range tests {
		t.Run(tt.choice, func(t *testing.T) {
			h := newApprovalHarness(t)
			first := h.build(h.click("U1", testTeam, tt.choice))
			replay := first.Clone(first.Context())
			replay.Body = io.NopCloser(strings.NewReader(h.click("U1", testTeam, tt.choice).body))
			code, _ := h.send(first)
			require.Equal(t, http.StatusOK, code)

			upd := receive(t, h.slack.updates, "chat.update")
			assert.Equal(t, "C1", upd.Get("channel"))
			assert.Equal(t, "1700000000.000100", upd.Get("ts"))
			texts, buttons := blockTexts(t, upd.Get("blocks"))
			assert.Empty(t, buttons, "buttons must be gone")
			joined := strings.Join(texts, "\n")
			assert.Contains(t, joined, tt.line)
			assert.Contains(t, joined, h.e.Approval.Digest, "details are kept")
			assert.Contains(t, upd.Get("text"), "call_w1")

			h.bot.Wait()
			want := []approveCall{{WorkflowID: h.e.WorkflowID, Decision: contract.ApprovalDecision{
				CallID: "call_w1", Digest: h.e.Approval.Digest, Approve: tt.approve, By: "slack:U1"}}}
			assert.Equal(t, want, h.ans.decisions())
			assert.Empty(t, h.ans.answers, "no escalation answer")

			// A byte-identical replay is dropped; Slack's redelivery is acknowledged and dropped;
			// a second approver's click (either button) is told who decided. Nothing more is sent.
			code, _ = h.send(replay)
			assert.Equal(t, http.StatusOK, code)
			redelivery := h.click("U1", testTeam, tt.choice)
			redelivery.at = time.Now().Add(time.Second)
			redelivery.header = map[string]string{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
			code, _ = h.do(redelivery)
			assert.Equal(t, http.StatusOK, code)
			code, _ = h.do(h.click("U2", testTeam, contract.ActionApprove))
			assert.Equal(t, http.StatusOK, code)
			note := receive(t, h.slack.ephemerals, "ephemeral note")
			assert.Equal(t, "U2", note.Get("user"))
			assert.Contains(t, note.Get("text"), "Already answered by <@U1>: "+tt.choice)
			h.bot.Wait()
			assert.Len(t, h.ans.decisions(), 1)
			assert.Empty(t, h.slack.updates, "the notice is updated once")
			assert.Empty(t, h.slack.ephemerals, "one note, to the second clicker only")
		})
	}
}

func TestSlackBotApprovalRefuses(t *testing.T) {
	tests := []struct {
		name     string
		build    func(h *botHarness) request
		wantCode int
		wantBody string
	}{
		{"non-approver approves", func(h *botHarness) request { return h.click("U9", testTeam, "approve") }, 403, "not an approver"},
		{"non-approver denies", func(h *botHarness) request { return h.click("U9", testTeam, "deny") }, 403, "not an approver"},
		{"wrong team", func(h *botHarness) request { return h.click("U1", "T9999", "approve") }, 403, "wrong team"},
		{"bad signature", func(h *botHarness) request {
			rq := h.click("U1", testTeam, "approve")
			rq.secret = "not-the-secret"
			return rq
		}, 401, "bad signature"},
		{"stale", func(h *botHarness) request {
			rq := h.click("U1", testTeam, "approve")
			rq.at = time.Now().Add(-6 * time.Minute)
			return rq
		}, 401, "stale"},
		{"approve button without a digest", func(h *botHarness) request {
			v, _ := json.Marshal(escalation.SlackButton{WorkflowID: h.e.WorkflowID, EscalationID: h.e.ID, CallID: "call_w1"})
			return clickWithValue(h, "approve", string(v))
		}, 400, "bad button"},
		{"approve button without a call", func(h *botHarness) request {
			v, _ := json.Marshal(escalation.SlackButton{WorkflowID: h.e.WorkflowID, EscalationID: h.e.ID, Digest: h.e.Approval.Digest})
			return clickWithValue(h, "deny", string(v))
		}, 400, "bad button"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newApprovalHarness(t)
			code, body := h.do(tt.build(h))
			assert.Equal(t, tt.wantCode, code)
			assert.Contains(t, body, tt.wantBody)
			h.bot.Wait()
			a, c, s := h.ans.calls()
			assert.Zero(t, a+c+s, "nothing may reach the answerer")
			assert.Empty(t, h.slack.updates)
		})
	}
}

// clickWithValue is a click on the approval notice whose button carries value.
func clickWithValue(h *botHarness, choice, value string) request {
	rq := h.click("U1", testTeam, choice)
	form, _ := url.ParseQuery(rq.body)
	payload := form.Get("payload")
	want := `"value":` + strconv.Quote(renderedButtonValue(h.e, choice))
	if !strings.Contains(payload, want) {
		h.t.Fatalf("payload %s lacks %s", payload, want)
	}
	payload = strings.ReplaceAll(payload, want, `"value":`+strconv.Quote(value))
	rq.body = url.Values{"payload": {payload}}.Encode()
	return rq
}

// TestSlackBotApprovalNotAccepted: a decision the session refuses (the call was decided by
// another path, the digest is stale) or that does not get through leaves the buttons, tells the
// clicker why, and frees the notice for the next click.
func TestSlackBotApprovalNotAccepted(t *testing.T) {
	tests := []struct {
		name     string
		result   contract.AnswerResult
		err      error
		wantNote string
	}{
		{name: "temporal unreachable", err: errors.New("connection refused"), wantNote: "did not reach session"},
		{name: "already decided", result: contract.AnswerResult{Accepted: false, Message: "call call_w1 was already decided"},
			wantNote: "did not accept the answer: call call_w1 was already decided"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newApprovalHarness(t)
			h.ans.mu.Lock()
			h.ans.result, h.ans.err = tt.result, tt.err
			h.ans.mu.Unlock()
			code, _ := h.do(h.click("U1", testTeam, contract.ActionApprove))
			require.Equal(t, http.StatusOK, code)
			note := receive(t, h.slack.ephemerals, "failure note")
			assert.Equal(t, "U1", note.Get("user"))
			assert.Contains(t, note.Get("text"), tt.wantNote)
			h.bot.Wait()
			assert.Empty(t, h.slack.updates, "the notice keeps its buttons")

			h.ans.mu.Lock()
			h.ans.result, h.ans.err = contract.AnswerResult{Accepted: true}, nil
			h.ans.mu.Unlock()
			code, _ = h.do(h.click("U2", testTeam, contract.ActionDeny))
			require.Equal(t, http.StatusOK, code)
			texts, _ := blockTexts(t, receive(t, h.slack.updates, "chat.update").Get("blocks"))
			assert.Contains(t, strings.Join(texts, "\n"), "*Denied* by <@U2>")
			h.bot.Wait()
			got := h.ans.decisions()
			require.Len(t, got, 2)
			assert.False(t, got[1].Decision.Approve)
			assert.Equal(t, "slack:U2", got[1].Decision.By)
		})
	}
}

// TestSlackBotApprovalDoubleClickInFlight: Deny clicked while the Approve is on its way to the
// session is refused at once; only the approval is sent.
func TestSlackBotApprovalDoubleClickInFlight(t *testing.T) {
	gate := make(chan struct{})
	h := newBotHarness(t, func(r *recordingAnswerer) session.Answerer {
		return &blockingAnswerer{recordingAnswerer: r, gate: gate}
	})
	h.e = samples.Approval("apr-b2")
	code, _ := h.do(h.click("U1", testTeam, contract.ActionApprove))
	require.Equal(t, http.StatusOK, code)
	receive(t, h.ans.called, "first decision")

	code, _ = h.do(h.click("U2", testTeam, contract.ActionDeny))
	require.Equal(t, http.StatusOK, code)
	note := receive(t, h.slack.ephemerals, "in-flight note")
	assert.Contains(t, note.Get("text"), "<@U1> is answering this escalation (approve) right now")
	close(gate)
	receive(t, h.slack.updates, "chat.update")
	h.bot.Wait()
	got := h.ans.decisions()
	require.Len(t, got, 1)
	assert.True(t, got[0].Decision.Approve)
}

// TestApprovalAnsweredBlocks: the rewritten notice keeps every detail but the buttons.
func TestApprovalAnsweredBlocks(t *testing.T) {
	e := samples.Approval("apr-b3")
	at := time.Date(2026, 12, 1, 10, 5, 0, 0, time.UTC)
	out := answeredBlocks(escalation.SlackBlocks(e), answerRecord{User: "U7", Action: contract.ActionApprove, At: at, Done: true})
	for _, b := range out {
		assert.NotEqual(t, slack.MBTAction, b.BlockType())
	}
	raw, err := json.Marshal(out)
	require.NoError(t, err)
	texts, _ := blockTexts(t, string(raw))
	assert.Equal(t, "*Approved* by <@U7> at 2026-12-01T10:05:00Z", texts[len(texts)-1])
}
