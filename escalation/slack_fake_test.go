package escalation

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slacktest"

	"github.com/keelrun/keel/internal/contract"
)

// fakeSlack is slacktest's server plus the Web API methods it lacks (chat.update, views.open,
// conversations.history with metadata) and a response_url endpoint, recording what the bot and
// the notifier send.
type fakeSlack struct {
	srv        *slacktest.Server
	updates    chan url.Values
	views      chan map[string]any
	ephemerals chan url.Values
	replies    chan commandReply

	mu      sync.Mutex
	posts   []url.Values
	history []slack.Message
	// historyError makes conversations.history answer ok:false with this error.
	historyError string
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
		c.Handle("/chat.postMessage", f.postMessage)
		c.Handle("/conversations.history", f.conversationsHistory)
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

// postMessage records the post and keeps it, with its metadata, for conversations.history.
func (f *fakeSlack) postMessage(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts = append(f.posts, r.PostForm)
	ts := fmt.Sprintf("1700000000.%06d", len(f.posts))
	m := slack.Message{}
	m.Timestamp = ts
	m.Text = r.PostForm.Get("text")
	if meta := r.PostForm.Get("metadata"); meta != "" {
		_ = json.Unmarshal([]byte(meta), &m.Metadata)
	}
	f.history = append([]slack.Message{m}, f.history...)
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": r.PostForm.Get("channel"), "ts": ts})
}

func (f *fakeSlack) conversationsHistory(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.historyError != "" {
		_, _ = w.Write([]byte(`{"ok":false,"error":"` + f.historyError + `"}`))
		return
	}
	msgs := f.history
	if r.PostForm.Get("include_all_metadata") != "1" { // Slack leaves metadata out unless asked
		msgs = nil
		for _, m := range f.history {
			m.Metadata = slack.SlackMetadata{}
			msgs = append(msgs, m)
		}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "messages": msgs})
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

func (f *fakeSlack) post(i int) url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.posts[i]
}

func (f *fakeSlack) postCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.posts)
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
