package escalation

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/samples"
)

func TestText(t *testing.T) {
	full := samples.Escalation("esc-1")
	bare := contract.Escalation{ID: "esc-2", WorkflowID: "wf-2", Reason: "something_new"}
	tests := []struct {
		name    string
		e       contract.Escalation
		want    []string
		notWant []string
	}{
		{
			name: "everything",
			e:    full,
			want: []string{
				"Session keel-0123456789abcdef0123 needs a person: the model gateway kept failing after every retry (gateway_retries_exhausted)",
				"Escalation: esc-1",
				"Summary: the model gateway did not answer",
				"class transport, 4 attempts, spent 12s",
				"  - 4 attempts with backoff\n  - a stricter instruction\n",
				`Call: write_file {"path":"a.txt"}`,
				"Last error: connection reset by peer",
				"Web UI: " + full.Link,
				"Choices: retry, edit, abort",
				"Deadline passed, at 2026-12-01T10:00:00Z",
				"Answer with: starter answer keel-0123456789abcdef0123 esc-1 retry|edit|abort",
			},
		},
		{
			name:    "bare record offers every choice",
			e:       bare,
			want:    []string{"needs a person: something_new", "Choices: retry, edit, abort", "starter answer wf-2 esc-2 retry|edit|abort"},
			notWant: []string{"Summary:", "Tried:", "Last error:", "Web UI:", "Deadline"},
		},
		{
			name: "restricted choices",
			e:    contract.Escalation{ID: "esc-3", WorkflowID: "wf-3", Reason: contract.ReasonBudget, Choices: []string{"abort"}},
			want: []string{"a budget or quota is exhausted (budget)", "Choices: abort\n", "starter answer wf-3 esc-3 abort\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Text(tt.e)
			for _, w := range tt.want {
				assert.Contains(t, got, w)
			}
			for _, nw := range tt.notWant {
				assert.False(t, strings.Contains(got, nw), "unexpected %q in\n%s", nw, got)
			}
		})
	}
}

// TestNoticeOnly: a failed session's notice (gateway, budget) offers no answer anywhere; a
// question, or an old record without choices for another reason, offers all three.
func TestNoticeOnly(t *testing.T) {
	notice := samples.Escalation("esc-n1")
	notice.Choices = nil
	question := samples.Escalation("esc-q1")
	old := samples.Escalation("esc-o1")
	old.Choices, old.Reason = nil, contract.ReasonLoop
	tests := []struct {
		name   string
		e      contract.Escalation
		notice bool
	}{
		{"gateway notice", notice, true},
		{"budget notice", func() contract.Escalation { e := notice; e.Reason = contract.ReasonBudget; return e }(), true},
		{"question", question, false},
		{"old record without choices", old, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.notice, NoticeOnly(tt.e))
			text := Text(tt.e)
			comment := GitHubComment(tt.e, "octo")
			blocks, err := json.Marshal(SlackBlocks(tt.e))
			require.NoError(t, err)
			for _, s := range []string{text, comment} {
				assert.Equal(t, !tt.notice, strings.Contains(s, "starter answer"), "answer command in %q", s)
			}
			assert.Equal(t, !tt.notice, strings.Contains(string(blocks), `"action_id":"keel_abort"`), "buttons")
			assert.Equal(t, tt.notice, strings.Contains(text, "Nothing to answer"))
			assert.Equal(t, tt.notice, strings.Contains(string(blocks), "nothing to answer"))
		})
	}
}
