package escalation

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slacktest"
)

// fakeSlack is slacktest's server with conversations.history carrying metadata, recording what
// the notifier posts.
type fakeSlack struct {
	srv *slacktest.Server

	mu      sync.Mutex
	posts   []url.Values
	history []slack.Message
	// historyError makes conversations.history answer ok:false with this error.
	historyError string
}

func newFakeSlack(t *testing.T) *fakeSlack {
	f := &fakeSlack{}
	f.srv = slacktest.NewTestServer(func(c slacktest.Customize) {
		c.Handle("/chat.postMessage", f.postMessage)
		c.Handle("/conversations.history", f.conversationsHistory)
	})
	f.srv.Start()
	t.Cleanup(f.srv.Stop)
	return f
}

// api is a Web API client pointed at the fake.
func (f *fakeSlack) api() *slack.Client {
	return slack.New("xoxb-test", slack.OptionAPIURL(f.srv.GetAPIURL()))
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
