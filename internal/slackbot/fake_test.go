package slackbot

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slacktest"

	"github.com/keelrun/keel/internal/contract"
	"github.com/stretchr/testify/require"
)

// fakeSlack is slacktest's server plus the Web API methods it lacks (chat.update, views.open) and
// a response_url endpoint, recording what the bot sends.
type fakeSlack struct {
	srv        *slacktest.Server
	updates    chan url.Values
	views      chan map[string]any
	ephemerals chan url.Values
	replies    chan commandReply
}

func newFakeSlack(t *testing.T) *fakeSlack {
	f := &fakeSlack{
		updates:    make(chan url.Values, 16),
		views:      make(chan map[string]any, 16),
		ephemerals: make(chan url.Values, 16),
		replies:    make(chan commandReply, 16),
	}
	f.srv = slacktest.NewTestServer(func(c slacktest.Customize) {
		c.Handle("/chat.update", f.formRoute(f.updates, `{"ok":true,"channel":"C1","ts":"1700000000.000100","text":""}`))
		c.Handle("/chat.postEphemeral", f.formRoute(f.ephemerals, `{"ok":true,"message_ts":"1700000000.000200"}`))
		c.Handle("/views.open", f.viewsOpen)
		c.Handle("/respond", f.respond)
	})
	f.srv.Start()
	t.Cleanup(f.srv.Stop)
	return f
}

// api is a Web API client pointed at the fake.
func (f *fakeSlack) api() *slack.Client {
	return slack.New("xoxb-test", slack.OptionAPIURL(f.srv.GetAPIURL()))
}

// responseURL is where slash command replies go.
func (f *fakeSlack) responseURL() string { return f.srv.GetAPIURL() + "respond" }

func (f *fakeSlack) formRoute(ch chan url.Values, reply string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ch <- r.PostForm
		_, _ = w.Write([]byte(reply))
	}
}

func (f *fakeSlack) viewsOpen(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.views <- req
	_, _ = w.Write([]byte(`{"ok":true,"view":{"id":"V1"}}`))
}

func (f *fakeSlack) respond(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var rep commandReply
	if err := json.Unmarshal(body, &rep); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.replies <- rep
	_, _ = w.Write([]byte("ok"))
}

// receive waits for one value on ch, failing the test after a deadline.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// recordingAnswerer is the test's stand-in for the Temporal client: it records every call.
type recordingAnswerer struct {
	mu        sync.Mutex
	answers   []answerCall
	approvals []approveCall
	cancels   []cancelCall
	says      []sayCall
	status    []string
	result    contract.AnswerResult
	err       error
	called    chan struct{}
}

type answerCall struct {
	WorkflowID string
	Answer     contract.Answer
}

type approveCall struct {
	WorkflowID string
	Decision   contract.ApprovalDecision
}

type sayCall struct {
	WorkflowID string
	Say        contract.Say
}

func (a *recordingAnswerer) Say(_ context.Context, wf string, m contract.Say) (contract.SayResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.says = append(a.says, sayCall{wf, m})
	a.called <- struct{}{}
	return contract.SayResult{Accepted: true, Seq: len(a.says), Message: "message queued"}, a.err
}

type cancelCall struct {
	WorkflowID string
	Request    contract.CancelRequest
}

func newRecordingAnswerer() *recordingAnswerer {
	return &recordingAnswerer{result: contract.AnswerResult{Accepted: true, Message: "answer taken"}, called: make(chan struct{}, 16)}
}

func (a *recordingAnswerer) Answer(_ context.Context, wf string, ans contract.Answer) (contract.AnswerResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.answers = append(a.answers, answerCall{wf, ans})
	a.called <- struct{}{}
	return a.result, a.err
}

func (a *recordingAnswerer) Approve(_ context.Context, wf string, d contract.ApprovalDecision) (contract.AnswerResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.approvals = append(a.approvals, approveCall{wf, d})
	a.called <- struct{}{}
	return a.result, a.err
}

func (a *recordingAnswerer) Cancel(_ context.Context, wf string, req contract.CancelRequest) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cancels = append(a.cancels, cancelCall{wf, req})
	a.called <- struct{}{}
	return nil
}

func (a *recordingAnswerer) Status(_ context.Context, wf string) (contract.SessionStatus, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.status = append(a.status, wf)
	a.called <- struct{}{}
	return contract.SessionStatus{
		Status: contract.StatusWaiting, Turn: 3,
		Usage:      contract.Usage{InputTokens: 1000, OutputTokens: 234},
		Counters:   contract.Counters{ToolCalls: 5, BlockedCalls: 1},
		Escalation: &contract.Escalation{ID: "esc-1", Reason: contract.ReasonLoop},
	}, nil
}

// calls returns how many calls of each kind arrived; approvals count as answers.
func (a *recordingAnswerer) calls() (answers, cancels, statuses int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.answers) + len(a.approvals), len(a.cancels), len(a.status)
}

// decisions returns the approval decisions that arrived, in order.
func (a *recordingAnswerer) decisions() []approveCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]approveCall(nil), a.approvals...)
}

// blockTexts decodes Block Kit JSON and returns every text in it and the buttons by action ID.
func blockTexts(t *testing.T, blocks string) ([]string, map[string]map[string]any) {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(blocks), &v))
	var texts []string
	buttons := map[string]map[string]any{}
	var walk func(any)
	walk = func(n any) {
		switch n := n.(type) {
		case map[string]any:
			if id, ok := n["action_id"].(string); ok && n["type"] == "button" {
				buttons[id] = n
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

// hmacHex is the tests' own HMAC-SHA256, so signatures are not checked against the code under test.
func hmacHex(secret, msg string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}
