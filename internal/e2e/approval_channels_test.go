package e2e

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/session"
	"github.com/keelrun/keel/internal/slackbot"
)

// TestSlackApprovalEndToEnd runs a real session whose writes wait for approval, lets its worker
// post each approval notice to a local Slack Web API, and approves every one through the Slack
// bot with clicks signed as Slack signs them. A non-approver's click, a replayed click and a
// second approver's click change nothing; the session completes.
func TestSlackApprovalEndToEnd(t *testing.T) {
	sl := newLocalSlack(t)
	live := startLive(t, []string{
		"KEEL_TOOLS_APPROVAL=writes",
		"KEEL_ESCALATION_CHANNELS=slack",
		"KEEL_ESCALATION_SLACK_BOT_TOKEN=" + e2eSlackToken,
		"KEEL_ESCALATION_SLACK_CHANNEL=" + e2eSlackChannel,
		"KEEL_ESCALATION_SLACK_API_URL=" + sl.srv.GetAPIURL(),
	}, "demo", "--output", "jsonl")
	wid := live.workflowID()
	bot, decisions := startApprovalBot(t, sl.srv.GetAPIURL())

	approved := 0
	for seen := 0; ; {
		a, ok := live.nextApproval(30*time.Second, seen)
		if !ok {
			break
		}
		seen = a.Seq
		n := readApprovalNotice(t, sl, approved, wid, a)
		if approved == 0 {
			refuseStrangers(t, bot, decisions, wid, n)
		}
		first := n.click("U1", contract.ActionApprove).sentAt(time.Now())
		if code, body := bot.send(t, first); code != http.StatusOK {
			t.Fatalf("approve click on %s: %d %q", a.CallID, code, body)
		}
		checkApprovedNotice(t, sl, approved, n)
		if approved == 0 {
			refuseLateClicks(t, bot, sl, decisions, first, n)
		}
		approved++
	}

	r := live.finish()
	if r.Code != 0 || r.Summary.Status != contract.StatusCompleted || approved == 0 {
		t.Fatalf("exit %d, status %q (%s) after %d approvals; want 0, completed\nstderr:\n%s", r.Code, r.Summary.Status, r.Summary.Reason, approved, r.Stderr)
	}
	if posts := sl.count("posts"); posts != approved {
		t.Errorf("%d notices posted for %d approvals", posts, approved)
	}
	if got := decisions.all(); len(got) != approved {
		t.Errorf("%d decisions left the bot for %d approvals: %+v", len(got), approved, got)
	}
	if n := bot.answers(); n != 0 {
		t.Errorf("%d escalation answers left the bot; approvals are not escalation answers", n)
	}
	t.Logf("%d writes approved from Slack", approved)
	assertApprovalsOnly(t, wid, approved, "slack:U1")
}

// approvalNoticeSeen is one approval notice as the worker posted it: where, and what its buttons
// carry.
type approvalNoticeSeen struct {
	ts, blocks string
	buttons    map[string]string
}

// readApprovalNotice waits for the i-th notice and checks it is the approval of the call in ev:
// the tool, the digest, both buttons carrying the session, the call and the digest.
func readApprovalNotice(t *testing.T, sl *localSlack, i int, wid string, ev contract.Event) approvalNoticeSeen {
	t.Helper()
	post := waitNth(t, sl, "approval notice", &sl.posts, i)
	digest := contract.Digest(ev.Arguments)
	texts, buttons := walkBlocks(t, post.Get("blocks"))
	if len(buttons) != 2 {
		t.Fatalf("notice %d has buttons %v; want exactly Approve and Deny", i, buttons)
	}
	for _, id := range []string{"keel_approve", "keel_deny"} {
		var v struct {
			WorkflowID string `json:"workflow_id"`
			CallID     string `json:"call_id"`
			Digest     string `json:"digest"`
		}
		if err := json.Unmarshal([]byte(buttons[id]), &v); err != nil || v.WorkflowID != wid || v.CallID != ev.CallID || v.Digest != digest {
			t.Fatalf("button %s of notice %d carries %q; want %s, %s, %s", id, i, buttons[id], wid, ev.CallID, digest)
		}
	}
	cmd := "starter approve " + wid + " " + ev.CallID + " --digest " + digest
	for _, want := range []string{"`" + ev.Tool + "`", digest, "denies the call", cmd} {
		if !anyContains(texts, want) {
			t.Errorf("notice %d texts %q lack %q", i, texts, want)
		}
	}
	if post.Get("channel") != e2eSlackChannel || !strings.Contains(post.Get("metadata"), `"escalation_id":"apr-`) {
		t.Errorf("notice %d went to %q with metadata %q", i, post.Get("channel"), post.Get("metadata"))
	}
	return approvalNoticeSeen{ts: sl.tsOf(i), blocks: post.Get("blocks"), buttons: buttons}
}

// click is the block_actions payload Slack sends when user clicks a button of the notice.
func (n approvalNoticeSeen) click(user, choice string) slackRequest {
	return interactionRequest(map[string]any{
		"type":       "block_actions",
		"team":       map[string]any{"id": e2eSlackTeam, "domain": "keel-e2e"},
		"user":       map[string]any{"id": user, "team_id": e2eSlackTeam},
		"api_app_id": "A0KEEL",
		"trigger_id": "trig-" + user,
		"channel":    map[string]any{"id": e2eSlackChannel, "name": "keel"},
		"container":  map[string]any{"type": "message", "message_ts": n.ts, "channel_id": e2eSlackChannel},
		"message":    map[string]any{"type": "message", "ts": n.ts, "blocks": json.RawMessage(n.blocks)},
		"actions": []any{map[string]any{"type": "button", "block_id": "keel_answer", "action_id": "keel_" + choice,
			"value": n.buttons["keel_"+choice], "action_ts": strconv.FormatInt(time.Now().Unix(), 10) + ".1"}},
	})
}

// refuseStrangers sends a non-approver's Approve click: it is refused and the session still
// waits on the same call.
func refuseStrangers(t *testing.T, bot *botUnderTest, decisions *decisionCounter, wid string, n approvalNoticeSeen) {
	t.Helper()
	if code, body := bot.send(t, n.click("U9", contract.ActionApprove)); code != http.StatusForbidden || !strings.Contains(body, "not an approver") {
		t.Errorf("non-approver click: %d %q; want 403 not an approver", code, body)
	}
	if got := decisions.all(); len(got) != 0 {
		t.Fatalf("a non-approver's click left the bot: %+v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := session.TemporalAnswerer{Client: env.Client()}.Status(ctx, wid)
	if err != nil {
		t.Fatalf("status query: %v", err)
	}
	if st.Status != contract.StatusWaiting || st.Approval == nil {
		t.Fatalf("after the non-approver's click: status %q, approval %+v; want still waiting", st.Status, st.Approval)
	}
}

// checkApprovedNotice waits for the i-th chat.update: the notice, without buttons, says who
// approved.
func checkApprovedNotice(t *testing.T, sl *localSlack, i int, n approvalNoticeSeen) {
	t.Helper()
	upd := waitNth(t, sl, "chat.update", &sl.updates, i)
	texts, buttons := walkBlocks(t, upd.Get("blocks"))
	if upd.Get("ts") != n.ts || !anyContains(texts, "*Approved* by <@U1> at ") || len(buttons) != 0 {
		t.Errorf("update %d of %s: texts %q, buttons %v; want approved by U1, no buttons, on %s", i, upd.Get("ts"), texts, buttons, n.ts)
	}
}

// refuseLateClicks replays the captured Approve request and sends a Deny by the other approver:
// both are acknowledged, neither reaches the session, the second clicker is told who decided.
func refuseLateClicks(t *testing.T, bot *botUnderTest, sl *localSlack, decisions *decisionCounter, first slackRequest, n approvalNoticeSeen) {
	t.Helper()
	if code, _ := bot.send(t, first); code != http.StatusOK {
		t.Errorf("replayed click: %d, want 200 (acknowledged and dropped)", code)
	}
	if code, _ := bot.send(t, n.click("U2", contract.ActionDeny)); code != http.StatusOK {
		t.Errorf("second click: %d, want 200", code)
	}
	note := sl.waitEphemeral(t)
	if note.Get("user") != "U2" || !strings.Contains(note.Get("text"), "Already answered by <@U1>: approve") {
		t.Errorf("the second clicker was told %q (user %s)", note.Get("text"), note.Get("user"))
	}
	if got := decisions.all(); len(got) != 1 || !got[0].Approve || got[0].By != "slack:U1" {
		t.Fatalf("decisions that left the bot: %+v; want one approval by slack:U1", got)
	}
}

// waitNth waits until list holds more than i entries and returns entry i.
func waitNth[T any](t *testing.T, s *localSlack, what string, list *[]T, i int) T {
	t.Helper()
	var got T
	ok := waitFor(20*time.Second, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(*list) <= i {
			return false
		}
		got = (*list)[i]
		return true
	})
	if !ok {
		t.Fatalf("no %s #%d reached the local Slack within 20s", what, i+1)
	}
	return got
}

// decisionCounter passes everything to the real answerer and records the approval decisions it
// carried.
type decisionCounter struct {
	session.Answerer
	mu  sync.Mutex
	got []contract.ApprovalDecision
}

func (d *decisionCounter) Approve(ctx context.Context, wf string, dec contract.ApprovalDecision) (contract.AnswerResult, error) {
	d.mu.Lock()
	d.got = append(d.got, dec)
	d.mu.Unlock()
	return d.Answerer.Approve(ctx, wf, dec)
}

func (d *decisionCounter) all() []contract.ApprovalDecision {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]contract.ApprovalDecision(nil), d.got...)
}

// startApprovalBot serves the bot on a loopback listener with the real Temporal answerer, and
// returns it with the record of the decisions it sent.
func startApprovalBot(t *testing.T, slackAPI string) (*botUnderTest, *decisionCounter) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	decisions := &decisionCounter{Answerer: session.TemporalAnswerer{Client: env.Client()}}
	ans := &countingAnswerer{Answerer: decisions}
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
	return &botUnderTest{url: "http://" + ln.Addr().String(), ans: ans}, decisions
}

// assertApprovalsOnly reads the session's history: exactly want approve_call updates were
// accepted, one per call, each an approval by by, and no escalation answer arrived.
func assertApprovalsOnly(t *testing.T, wid string, want int, by string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	it := env.Client().GetWorkflowHistory(ctx, wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	calls := map[string]bool{}
	var accepted []contract.ApprovalDecision
	others := 0
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("reading the history of %s: %v", wid, err)
		}
		a := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes()
		if a == nil {
			continue
		}
		in := a.GetAcceptedRequest().GetInput()
		if in.GetName() != contract.UpdateApproveCall {
			others++
			continue
		}
		var d contract.ApprovalDecision
		if err := converter.GetDefaultDataConverter().FromPayloads(in.GetArgs(), &d); err != nil {
			t.Fatalf("decoding an accepted approval: %v", err)
		}
		accepted = append(accepted, d)
		calls[d.CallID] = true
	}
	if len(accepted) != want || len(calls) != want || others != 0 {
		t.Fatalf("accepted approvals %+v (%d calls) and %d other updates; want %d, one per call", accepted, len(calls), others, want)
	}
	for _, d := range accepted {
		if !d.Approve || d.By != by {
			t.Errorf("accepted decision %+v; want an approval by %s", d, by)
		}
	}
}
