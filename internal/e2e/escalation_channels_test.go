package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack/slacktest"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegithub"
	"github.com/keelrun/keel/internal/session"
	"github.com/keelrun/keel/internal/slackbot"
)

// The Slack workspace of these tests: one channel, one team, two approvers.
const (
	e2eSlackSecret  = "e2e-signing-secret-5f1c"
	e2eSlackToken   = "xoxb-e2e"
	e2eSlackChannel = "C0KEEL"
	e2eSlackTeam    = "T0KEEL"
)

// TestSlackEscalationEndToEnd runs a real session that escalates, lets its worker post the notice
// to a local Slack Web API, and answers it through the Slack bot with requests signed exactly as
// Slack signs them. Forged, stale and unauthorised requests change nothing; the first valid click
// is the only answer that reaches the session.
func TestSlackEscalationEndToEnd(t *testing.T) {
	t.Run("abort", func(t *testing.T) {
		t.Parallel()
		s := newSlackSession(t)
		st := s.status(t)
		if st.Status != contract.StatusWaiting || st.Escalation == nil || st.Escalation.ID != s.esc.ID || st.Escalation.Answer != nil {
			t.Fatalf("before any click: status %q, escalation %+v; want waiting on %s, unanswered", st.Status, st.Escalation, s.esc.ID)
		}

		refused := []struct {
			name string
			rq   slackRequest
			code int
			body string
		}{
			{"bad signature", s.click("U1", e2eSlackTeam, "abort").signedWith("not-the-secret"), http.StatusUnauthorized, "bad signature"},
			{"timestamp 6 minutes old", s.click("U1", e2eSlackTeam, "abort").sentAt(time.Now().Add(-6 * time.Minute)), http.StatusUnauthorized, "stale"},
			{"user not on the allow list", s.click("U9", e2eSlackTeam, "abort"), http.StatusForbidden, "not an approver"},
			{"wrong team", s.click("U1", "T0OTHER", "abort"), http.StatusForbidden, "wrong team"},
		}
		for _, r := range refused {
			code, body := s.bot.send(t, r.rq)
			if code != r.code || !strings.Contains(body, r.body) {
				t.Errorf("%s: got %d %q, want %d %q", r.name, code, body, r.code, r.body)
			}
			if n := s.bot.answers(); n != 0 {
				t.Fatalf("%s: %d answers reached the session", r.name, n)
			}
			if st := s.status(t); st.Status != contract.StatusWaiting || st.Escalation == nil || st.Escalation.Answer != nil {
				t.Fatalf("%s: the session no longer waits: %q %+v", r.name, st.Status, st.Escalation)
			}
		}

		// Slack gives up on a reply after 3 s, so the bot acknowledges before it answers: with the
		// answer held until the reply is in, the click is still acknowledged.
		first := s.click("U1", e2eSlackTeam, "abort")
		release := s.bot.ans.holdAnswers()
		code, body := s.bot.send(t, first)
		release()
		if code != http.StatusOK {
			t.Fatalf("valid abort click: %d %q", code, body)
		}
		r := s.live.finish()
		if r.Code != 1 || r.Summary.Status != contract.StatusAborted || !strings.Contains(r.Summary.Reason, "slack:U1") {
			t.Fatalf("exit %d, status %q, reason %q; want 1, aborted by slack:U1", r.Code, r.Summary.Status, r.Summary.Reason)
		}
		upd := s.slack.waitUpdate(t)
		if upd.Get("channel") != e2eSlackChannel || upd.Get("ts") != s.notice.ts {
			t.Errorf("chat.update went to %s/%s, want %s/%s", upd.Get("channel"), upd.Get("ts"), e2eSlackChannel, s.notice.ts)
		}
		texts, buttons := walkBlocks(t, upd.Get("blocks"))
		if !anyContains(texts, "Answered by <@U1>: *abort*") || len(buttons) != 0 {
			t.Errorf("updated notice: texts %q, buttons %v; want the answer by U1 and no buttons", texts, buttons)
		}

		// The same click again (a replay of the captured request) and a click by the other
		// approver: both acknowledged, neither reaches the session.
		if code, _ := s.bot.send(t, first); code != http.StatusOK {
			t.Errorf("replay: %d, want 200 (acknowledged and dropped)", code)
		}
		if code, _ := s.bot.send(t, s.click("U2", e2eSlackTeam, "retry")); code != http.StatusOK {
			t.Errorf("second click: %d, want 200", code)
		}
		note := s.slack.waitEphemeralTo(t, "U2")
		if !strings.Contains(note.Get("text"), "Already answered by <@U1>: abort") {
			t.Errorf("the second clicker was told %q (user %s)", note.Get("text"), note.Get("user"))
		}
		if n := s.bot.answers(); n != 1 {
			t.Errorf("%d answers left the bot, want 1", n)
		}
		if n := s.slack.count("updates"); n != 1 {
			t.Errorf("the notice was updated %d times, want 1", n)
		}
		assertOnlyAnswer(t, s.wid, contract.Answer{EscalationID: s.esc.ID, Action: contract.ActionAbort, By: "slack:U1", Via: "slack"})
	})

	t.Run("edit", func(t *testing.T) {
		t.Parallel()
		s := newSlackSession(t)
		if code, body := s.bot.send(t, s.click("U2", e2eSlackTeam, "edit")); code != http.StatusOK {
			t.Fatalf("edit click: %d %q", code, body)
		}
		view := s.slack.waitView(t)
		if view.TriggerID != "trig-U2" || view.View.CallbackID != "keel_edit" || view.View.PrivateMetadata == "" {
			t.Fatalf("views.open %+v: want the edit modal for trigger trig-U2", view)
		}
		if n := s.bot.answers(); n != 0 {
			t.Fatalf("opening the modal sent %d answers", n)
		}
		text := `use {"path":"calc.go"} and send complete JSON arguments`
		code, body := s.bot.send(t, s.submit("U2", view.View.PrivateMetadata, text))
		if code != http.StatusOK || strings.TrimSpace(body) != "" {
			t.Fatalf("view_submission: %d %q, want an empty 200 that closes the modal", code, body)
		}
		r := s.live.finish()
		if r.Code != 0 || r.Summary.Status != contract.StatusCompleted {
			t.Fatalf("exit %d, status %q (%s); want 0, completed", r.Code, r.Summary.Status, r.Summary.Reason)
		}
		texts, _ := walkBlocks(t, s.slack.waitUpdate(t).Get("blocks"))
		if !anyContains(texts, "Answered by <@U2>: *edit*") || !anyContains(texts, "calc.go") {
			t.Errorf("updated notice %q: want the edit by U2 with its text", texts)
		}
		assertOnlyAnswer(t, s.wid, contract.Answer{EscalationID: s.esc.ID, Action: contract.ActionEdit, Text: text, By: "slack:U2", Via: "slack"})
	})
}

// TestGitHubWebhookEscalationEndToEnd runs a real session that escalates with nobody answering:
// the pull request gets one comment (even though the label call fails once and the notice
// activity is retried), the label and the author's mention; the webhook gets exactly one
// correctly signed POST; the deadline aborts the session.
func TestGitHubWebhookEscalationEndToEnd(t *testing.T) {
	gh := startFakeGitHub(t, "ghp-e2e", fakegithub.PR{Number: 7, Author: "octo-author"})
	labelsPath := "/repos/" + e2eRepo + "/issues/7/labels"
	gh.FailNext(http.MethodPost, labelsPath, http.StatusBadGateway, 1)
	hook := newWebhookReceiver(t, "whsec-e2e")
	r := runStarter(t, []string{
		"KEEL_ESCALATION_CHANNELS=github,webhook",
		// The chain notifies github at once and the webhook at deadline/2.
		"KEEL_ESCALATION_DEADLINE=6s",
		"KEEL_ESCALATION_GITHUB_TOKEN=ghp-e2e",
		"KEEL_ESCALATION_GITHUB_BASE_URL=" + gh.URL(),
		// This session names no pull request: the worker's default is the one commented on.
		"KEEL_ESCALATION_GITHUB_REPO=" + e2eRepo,
		"KEEL_ESCALATION_GITHUB_PR=7",
		"KEEL_ESCALATION_WEBHOOK_URL=" + hook.srv.URL + "/keel",
		"KEEL_ESCALATION_WEBHOOK_SECRET=whsec-e2e",
	}, "demo", "--inject", "bad_args", "--output", "jsonl")
	if r.Code != 1 || r.Summary.Status != contract.StatusAborted || !strings.Contains(r.Summary.Reason, "deadline") {
		t.Fatalf("exit %d, status %q, reason %q; want 1, aborted by the deadline\nstderr:\n%s", r.Code, r.Summary.Status, r.Summary.Reason, r.Stderr)
	}
	var escs []*contract.Escalation
	for _, e := range r.Events {
		if e.Event == contract.EventEscalation && e.Escalation != nil {
			escs = append(escs, e.Escalation)
		}
	}
	if len(escs) != 1 {
		t.Fatalf("%d escalation events, want 1", len(escs))
	}
	esc := escs[0]

	comments := gh.Comments(e2eRepo, 7)
	if len(comments) != 1 {
		t.Fatalf("%d comments on the pull request, want exactly 1: %+v", len(comments), comments)
	}
	for _, want := range []string{escalation.GitHubMarker(esc.ID), "@octo-author", esc.ID, "starter answer"} {
		if !strings.Contains(comments[0].Body, want) {
			t.Errorf("the comment lacks %q:\n%s", want, comments[0].Body)
		}
	}
	var labelCalls []int
	for _, req := range gh.Requests() {
		if req.Method == http.MethodPost && req.Path == labelsPath {
			labelCalls = append(labelCalls, req.Status)
		}
	}
	if want := []int{http.StatusBadGateway, http.StatusOK}; !slices.Equal(labelCalls, want) || !slices.Equal(gh.Labels(e2eRepo, 7), []string{escalation.TriageLabel}) {
		t.Errorf("label calls answered %v, labels %q; want %v (the first failed on purpose) and %s", labelCalls, gh.Labels(e2eRepo, 7), want, escalation.TriageLabel)
	}
	if n := gh.Unauthorized(); n != 0 {
		t.Errorf("%d GitHub requests without the token", n)
	}

	hook.mu.Lock()
	defer hook.mu.Unlock()
	if hook.refused != 0 || len(hook.got) != 1 {
		t.Fatalf("webhook: %d verified POSTs, %d refused; want exactly 1 and 0", len(hook.got), hook.refused)
	}
	got := hook.got[0]
	if got.key != esc.ID || got.esc.ID != esc.ID || got.esc.WorkflowID != r.Summary.WorkflowID || got.esc.Reason != contract.ReasonRepairCap {
		t.Errorf("webhook delivery key %q, escalation %+v; want %s of %s (%s)", got.key, got.esc, esc.ID, r.Summary.WorkflowID, contract.ReasonRepairCap)
	}
}

// slackSession is a running session that escalated and posted its notice to the local Slack, plus
// a bot in this process that answers it.
type slackSession struct {
	live   *liveRun
	wid    string
	esc    *contract.Escalation
	slack  *localSlack
	bot    *botUnderTest
	notice postedNotice
}

// postedNotice is what the worker posted: where, and the value its buttons carry.
type postedNotice struct {
	ts, blocks string
	buttons    map[string]string
}

func newSlackSession(t *testing.T) *slackSession {
	t.Helper()
	s := &slackSession{slack: newLocalSlack(t)}
	s.live = startLive(t, []string{
		"KEEL_ESCALATION_CHANNELS=slack",
		"KEEL_ESCALATION_SLACK_BOT_TOKEN=" + e2eSlackToken,
		"KEEL_ESCALATION_SLACK_CHANNEL=" + e2eSlackChannel,
		"KEEL_ESCALATION_SLACK_API_URL=" + s.slack.srv.GetAPIURL(),
	}, "demo", "--inject", "bad_args", "--output", "jsonl")
	s.wid = s.live.workflowID()
	s.esc = s.live.waitEvent(60*time.Second, "escalation", func(e contract.Event) bool {
		return e.Event == contract.EventEscalation && e.Escalation != nil
	}).Escalation
	if s.esc.Reason != contract.ReasonRepairCap {
		t.Fatalf("escalation reason %q, want %s", s.esc.Reason, contract.ReasonRepairCap)
	}
	post := s.slack.waitPost(t)
	s.notice = s.checkNotice(t, post)
	s.bot = startBot(t, s.slack.srv.GetAPIURL())
	return s
}

// checkNotice asserts the notice is Block Kit with the three buttons, the Web UI link and the
// escalation's metadata, and returns where it is.
func (s *slackSession) checkNotice(t *testing.T, post url.Values) postedNotice {
	t.Helper()
	if post.Get("channel") != e2eSlackChannel {
		t.Errorf("notice posted to %q, want %s", post.Get("channel"), e2eSlackChannel)
	}
	texts, buttons := walkBlocks(t, post.Get("blocks"))
	for _, id := range []string{"keel_retry", "keel_edit", "keel_abort"} {
		var v struct {
			WorkflowID   string `json:"workflow_id"`
			EscalationID string `json:"escalation_id"`
		}
		if err := json.Unmarshal([]byte(buttons[id]), &v); err != nil || v.WorkflowID != s.wid || v.EscalationID != s.esc.ID {
			t.Fatalf("button %s carries %q, want %s/%s (buttons %v)", id, buttons[id], s.wid, s.esc.ID, buttons)
		}
	}
	link := "/namespaces/default/workflows/" + s.wid + "|Open in the Web UI>"
	if !anyContains(texts, link) || !anyContains(texts, escalation.Reason(contract.ReasonRepairCap)) {
		t.Errorf("notice texts %q: want the reason and the Web UI link %q", texts, link)
	}
	if !strings.Contains(post.Get("metadata"), s.esc.ID) {
		t.Errorf("notice metadata %q lacks the escalation ID", post.Get("metadata"))
	}
	return postedNotice{ts: s.slack.tsOf(0), blocks: post.Get("blocks"), buttons: buttons}
}

// status queries the waiting session.
func (s *slackSession) status(t *testing.T) contract.SessionStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := session.TemporalAnswerer{Client: env.Client()}.Status(ctx, s.wid)
	if err != nil {
		t.Fatalf("status query: %v", err)
	}
	return st
}

// slackRequest is one request to the bot, to be signed as Slack signs (v0).
type slackRequest struct {
	path, body, secret string
	at                 time.Time
}

func (r slackRequest) signedWith(secret string) slackRequest { r.secret = secret; return r }
func (r slackRequest) sentAt(at time.Time) slackRequest      { r.at = at; return r }

// click is the block_actions payload Slack sends when user clicks a button of the posted notice.
func (s *slackSession) click(user, team, choice string) slackRequest {
	payload := map[string]any{
		"type":       "block_actions",
		"team":       map[string]any{"id": team, "domain": "keel-e2e"},
		"user":       map[string]any{"id": user, "team_id": team},
		"api_app_id": "A0KEEL",
		"trigger_id": "trig-" + user,
		"channel":    map[string]any{"id": e2eSlackChannel, "name": "keel"},
		"container":  map[string]any{"type": "message", "message_ts": s.notice.ts, "channel_id": e2eSlackChannel},
		"message":    map[string]any{"type": "message", "ts": s.notice.ts, "blocks": json.RawMessage(s.notice.blocks)},
		"actions": []any{map[string]any{"type": "button", "block_id": "keel_answer", "action_id": "keel_" + choice,
			"value": s.notice.buttons["keel_"+choice], "action_ts": strconv.FormatInt(time.Now().Unix(), 10) + ".1"}},
	}
	return interactionRequest(payload)
}

// submit is the view_submission payload of the edit modal.
func (s *slackSession) submit(user, privateMetadata, text string) slackRequest {
	payload := map[string]any{
		"type": "view_submission",
		"team": map[string]any{"id": e2eSlackTeam},
		"user": map[string]any{"id": user, "team_id": e2eSlackTeam},
		"view": map[string]any{"id": "V1", "type": "modal", "callback_id": "keel_edit", "private_metadata": privateMetadata,
			"state": map[string]any{"values": map[string]any{"keel_edit_text": map[string]any{"text": map[string]any{"type": "plain_text_input", "value": text}}}}},
	}
	return interactionRequest(payload)
}

func interactionRequest(payload map[string]any) slackRequest {
	b, _ := json.Marshal(payload)
	return slackRequest{path: slackbot.InteractionsPath, body: url.Values{"payload": {string(b)}}.Encode()}
}

// botUnderTest is slackbot.Serve on a loopback listener, answering through Temporal.
type botUnderTest struct {
	url string
	ans *countingAnswerer
}

func startBot(t *testing.T, slackAPI string) *botUnderTest {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ans := &countingAnswerer{Answerer: session.TemporalAnswerer{Client: env.Client()}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg := slackbot.RunConfig{
		SigningSecret: e2eSlackSecret, BotToken: e2eSlackToken, TeamID: e2eSlackTeam, Approvers: []string{"U1", "U2"},
		SlackAPIURL: slackAPI, CallTimeout: 20 * time.Second, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)),
	}
	go func() { done <- slackbot.Serve(ctx, cfg, ans, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("slack bot: %v", err)
		}
	})
	return &botUnderTest{url: "http://" + ln.Addr().String(), ans: ans}
}

// send signs rq (HMAC-SHA256 over "v0:timestamp:body", computed here) and posts it.
func (b *botUnderTest) send(t *testing.T, rq slackRequest) (int, string) {
	t.Helper()
	if rq.secret == "" {
		rq.secret = e2eSlackSecret
	}
	if rq.at.IsZero() {
		rq.at = time.Now()
	}
	ts := strconv.FormatInt(rq.at.Unix(), 10)
	req, err := http.NewRequest(http.MethodPost, b.url+rq.path, strings.NewReader(rq.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hmacSHA256Hex(rq.secret, "v0:"+ts+":"+rq.body))
	// That the bot acknowledges before the slow work is checked by holding the work (holdAnswers),
	// not by the clock: on a busy machine a round trip's time measures the machine.
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("posting to the slack bot (an acknowledgement that waits for the answer never comes while it is held): %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (b *botUnderTest) answers() int { return b.ans.count() }

// countingAnswerer passes everything to the real answerer and counts the answers it carried.
type countingAnswerer struct {
	session.Answerer
	mu   sync.Mutex
	n    int
	hold chan struct{}
}

func (c *countingAnswerer) Answer(ctx context.Context, wf string, a contract.Answer) (contract.AnswerResult, error) {
	c.mu.Lock()
	c.n++
	hold := c.hold
	c.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return contract.AnswerResult{}, ctx.Err()
		}
	}
	return c.Answerer.Answer(ctx, wf, a)
}

// holdAnswers keeps the answers that arrive from here on from going further until the returned
// function is called.
func (c *countingAnswerer) holdAnswers() (release func()) {
	hold := make(chan struct{})
	c.mu.Lock()
	c.hold = hold
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		c.hold = nil
		c.mu.Unlock()
		close(hold)
	}
}

func (c *countingAnswerer) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// assertOnlyAnswer reads the session's history: exactly one answer update was accepted, it is
// want, and no answer arrived by signal.
func assertOnlyAnswer(t *testing.T, wid string, want contract.Answer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	it := env.Client().GetWorkflowHistory(ctx, wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var accepted []contract.Answer
	signals := 0
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("reading the history of %s: %v", wid, err)
		}
		if a := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes(); a != nil {
			var ans contract.Answer
			if err := converter.GetDefaultDataConverter().FromPayloads(a.GetAcceptedRequest().GetInput().GetArgs(), &ans); err != nil {
				t.Fatalf("decoding an accepted update: %v", err)
			}
			accepted = append(accepted, ans)
		}
		if s := ev.GetWorkflowExecutionSignaledEventAttributes(); s != nil && s.GetSignalName() == contract.SignalAnswerEscalation {
			signals++
		}
	}
	if len(accepted) != 1 || accepted[0] != want || signals != 0 {
		t.Fatalf("accepted answers %+v and %d answer signals; want exactly %+v", accepted, signals, want)
	}
}

// localSlack is slacktest's Web API plus the methods Keel uses that it lacks, recording what the
// worker and the bot send.
type localSlack struct {
	srv *slacktest.Server

	mu         sync.Mutex
	posts      []url.Values
	history    []map[string]any
	updates    []url.Values
	ephemerals []url.Values
	views      []openedView
}

// openedView is a views.open request.
type openedView struct {
	TriggerID string `json:"trigger_id"`
	View      struct {
		CallbackID      string `json:"callback_id"`
		PrivateMetadata string `json:"private_metadata"`
	} `json:"view"`
}

func newLocalSlack(t *testing.T) *localSlack {
	t.Helper()
	s := &localSlack{}
	s.srv = slacktest.NewTestServer(func(c slacktest.Customize) {
		c.Handle("/chat.postMessage", s.postMessage)
		c.Handle("/conversations.history", s.conversationsHistory)
		c.Handle("/chat.update", s.record(&s.updates, `{"ok":true,"channel":"`+e2eSlackChannel+`","ts":"1","text":""}`))
		c.Handle("/chat.postEphemeral", s.record(&s.ephemerals, `{"ok":true,"message_ts":"2"}`))
		c.Handle("/views.open", s.viewsOpen)
	})
	s.srv.Start()
	t.Cleanup(s.srv.Stop)
	return s
}

func (s *localSlack) authorised(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("Authorization") != "Bearer "+e2eSlackToken && r.FormValue("token") != e2eSlackToken {
		_, _ = w.Write([]byte(`{"ok":false,"error":"invalid_auth"}`))
		return false
	}
	return true
}

func (s *localSlack) postMessage(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || !s.authorised(w, r) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.posts = append(s.posts, r.PostForm)
	ts := s.tsLocked(len(s.posts) - 1)
	msg := map[string]any{"type": "message", "ts": ts, "text": r.PostForm.Get("text")}
	var meta map[string]any
	if json.Unmarshal([]byte(r.PostForm.Get("metadata")), &meta) == nil {
		msg["metadata"] = meta
	}
	s.history = append([]map[string]any{msg}, s.history...)
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": r.PostForm.Get("channel"), "ts": ts})
}

func (s *localSlack) conversationsHistory(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || !s.authorised(w, r) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "messages": s.history})
}

func (s *localSlack) record(into *[]url.Values, reply string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || !s.authorised(w, r) {
			return
		}
		s.mu.Lock()
		*into = append(*into, r.PostForm)
		s.mu.Unlock()
		_, _ = w.Write([]byte(reply))
	}
}

func (s *localSlack) viewsOpen(w http.ResponseWriter, r *http.Request) {
	var v openedView
	if r.Header.Get("Authorization") != "Bearer "+e2eSlackToken || json.NewDecoder(r.Body).Decode(&v) != nil {
		_, _ = w.Write([]byte(`{"ok":false,"error":"invalid_arguments"}`))
		return
	}
	s.mu.Lock()
	s.views = append(s.views, v)
	s.mu.Unlock()
	_, _ = w.Write([]byte(`{"ok":true,"view":{"id":"V1"}}`))
}

func (s *localSlack) tsLocked(i int) string { return fmt.Sprintf("1700000000.%06d", i+1) }

func (s *localSlack) tsOf(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tsLocked(i)
}

func (s *localSlack) count(what string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch what {
	case "posts":
		return len(s.posts)
	case "updates":
		return len(s.updates)
	case "ephemerals":
		return len(s.ephemerals)
	default:
		return len(s.views)
	}
}

// waitFirst waits until list holds an entry and returns the first one.
func waitFirst[T any](t *testing.T, s *localSlack, what string, list *[]T) T {
	t.Helper()
	var got T
	ok := waitFor(30*time.Second, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(*list) == 0 {
			return false
		}
		got = (*list)[0]
		return true
	})
	if !ok {
		t.Fatalf("no %s reached the local Slack within 30s", what)
	}
	return got
}

func (s *localSlack) waitPost(t *testing.T) url.Values {
	return waitFirst(t, s, "chat.postMessage", &s.posts)
}
func (s *localSlack) waitUpdate(t *testing.T) url.Values {
	return waitFirst(t, s, "chat.update", &s.updates)
}
func (s *localSlack) waitEphemeral(t *testing.T) url.Values {
	return waitFirst(t, s, "chat.postEphemeral", &s.ephemerals)
}

// waitEphemeralTo waits for an ephemeral message to one user. A retried answer of the first
// clicker may also tell that clicker it was already answered; that is not what the caller awaits.
func (s *localSlack) waitEphemeralTo(t *testing.T, user string) url.Values {
	t.Helper()
	var got url.Values
	ok := waitFor(30*time.Second, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, e := range s.ephemerals {
			if e.Get("user") == user {
				got = e
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("no chat.postEphemeral to %s reached the local Slack within 30s", user)
	}
	return got
}
func (s *localSlack) waitView(t *testing.T) openedView {
	return waitFirst(t, s, "views.open", &s.views)
}

// walkBlocks decodes Block Kit JSON and returns every text in it and the buttons' values by
// action ID.
func walkBlocks(t *testing.T, blocks string) ([]string, map[string]string) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(blocks), &v); err != nil {
		t.Fatalf("blocks are not JSON: %v\n%s", err, blocks)
	}
	var texts []string
	buttons := map[string]string{}
	var walk func(any)
	walk = func(n any) {
		switch n := n.(type) {
		case map[string]any:
			if id, ok := n["action_id"].(string); ok && n["type"] == "button" {
				buttons[id], _ = n["value"].(string)
			}
			if s, ok := n["text"].(string); ok {
				texts = append(texts, s)
			}
			for _, c := range n {
				walk(c)
			}
		case []any:
			for _, c := range n {
				walk(c)
			}
		}
	}
	walk(v)
	return texts, buttons
}

func anyContains(texts []string, sub string) bool {
	for _, s := range texts {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// webhookReceiver verifies each POST with escalation.VerifyWebhook, as a real receiver would.
type webhookReceiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	got     []webhookDelivery
	refused int
}

type webhookDelivery struct {
	key string
	esc contract.Escalation
}

func newWebhookReceiver(t *testing.T, secret string) *webhookReceiver {
	t.Helper()
	h := &webhookReceiver{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err == nil {
			err = escalation.VerifyWebhook(secret, r, body, time.Now())
		}
		var e contract.Escalation
		if err == nil {
			err = json.Unmarshal(body, &e)
		}
		if err == nil && (r.Method != http.MethodPost || r.URL.Path != "/keel") {
			err = errors.New("wrong method or path")
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if err != nil {
			h.refused++
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		h.got = append(h.got, webhookDelivery{key: r.Header.Get(escalation.WebhookIdempotencyHeader), esc: e})
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// hmacSHA256Hex is the hex HMAC-SHA256 of msg under key, computed independently of the bot.
func hmacSHA256Hex(key, msg string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

// testWriter sends the bot's log lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
