package workflows

import (
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestAnswerText: answers read as people say them.
func TestAnswerText(t *testing.T) {
	cases := []struct {
		a    contract.Answer
		want string
	}{
		{contract.Answer{Action: contract.ActionEdit, By: "terminal", Via: "terminal"}, "answered edit in the terminal"},
		{contract.Answer{Action: contract.ActionEdit, By: "ann", Via: "terminal"}, "ann answered edit in the terminal"},
		{contract.Answer{Action: contract.ActionAbort, By: answeredByDeadline, Via: "timer"}, "the deadline passed: abort"},
		{contract.Answer{Action: contract.ActionRetry, By: "slack:U1", Via: "slack"}, "slack:U1 answered retry in Slack"},
		{contract.Answer{Action: contract.ActionRetry, By: "temporal-cli"}, "temporal-cli answered retry"},
		{contract.Answer{Action: contract.ActionRetry, Via: "pager"}, "answered retry via pager"},
	}
	for _, c := range cases {
		if got := answerText(&c.a); got != c.want {
			t.Errorf("answerText(%+v) = %q, want %q", c.a, got, c.want)
		}
	}
}
