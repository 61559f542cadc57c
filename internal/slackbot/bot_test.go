package slackbot

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
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

const (
	testSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	testTeam   = "T0001"
)

// botHarness runs a Bot behind a loopback HTTP server, talking to a fake Slack.
type botHarness struct {
	t     *testing.T
	slack *fakeSlack
	ans   *recordingAnswerer
	bot   *Bot
	srv   *httptest.Server
	e     contract.Escalation
}

// newBotHarness builds the harness; wrap, if given, puts something around the recording answerer.
func newBotHarness(t *testing.T, wrap ...func(*recordingAnswerer) session.Answerer) *botHarness {
	fs := newFakeSlack(t)
	ans := newRecordingAnswerer()
	var answerer session.Answerer = ans
	for _, w := range wrap {
		answerer = w(ans)
	}
	bot, err := New(Config{
		SigningSecret: testSecret, TeamID: testTeam, Approvers: []string{"U1", " U2"},
		Answerer: answerer, API: fs.api(), CallTimeout: 5 * time.Second,
	})
	require.NoError(t, err)
	srv := httptest.NewServer(bot)
	t.Cleanup(func() { srv.Close(); bot.Wait() })
	return &botHarness{t: t, slack: fs, ans: ans, bot: bot, srv: srv, e: samples.Escalation("esc-b1")}
}

// request is one HTTP request to the bot, signed as Slack signs: v0, HMAC-SHA256 over
// "v0:timestamp:body", computed here with the test's own HMAC.
type request struct {
	path   string
	body   string
	secret string
	at     time.Time
	header map[string]string
}

func (h *botHarness) build(rq request) *http.Request {
	if rq.secret == "" {
		rq.secret = testSecret
	}
	if rq.at.IsZero() {
		rq.at = time.Now()
	}
	ts := strconv.FormatInt(rq.at.Unix(), 10)
	r, err := http.NewRequest(http.MethodPost, h.srv.URL+rq.path, strings.NewReader(rq.body))
	require.NoError(h.t, err)
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("X-Slack-Request-Timestamp", ts)
	r.Header.Set("X-Slack-Signature", "v0="+hmacHex(rq.secret, "v0:"+ts+":"+rq.body))
	for k, v := range rq.header {
		r.Header.Set(k, v)
	}
	return r
}

// send sends a request and returns the status and body.
func (h *botHarness) send(r *http.Request) (int, string) {
	start := time.Now()
	resp, err := h.srv.Client().Do(r)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	assert.Less(h.t, time.Since(start), 3*time.Second, "slack needs an answer within 3 s")
	return resp.StatusCode, string(b)
}

func (h *botHarness) do(rq request) (int, string) { return h.send(h.build(rq)) }

// click is a block_actions payload as Slack sends it for a click on one of the notice's buttons.
func (h *botHarness) click(user, team, choice string) request {
	v := renderedButtonValue(h.e, choice)
	blocks, _ := json.Marshal(slack.Blocks{BlockSet: escalation.SlackBlocks(h.e)})
	payload := `{"type":"block_actions","team":{"id":"` + team + `","domain":"acme"},` +
		`"user":{"id":"` + user + `","team_id":"` + team + `"},"api_app_id":"A1","trigger_id":"trig-` + user + `",` +
		`"channel":{"id":"C1","name":"keel"},"container":{"type":"message","message_ts":"1700000000.000100","channel_id":"C1"},` +
		`"message":{"type":"message","ts":"1700000000.000100","blocks":` + string(blocks) + `},` +
		`"actions":[{"type":"button","block_id":"keel_answer","action_id":"keel_` + choice + `","value":` + strconv.Quote(v) + `,"action_ts":"1700000001.1"}]}`
	return request{path: InteractionsPath, body: url.Values{"payload": {payload}}.Encode()}
}

// renderedButtonValue is the value of the notice's button for choice, as the notice renders it,
// so a click carries exactly what Slack would send back; a choice the notice has no button for
// gets the bare session and escalation IDs.
func renderedButtonValue(e contract.Escalation, choice string) string {
	for _, b := range escalation.SlackBlocks(e) {
		if ab, ok := b.(*slack.ActionBlock); ok {
			for _, el := range ab.Elements.ElementSet {
				if btn, ok := el.(*slack.ButtonBlockElement); ok && btn.ActionID == escalation.SlackActionPrefix+choice {
					return btn.Value
				}
			}
		}
	}
	v, _ := json.Marshal(escalation.SlackButton{WorkflowID: e.WorkflowID, EscalationID: e.ID})
	return string(v)
}

// submit is a view_submission payload for the edit modal.
func (h *botHarness) submit(user, privateMetadata, text string) request {
	state, _ := json.Marshal(map[string]any{"values": map[string]any{slackEditBlockID: map[string]any{slackEditActionID: map[string]any{"type": "plain_text_input", "value": text}}}})
	payload := `{"type":"view_submission","team":{"id":"` + testTeam + `"},"user":{"id":"` + user + `","team_id":"` + testTeam + `"},` +
		`"view":{"id":"V1","type":"modal","callback_id":"keel_edit","private_metadata":` + strconv.Quote(privateMetadata) + `,"state":` + string(state) + `}}`
	return request{path: InteractionsPath, body: url.Values{"payload": {payload}}.Encode()}
}

// command is a slash command request.
func (h *botHarness) command(user, team, text string) request {
	form := url.Values{"command": {"/keel"}, "text": {text}, "team_id": {team}, "user_id": {user},
		"channel_id": {"C1"}, "response_url": {h.slack.responseURL()}, "trigger_id": {"trig"}}
	return request{path: CommandsPath, body: form.Encode()}
}

func TestSlackBotClickAnswersOnce(t *testing.T) {
	for _, choice := range []string{contract.ActionRetry, contract.ActionAbort} {
		t.Run(choice, func(t *testing.T) {
			h := newBotHarness(t)
			code, _ := h.do(h.click("U1", testTeam, choice))
			require.Equal(t, http.StatusOK, code)

			upd := receive(t, h.slack.updates, "chat.update")
			assert.Equal(t, "C1", upd.Get("channel"))
			assert.Equal(t, "1700000000.000100", upd.Get("ts"))
			var blocks slack.Blocks
			require.NoError(t, json.Unmarshal([]byte(upd.Get("blocks")), &blocks))
			for _, b := range blocks.BlockSet {
				assert.NotEqual(t, slack.MBTAction, b.BlockType(), "buttons must be gone")
			}
			assert.Contains(t, upd.Get("blocks"), "Answered by \\u003c@U1\\u003e: *"+choice+"*")
			assert.Contains(t, upd.Get("blocks"), "connection reset by peer", "details are kept")

			h.bot.Wait()
			h.ans.mu.Lock()
			require.Len(t, h.ans.answers, 1)
			got := h.ans.answers[0]
			h.ans.mu.Unlock()
			assert.Equal(t, h.e.WorkflowID, got.WorkflowID)
			assert.Equal(t, contract.Answer{EscalationID: "esc-b1", Action: choice, By: "slack:U1", Via: "slack"}, got.Answer)

			// A later click by another approver is told who answered; nothing more is sent.
			code, _ = h.do(h.click("U2", testTeam, contract.ActionRetry))
			require.Equal(t, http.StatusOK, code)
			note := receive(t, h.slack.ephemerals, "ephemeral note")
			assert.Equal(t, "U2", note.Get("user"))
			assert.Contains(t, note.Get("text"), "Already answered by <@U1>: "+choice)
			h.bot.Wait()
			n, _, _ := h.ans.calls()
			assert.Equal(t, 1, n)
		})
	}
}

func TestSlackBotRefuses(t *testing.T) {
	tests := []struct {
		name     string
		build    func(h *botHarness) request
		wantCode int
		wantBody string
	}{
		{"bad signature", func(h *botHarness) request {
			rq := h.click("U1", testTeam, "retry")
			rq.secret = "not-the-secret"
			return rq
		}, 401, "bad signature"},
		{"timestamp 6 minutes old", func(h *botHarness) request {
			rq := h.click("U1", testTeam, "retry")
			rq.at = time.Now().Add(-6 * time.Minute)
			return rq
		}, 401, "stale"},
		{"timestamp 6 minutes ahead", func(h *botHarness) request {
			rq := h.click("U1", testTeam, "retry")
			rq.at = time.Now().Add(6 * time.Minute)
			return rq
		}, 401, "stale"},
		{"user not on the allow list", func(h *botHarness) request { return h.click("U9", testTeam, "retry") }, 403, "not an approver"},
		{"wrong team", func(h *botHarness) request { return h.click("U1", "T9999", "retry") }, 403, "wrong team"},
		{"edit by a stranger", func(h *botHarness) request { return h.click("U9", testTeam, "edit") }, 403, "not an approver"},
		{"command with bad signature", func(h *botHarness) request {
			rq := h.command("U1", testTeam, "stop wf-1")
			rq.secret = "nope"
			return rq
		}, 401, "bad signature"},
		{"command from a stranger", func(h *botHarness) request { return h.command("U9", testTeam, "stop wf-1") }, 403, "not an approver"},
		{"command from another team", func(h *botHarness) request { return h.command("U1", "T9999", "status wf-1") }, 403, "wrong team"},
		{"stale command", func(h *botHarness) request {
			rq := h.command("U1", testTeam, "stop wf-1")
			rq.at = time.Now().Add(-6 * time.Minute)
			return rq
		}, 401, "stale"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newBotHarness(t)
			code, body := h.do(tt.build(h))
			assert.Equal(t, tt.wantCode, code)
			assert.Contains(t, body, tt.wantBody)
			h.bot.Wait()
			a, c, s := h.ans.calls()
			assert.Zero(t, a+c+s, "nothing may reach the answerer")
			assert.Empty(t, h.slack.views, "no modal")
			assert.Empty(t, h.slack.updates)
		})
	}
}

func TestSlackBotTamperedBody(t *testing.T) {
	h := newBotHarness(t)
	r := h.build(h.click("U1", testTeam, "retry"))
	// Same signature headers, different body: a click forged from a captured one.
	forged := h.click("U2", testTeam, "abort")
	r.Body = io.NopCloser(strings.NewReader(forged.body))
	r.ContentLength = int64(len(forged.body))
	code, _ := h.send(r)
	assert.Equal(t, http.StatusUnauthorized, code)
	h.bot.Wait()
	n, _, _ := h.ans.calls()
	assert.Zero(t, n)
}

func TestSlackBotReplays(t *testing.T) {
	h := newBotHarness(t)
	first := h.build(h.click("U1", testTeam, "retry"))
	again := first.Clone(first.Context())
	body := h.click("U1", testTeam, "retry").body
	again.Body = io.NopCloser(strings.NewReader(body))

	code, _ := h.send(first)
	require.Equal(t, http.StatusOK, code)
	receive(t, h.slack.updates, "chat.update")

	code, _ = h.send(again) // byte-identical replay
	assert.Equal(t, http.StatusOK, code)

	// Slack's redelivery: re-signed with a new timestamp and X-Slack-Retry-Num; acknowledged,
	// not answered again, and no note to the person.
	redelivery := h.click("U1", testTeam, "retry")
	redelivery.at = time.Now().Add(time.Second)
	redelivery.header = map[string]string{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
	code, _ = h.do(redelivery)
	assert.Equal(t, http.StatusOK, code)

	h.bot.Wait()
	n, _, _ := h.ans.calls()
	assert.Equal(t, 1, n, "exactly one answer")
	assert.Empty(t, h.slack.ephemerals)
	assert.Empty(t, h.slack.updates, "the notice is updated once")
}

func TestSlackBotDoubleClickWhileInFlight(t *testing.T) {
	gate := make(chan struct{})
	h := newBotHarness(t, func(r *recordingAnswerer) session.Answerer {
		return &blockingAnswerer{recordingAnswerer: r, gate: gate}
	})

	code, _ := h.do(h.click("U1", testTeam, "retry"))
	require.Equal(t, http.StatusOK, code)
	receive(t, h.ans.called, "first answer")

	code, _ = h.do(h.click("U2", testTeam, "abort"))
	require.Equal(t, http.StatusOK, code)
	note := receive(t, h.slack.ephemerals, "in-flight note")
	assert.Contains(t, note.Get("text"), "<@U1> is answering this escalation (retry) right now")
	close(gate)
	receive(t, h.slack.updates, "chat.update")
	h.bot.Wait()
	n, _, _ := h.ans.calls()
	assert.Equal(t, 1, n)
}

// blockingAnswerer holds answers until the gate opens, so a second click lands mid-flight.
type blockingAnswerer struct {
	*recordingAnswerer
	gate chan struct{}
}

func (b *blockingAnswerer) Approve(ctx context.Context, wf string, d contract.ApprovalDecision) (contract.AnswerResult, error) {
	res, err := b.recordingAnswerer.Approve(ctx, wf, d)
	<-b.gate
	return res, err
}

func (b *blockingAnswerer) Answer(ctx context.Context, wf string, a contract.Answer) (contract.AnswerResult, error) {
	res, err := b.recordingAnswerer.Answer(ctx, wf, a)
	<-b.gate
	return res, err
}

func TestSlackBotAnswerNotDelivered(t *testing.T) {
	tests := []struct {
		name     string
		result   contract.AnswerResult
		err      error
		wantNote string
	}{
		{name: "temporal unreachable", err: errors.New("connection refused"), wantNote: "did not reach session"},
		{name: "session refuses", result: contract.AnswerResult{Accepted: false, Message: "no escalation pending"}, wantNote: "did not accept the answer: no escalation pending"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newBotHarness(t)
			h.ans.mu.Lock()
			h.ans.result, h.ans.err = tt.result, tt.err
			h.ans.mu.Unlock()
			code, _ := h.do(h.click("U1", testTeam, "retry"))
			require.Equal(t, http.StatusOK, code)
			note := receive(t, h.slack.ephemerals, "failure note")
			assert.Equal(t, "U1", note.Get("user"))
			assert.Contains(t, note.Get("text"), tt.wantNote)
			h.bot.Wait()
			assert.Empty(t, h.slack.updates, "the notice keeps its buttons")

			// The escalation was released: the next click is delivered.
			h.ans.mu.Lock()
			h.ans.result, h.ans.err = contract.AnswerResult{Accepted: true}, nil
			h.ans.mu.Unlock()
			code, _ = h.do(h.click("U2", testTeam, "abort"))
			require.Equal(t, http.StatusOK, code)
			receive(t, h.slack.updates, "chat.update")
			h.bot.Wait()
			n, _, _ := h.ans.calls()
			assert.Equal(t, 2, n)
		})
	}
}

// TestSlackBotSameIDOtherSession: two sessions whose escalation IDs are equal are answered
// separately; an answer to one is no answer to the other.
func TestSlackBotSameIDOtherSession(t *testing.T) {
	h := newBotHarness(t)
	code, _ := h.do(h.click("U1", testTeam, contract.ActionAbort))
	require.Equal(t, http.StatusOK, code)
	receive(t, h.slack.updates, "chat.update of the first session")

	h.e.WorkflowID = "keel-other-session"
	code, _ = h.do(h.click("U2", testTeam, contract.ActionRetry))
	require.Equal(t, http.StatusOK, code)
	receive(t, h.slack.updates, "chat.update of the second session")
	h.bot.Wait()
	h.ans.mu.Lock()
	defer h.ans.mu.Unlock()
	require.Len(t, h.ans.answers, 2)
	assert.Equal(t, "keel-other-session", h.ans.answers[1].WorkflowID)
	assert.Equal(t, contract.ActionRetry, h.ans.answers[1].Answer.Action)
	assert.Empty(t, h.slack.ephemerals, "nobody is told the escalation was already answered")
}
