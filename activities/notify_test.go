package activities_test

import (
	"context"
	"errors"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/contract"
)

// failingNotifier fails every notice with err.
type failingNotifier struct{ err error }

func (f failingNotifier) Name() string { return "pager" }
func (f failingNotifier) Notify(context.Context, contract.Escalation) error {
	return f.err
}

// TestNoticeFailures: a notice no retry can deliver (a missing setting) fails the activity at
// once, not retryable, while any other failure stays retryable, so the notice's retries are spent
// only where they can help.
func TestNoticeFailures(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		retryable bool
	}{
		{"missing pull request", escalation.PermanentError{Err: escalation.ErrNoPullRequest}, false},
		{"transient", errors.New("connection reset"), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			acts := &activities.Activities{Notifiers: map[string]escalation.Notifier{"pager": failingNotifier{c.err}}}
			env.RegisterActivityWithOptions(acts.NotifyEscalation, activity.RegisterOptions{Name: contract.NotifyActivity})
			_, err := env.ExecuteActivity(contract.NotifyActivity, contract.NotifyRequest{Channel: "pager", Escalation: contract.Escalation{ID: "esc-1"}})
			if err == nil {
				t.Fatal("the notice did not fail")
			}
			var appErr *temporal.ApplicationError
			nonRetryable := errors.As(err, &appErr) && appErr.NonRetryable()
			if nonRetryable == c.retryable {
				t.Fatalf("retryable = %v, want %v: %v", !nonRetryable, c.retryable, err)
			}
			if !c.retryable && appErr.Type() != activities.NoticeImpossible {
				t.Fatalf("error type %q, want %q", appErr.Type(), activities.NoticeImpossible)
			}
		})
	}
}
