package escalation

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/internal/devkit/samples"
)

func TestSlackNotifierPostsBlocks(t *testing.T) {
	fs := newFakeSlack(t)
	n := &SlackNotifier{API: fs.api(), Channel: "C1"}
	e := samples.Escalation("esc-s1")
	require.NoError(t, n.Notify(context.Background(), e))
	require.Equal(t, 1, fs.postCount())

	form := fs.post(0)
	assert.Equal(t, "C1", form.Get("channel"))
	var meta slack.SlackMetadata
	require.NoError(t, json.Unmarshal([]byte(form.Get("metadata")), &meta))
	assert.Equal(t, SlackMetadataEventType, meta.EventType)
	assert.Equal(t, "esc-s1", meta.EventPayload["escalation_id"])

	var blocks slack.Blocks
	require.NoError(t, json.Unmarshal([]byte(form.Get("blocks")), &blocks))
	raw := form.Get("blocks")
	for _, want := range []string{"gateway_retries_exhausted", "the model gateway did not answer", "4 attempts with backoff", "connection reset by peer", e.Link, "Open in the Web UI"} {
		assert.Contains(t, raw, want)
	}
	var actions *slack.ActionBlock
	for _, b := range blocks.BlockSet {
		if a, ok := b.(*slack.ActionBlock); ok {
			actions = a
		}
	}
	require.NotNil(t, actions, "no buttons")
	var ids []string
	for _, el := range actions.Elements.ElementSet {
		btn := el.(*slack.ButtonBlockElement)
		ids = append(ids, btn.ActionID)
		var v SlackButton
		require.NoError(t, json.Unmarshal([]byte(btn.Value), &v))
		assert.Equal(t, SlackButton{WorkflowID: e.WorkflowID, EscalationID: "esc-s1"}, v)
	}
	assert.Equal(t, []string{"keel_retry", "keel_edit", "keel_abort"}, ids)
}

func TestSlackNotifierIdempotent(t *testing.T) {
	tests := []struct {
		name         string
		historyError string
		wantPosts    int
	}{
		{name: "restart finds the notice in history", wantPosts: 1},
		{name: "history refused posts again", historyError: "missing_scope", wantPosts: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeSlack(t)
			e := samples.Escalation("esc-s2")
			first := &SlackNotifier{API: fs.api(), Channel: "C1"}
			require.NoError(t, first.Notify(context.Background(), e))
			require.NoError(t, first.Notify(context.Background(), e), "same process")
			require.Equal(t, 1, fs.postCount(), "a second Notify in one process must not post")

			fs.mu.Lock()
			fs.historyError = tt.historyError
			fs.mu.Unlock()
			restarted := &SlackNotifier{API: fs.api(), Channel: "C1"}
			require.NoError(t, restarted.Notify(context.Background(), e))
			assert.Equal(t, tt.wantPosts, fs.postCount())

			require.NoError(t, restarted.Notify(context.Background(), samples.Escalation("esc-other")))
			assert.Equal(t, tt.wantPosts+1, fs.postCount(), "another escalation is posted")
		})
	}
}

// TestSlackNotifierSameIDOtherSession: an escalation ID equal to another session's (IDs are short)
// is still a different escalation, both in one process and in the channel's history.
func TestSlackNotifierSameIDOtherSession(t *testing.T) {
	fs := newFakeSlack(t)
	a := samples.Escalation("esc-same")
	b := a
	b.WorkflowID = "keel-other-session"
	require.NoError(t, (&SlackNotifier{API: fs.api(), Channel: "C1"}).Notify(context.Background(), a))
	n := &SlackNotifier{API: fs.api(), Channel: "C1"}
	require.NoError(t, n.Notify(context.Background(), a))
	require.Equal(t, 1, fs.postCount(), "the first session's notice is found in history")
	require.NoError(t, n.Notify(context.Background(), b))
	assert.Equal(t, 2, fs.postCount(), "the other session's notice is posted")
}
