package session

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// target is a minimal session: one escalation answered by update, one call waiting for approval,
// the say update, and the cancel signal that ends it. Its validators refuse as a session's do: a
// second answer or decision typed as already answered, an empty message untyped.
func target(ctx workflow.Context) (contract.Summary, error) {
	var answered, decided bool
	if err := workflow.SetQueryHandler(ctx, contract.QueryStatus, func() (contract.SessionStatus, error) {
		return contract.SessionStatus{Status: contract.StatusWaiting}, nil
	}); err != nil {
		return contract.Summary{}, err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateAnswerEscalation,
		func(ctx workflow.Context, a contract.Answer) (contract.AnswerResult, error) {
			answered = true
			return contract.AnswerResult{Accepted: true, Message: a.Action + " recorded"}, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(a contract.Answer) error {
			if answered {
				return temporal.NewApplicationError(fmt.Sprintf("escalation %s was already answered", a.EscalationID), contract.RefusalAlreadyAnswered)
			}
			return nil
		}}); err != nil {
		return contract.Summary{}, err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateApproveCall,
		func(ctx workflow.Context, d contract.ApprovalDecision) (contract.AnswerResult, error) {
			decided = true
			return contract.AnswerResult{Accepted: true, Message: "approved"}, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(d contract.ApprovalDecision) error {
			if decided {
				return temporal.NewApplicationError(fmt.Sprintf("call %s was already decided", d.CallID), contract.RefusalAlreadyAnswered)
			}
			return nil
		}}); err != nil {
		return contract.Summary{}, err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateSay,
		func(ctx workflow.Context, m contract.Say) (contract.SayResult, error) {
			return contract.SayResult{Accepted: true, Seq: 1, Message: "queued"}, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(m contract.Say) error {
			if m.Text == "" {
				return errors.New("the message is empty")
			}
			return nil
		}}); err != nil {
		return contract.Summary{}, err
	}
	workflow.GetSignalChannel(ctx, contract.SignalCancel).Receive(ctx, nil)
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return contract.Summary{}, err
	}
	return contract.Summary{Status: contract.StatusCancelled}, nil
}

// TestTypedErrors: against a real server, each way of not getting through is told apart with
// errors.Is or errors.As: no such session, a refusal (typed as already answered when someone was
// first), and a session that has ended; the server's own wording stays in the message.
func TestTypedErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tc := testenv.DevServer(t, ctx)
	w := worker.New(tc, "session-test", worker.Options{})
	w.RegisterWorkflowWithOptions(target, workflow.RegisterOptions{Name: "target"})
	require.NoError(t, w.Start())
	defer w.Stop()
	c := Client{Temporal: tc}
	run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "keel-session-test", TaskQueue: "session-test"}, "target")
	require.NoError(t, err)
	wid := run.GetID()

	answer := contract.Answer{EscalationID: "esc-1", Action: contract.ActionRetry, By: "ann"}
	decision := contract.ApprovalDecision{CallID: "c1", Digest: "d", Approve: true, By: "ann"}
	// A bot's own update ID: the same ID again is the same update, its first outcome (the derived
	// IDs of Answer and Approve are tested through TemporalAnswerer).
	for range 2 {
		res, err := c.AnswerAs(ctx, wid, "comment-42", answer)
		require.NoError(t, err)
		assert.True(t, res.Accepted)
	}
	res, err := c.ApproveAs(ctx, wid, "", decision)
	require.NoError(t, err)
	assert.True(t, res.Accepted)
	_, err = c.Say(ctx, wid, contract.Say{Text: "hello"})
	require.NoError(t, err)

	type step struct {
		name string
		do   func(ctx context.Context) error
		want error  // a sentinel errors.Is finds, or nil for none
		not  error  // a sentinel it must not find
		text string // in the message
	}
	answerAgain := func(ctx context.Context) error {
		_, err := c.Answer(ctx, wid, contract.Answer{EscalationID: "esc-1", Action: contract.ActionAbort, By: "bob"})
		return err
	}
	decideAgain := func(ctx context.Context) error { _, err := c.ApproveAs(ctx, wid, "", decision); return err }
	sayEmpty := func(ctx context.Context) error { _, err := c.Say(ctx, wid, contract.Say{}); return err }
	running := []step{
		{"a second answer", answerAgain, ErrAlreadyAnswered, ErrEnded, "escalation esc-1 was already answered"},
		{"a second decision", decideAgain, ErrAlreadyAnswered, ErrEnded, "call c1 was already decided"},
		{"an empty message", sayEmpty, nil, ErrAlreadyAnswered, "the message is empty"},
		{"status of no session", func(ctx context.Context) error { _, err := c.Status(ctx, "no-such-session"); return err }, ErrNotFound, ErrEnded, "no-such-session"},
		{"cancel of no session", func(ctx context.Context) error {
			return c.Cancel(ctx, "no-such-session", contract.CancelRequest{})
		}, ErrNotFound, ErrEnded, "no-such-session"},
		{"answer to no session", func(ctx context.Context) error {
			_, err := c.Answer(ctx, "no-such-session", answer)
			return err
		}, ErrNotFound, ErrEnded, "no-such-session"},
	}
	check := func(steps []step) {
		for _, s := range steps {
			sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
			err := s.do(sctx)
			scancel()
			require.Error(t, err, s.name)
			assert.Contains(t, err.Error(), s.text, s.name)
			if s.want != nil {
				assert.ErrorIs(t, err, s.want, s.name)
			}
			assert.NotErrorIs(t, err, s.not, s.name)
			if _, refused := errors.AsType[*RefusedError](err); refused != (s.want == ErrAlreadyAnswered || s.want == nil) {
				t.Errorf("%s: a refusal is %v, want %v: %v", s.name, refused, !refused, err)
			}
		}
	}
	check(running)

	require.NoError(t, c.Cancel(ctx, wid, contract.CancelRequest{Reason: "test"}))
	require.NoError(t, run.Get(ctx, nil))
	sum, ended, err := c.Ended(ctx, wid)
	require.NoError(t, err)
	assert.True(t, ended)
	assert.Equal(t, contract.StatusCancelled, sum.Status)

	check([]step{
		{"an answer after the end", answerAgain, ErrEnded, ErrNotFound, wid},
		{"a decision after the end", decideAgain, ErrEnded, ErrNotFound, wid},
		{"a message after the end", func(ctx context.Context) error {
			_, err := c.Say(ctx, wid, contract.Say{Text: "late"})
			return err
		}, ErrEnded, ErrNotFound, wid},
		{"a cancel after the end", func(ctx context.Context) error { return c.Cancel(ctx, wid, contract.CancelRequest{}) }, ErrEnded, ErrNotFound, wid},
	})
}
