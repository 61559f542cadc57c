package escalation

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/samples"
)

// renderings are every channel's rendering of a notice, as text a person reads.
func renderings(t *testing.T, e contract.Escalation) map[string]string {
	t.Helper()
	blocks, err := json.Marshal(SlackBlocks(e))
	require.NoError(t, err)
	texts, _ := blockTexts(t, string(blocks))
	return map[string]string{
		"text":    Text(e),
		"github":  GitHubComment(e, "octo"),
		"slack":   strings.Join(texts, "\n"),
		"webhook": newWebhookBody(e).Text + "\n" + newWebhookBody(e).AnswerCommand,
	}
}

func TestApprovalRendering(t *testing.T) {
	short := samples.Approval("apr-1")
	long := samples.Approval("apr-2")
	long.Approval.Arguments = `{"path":"big.txt","content":"` + strings.Repeat("é", 3000) + `THE-END"}`
	long.Approval.Digest = contract.Digest(long.Approval.Arguments)
	command := func(e contract.Escalation) string {
		return "starter approve keel-0123456789abcdef0123 call_w1 --digest " + e.Approval.Digest
	}
	tests := []struct {
		name    string
		e       contract.Escalation
		want    []string
		notWant []string
	}{
		{
			name: "short arguments",
			e:    short,
			want: []string{"write_file", `{"path":"calc.go","content":"package calc\n"}`, short.Approval.Digest,
				"2026-12-01T10:10:00Z", "deny", command(short), "call_w1", "keel-0123456789abcdef0123"},
			notWant: []string{"starter answer", "retry", "Retry", "abort", "Abort", "bytes in all"},
		},
		{
			name:    "long arguments show their end, and the whole call or how to see it",
			e:       long,
			want:    []string{`{"path":"big.txt","content":"éé`, `THE-END"}`, long.Approval.Digest, command(long)},
			notWant: []string{"\uFFFD"},
		},
	}
	for _, tt := range tests {
		for channel, got := range renderings(t, tt.e) {
			t.Run(tt.name+"/"+channel, func(t *testing.T) {
				assert.True(t, utf8.ValidString(got), "valid UTF-8")
				for _, w := range tt.want {
					assert.Contains(t, got, w)
				}
				for _, nw := range tt.notWant {
					assert.NotContains(t, got, nw)
				}
			})
		}
	}
}

// TestApprovalRenderingPerChannel checks what each channel says in its own words.
func TestApprovalRenderingPerChannel(t *testing.T) {
	e := samples.Approval("apr-3")
	got := renderings(t, e)
	tests := []struct {
		channel string
		want    []string
	}{
		{"text", []string{"Session keel-0123456789abcdef0123 waits for approval of a write_file call (approval)\n",
			"Approval: apr-3", "Tool: write_file", "Choices: approve, deny", "Deadline passed (then: deny), at 2026-12-01T10:10:00Z",
			"Answer with: " + ApproveCommand(e), "Web UI: " + e.Link}},
		{"github", []string{"@octo the agent session working on this pull request waits for approval of a `write_file` call.",
			"Approve with a reply comment (`/keel approve`, `/keel deny`), or run `starter approve keel-0123456789abcdef0123 call_w1 --digest " + e.Approval.Digest + "` (add `--deny`",
			GitHubMarker("apr-3")}},
		{"slack", []string{"A Keel session waits for approval", "*Tool:* `write_file`", "*Digest:* `" + e.Approval.Digest + "`",
			"no answer by <!date^" + "1796119800" + "^{date_short_pretty} {time}|2026-12-01T10:10:00Z> denies the call",
			"<" + e.Link + "|Open in the Web UI>", "Approve", "Deny"}},
		{"webhook", []string{"Choices: approve, deny", ApproveCommand(e)}},
	}
	for _, tt := range tests {
		t.Run(tt.channel, func(t *testing.T) {
			for _, w := range tt.want {
				assert.Contains(t, got[tt.channel], w)
			}
		})
	}
	assert.Equal(t, "starter approve keel-0123456789abcdef0123 call_w1 --digest "+e.Approval.Digest+" [--deny]", ApproveCommand(e))
	assert.Equal(t, ApproveCommand(e), AnswerCommand(e))
	assert.False(t, NoticeOnly(e))
}

// TestApprovalSlackButtons: exactly Approve (primary) and Deny (danger), each carrying the
// session, the notice, the call and the digest.
func TestApprovalSlackButtons(t *testing.T) {
	e := samples.Approval("apr-4")
	blocks, err := json.Marshal(SlackBlocks(e))
	require.NoError(t, err)
	_, buttons := blockTexts(t, string(blocks))
	require.Len(t, buttons, 2)
	tests := []struct {
		actionID, label, style string
	}{
		{"keel_approve", "Approve", "primary"},
		{"keel_deny", "Deny", "danger"},
	}
	for _, tt := range tests {
		t.Run(tt.label, func(t *testing.T) {
			btn := buttons[tt.actionID]
			require.NotNil(t, btn, "button %s in %v", tt.actionID, buttons)
			assert.Equal(t, tt.style, btn["style"])
			assert.Equal(t, tt.label, btn["text"].(map[string]any)["text"])
			assert.Nil(t, btn["confirm"])
			var v SlackButton
			require.NoError(t, json.Unmarshal([]byte(btn["value"].(string)), &v))
			assert.Equal(t, SlackButton{WorkflowID: e.WorkflowID, EscalationID: "apr-4", CallID: "call_w1", Digest: e.Approval.Digest}, v)
		})
	}
}

// TestApprovalSlackBlocksFitBlockKit: a huge argument text still gives sections under Block
// Kit's 3000-character limit.
func TestApprovalSlackBlocksFitBlockKit(t *testing.T) {
	e := samples.Approval("apr-5")
	e.Approval.Arguments = strings.Repeat("`", 10000)
	blocks, err := json.Marshal(SlackBlocks(e))
	require.NoError(t, err)
	texts, _ := blockTexts(t, string(blocks))
	for _, s := range texts {
		assert.LessOrEqual(t, utf8.RuneCountInString(s), 3000)
	}
}

// TestLongCallShown: a call longer than a notice's line shows its start and end there, says how
// much is hidden and names the command that prints it whole; GitHub folds the whole call in a
// details element and Slack carries it in sections; none of it is raw.
func TestLongCallShown(t *testing.T) {
	e := samples.Approval("apr-9")
	e.Approval.Arguments = `{"command":"sh -c ': ` + strings.Repeat("=", 1970) + "; echo \x1b]0;t\x07\u009b\u202e tail'\"}"
	e.Approval.Digest = contract.Digest(e.Approval.Arguments)
	show := "starter approve keel-0123456789abcdef0123 call_w1 --show"
	text := Text(e)
	assert.Contains(t, text, "characters hidden; `"+show+"` prints the whole call]")
	assert.Contains(t, text, `; echo \x1b]0;t\x07\u009b\u202e tail'"}`)
	whole := strings.Repeat("=", 1970) + `; echo \x1b]0;t\x07\u009b\u202e tail'"}`
	assert.Contains(t, GitHubComment(e, "octo"), "<details><summary>The whole call (2030 characters)</summary>")
	assert.Contains(t, GitHubComment(e, "octo"), whole)
	blocks, err := json.Marshal(SlackBlocks(e))
	require.NoError(t, err)
	texts, _ := blockTexts(t, string(blocks))
	joined := strings.Join(texts, "")
	assert.Contains(t, strings.ReplaceAll(joined, "```", ""), whole)
	for channel, got := range renderings(t, e) {
		assert.NotContains(t, got, "\x1b]0;t\x07", channel)
		assert.NotContains(t, got, "\u009b", channel)
		assert.NotContains(t, got, "\u202e", channel)
	}

	pieces, hidden := WholeCall(e, 1000, 2)
	assert.Len(t, pieces, 2)
	assert.Equal(t, 2030-2000, hidden)
	pieces, hidden = WholeCall(contract.Escalation{Approval: &contract.Approval{Arguments: "aéb"}}, 2, 5)
	assert.Equal(t, []string{"a", "éb"[:2], "b"}, pieces, "cut on rune boundaries")
	assert.Zero(t, hidden)
}

// TestWebhookApprovalBody: the receiver gets the approval with its exact arguments and digest,
// the text a person reads and the command that answers.
func TestWebhookApprovalBody(t *testing.T) {
	e := samples.Approval("apr-6")
	got := make(chan WebhookBody, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := VerifyWebhook("whsec", r, body, time.Now()); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var b WebhookBody
		if err := json.Unmarshal(body, &b); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got <- b
	}))
	defer srv.Close()
	n := &WebhookNotifier{URL: srv.URL, Secret: "whsec", HTTPClient: srv.Client()}
	require.NoError(t, n.Notify(context.Background(), e))
	b := receive(t, got, "webhook delivery")
	require.NotNil(t, b.Approval)
	assert.Equal(t, contract.ReasonApproval, b.Reason)
	assert.Equal(t, []string{contract.ActionApprove, contract.ActionDeny}, b.Choices)
	assert.Equal(t, e.Approval.Arguments, b.Approval.Arguments)
	assert.Equal(t, contract.Digest(b.Approval.Arguments), b.Approval.Digest)
	assert.True(t, e.Approval.Deadline.Equal(b.Approval.Deadline))
	assert.Equal(t, ApproveCommand(e), b.AnswerCommand)
	assert.Equal(t, Text(e), b.Text)
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

// TestSlackNotifierPostsApproval: the approval notice is posted once per call, with its own
// fallback text, the notice's metadata and the two buttons.
func TestSlackNotifierPostsApproval(t *testing.T) {
	fs := newFakeSlack(t)
	n := &SlackNotifier{API: fs.api(), Channel: "C1"}
	e := samples.Approval("apr-s1")
	require.NoError(t, n.Notify(context.Background(), e))
	require.NoError(t, n.Notify(context.Background(), e), "a retried activity")
	require.Equal(t, 1, fs.postCount())
	form := fs.post(0)
	assert.Equal(t, "Keel session keel-0123456789abcdef0123 waits for approval of write_file", form.Get("text"))
	assert.Contains(t, form.Get("metadata"), `"escalation_id":"apr-s1"`)
	_, buttons := blockTexts(t, form.Get("blocks"))
	assert.Len(t, buttons, 2)
	assert.Contains(t, buttons, "keel_approve")
	assert.Contains(t, buttons, "keel_deny")
}
