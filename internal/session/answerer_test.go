package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// answerTarget is a minimal session: one pending escalation answered by update (with a
// validator), a status query that counts applied answers, and the cancel signal.
func answerTarget(ctx workflow.Context) (string, error) {
	pending, applied := "esc-t1", 0
	if err := workflow.SetQueryHandler(ctx, contract.QueryStatus, func() (contract.SessionStatus, error) {
		st := contract.SessionStatus{Status: contract.StatusWaiting, Turn: applied}
		if pending != "" {
			st.Escalation = &contract.Escalation{ID: pending}
		}
		return st, nil
	}); err != nil {
		return "", err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateAnswerEscalation,
		func(ctx workflow.Context, a contract.Answer) (contract.AnswerResult, error) {
			pending = ""
			applied++
			return contract.AnswerResult{Accepted: true, Message: a.Action + " taken"}, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(a contract.Answer) error {
			if pending == "" || a.EscalationID != pending {
				return errors.New("no escalation pending")
			}
			return nil
		}}); err != nil {
		return "", err
	}
	var req contract.CancelRequest
	workflow.GetSignalChannel(ctx, contract.SignalCancel).Receive(ctx, &req)
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return "", err
	}
	return "cancelled by " + req.By, nil
}

func TestTemporalAnswerer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := testenv.DevServer(t, ctx)

	w := worker.New(c, "escalation-test", worker.Options{})
	w.RegisterWorkflowWithOptions(answerTarget, workflow.RegisterOptions{Name: "answerTarget"})
	require.NoError(t, w.Start())
	defer w.Stop()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "keel-escalation-test", TaskQueue: "escalation-test"}, "answerTarget")
	require.NoError(t, err)

	ans := TemporalAnswerer{Client: c}
	st, err := ans.Status(ctx, run.GetID())
	require.NoError(t, err)
	require.NotNil(t, st.Escalation)
	assert.Equal(t, "esc-t1", st.Escalation.ID)

	retry := contract.Answer{EscalationID: "esc-t1", Action: contract.ActionRetry, By: "slack:U1", Via: "slack"}
	res, err := ans.Answer(ctx, run.GetID(), retry)
	require.NoError(t, err)
	assert.Equal(t, contract.AnswerResult{Accepted: true, Message: "retry taken"}, res)

	// The same answer again has the same update ID: the server returns the first outcome and the
	// handler does not run twice.
	res, err = ans.Answer(ctx, run.GetID(), retry)
	require.NoError(t, err)
	assert.True(t, res.Accepted)

	// A different answer is rejected by the validator and comes back as not accepted.
	res, err = ans.Answer(ctx, run.GetID(), contract.Answer{EscalationID: "esc-t1", Action: contract.ActionAbort, By: "slack:U2"})
	require.NoError(t, err)
	assert.False(t, res.Accepted)
	assert.Contains(t, res.Message, "no escalation pending")

	st, err = ans.Status(ctx, run.GetID())
	require.NoError(t, err)
	assert.Equal(t, 1, st.Turn, "the answer was applied once")
	assert.Nil(t, st.Escalation)

	require.NoError(t, ans.Cancel(ctx, run.GetID(), contract.CancelRequest{Reason: "test", By: "slack:U1"}))
	var out string
	require.NoError(t, run.Get(ctx, &out))
	assert.Equal(t, "cancelled by slack:U1", out)

	_, err = ans.Status(ctx, "no-such-workflow")
	assert.ErrorContains(t, err, "querying the status of no-such-workflow")
}
