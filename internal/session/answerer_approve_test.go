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
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// approvalTarget is a minimal session waiting on one tool call: the approve_call update with the
// session's validator rules (the waiting call, its digest, once); after the cancel signal it
// returns the decision and how many were applied.
func approvalTarget(ctx workflow.Context, waiting contract.Approval) (string, error) {
	var decided *contract.ApprovalDecision
	applied := 0
	if err := workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateApproveCall,
		func(ctx workflow.Context, d contract.ApprovalDecision) (contract.AnswerResult, error) {
			decided = &d
			applied++
			return contract.AnswerResult{Accepted: true, Message: fmt.Sprintf("%s approve=%t", waiting.Tool, d.Approve)}, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(d contract.ApprovalDecision) error {
			switch {
			case decided != nil:
				return fmt.Errorf("call %s was already decided", waiting.CallID)
			case d.CallID != waiting.CallID:
				return fmt.Errorf("stale approval: call %q is not the one waiting", d.CallID)
			case d.Digest != waiting.Digest:
				return errors.New("mismatched approval")
			}
			return nil
		}}); err != nil {
		return "", err
	}
	workflow.GetSignalChannel(ctx, contract.SignalCancel).Receive(ctx, nil)
	if err := workflow.Await(ctx, func() bool { return decided != nil && workflow.AllHandlersFinished(ctx) }); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d decision: approve=%t by %s", applied, decided.Approve, decided.By), nil
}

func TestTemporalAnswererApprove(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := testenv.DevServer(t, ctx)
	w := worker.New(c, "approval-test", worker.Options{})
	w.RegisterWorkflowWithOptions(approvalTarget, workflow.RegisterOptions{Name: "approvalTarget"})
	require.NoError(t, w.Start())
	defer w.Stop()
	args := `{"path":"a.txt"}`
	waiting := contract.Approval{CallID: "call_1", Tool: "write_file", Digest: contract.Digest(args), Arguments: args}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "keel-approval-test", TaskQueue: "approval-test"}, "approvalTarget", waiting)
	require.NoError(t, err)
	ans := TemporalAnswerer{Client: c}

	refused := []struct {
		name string
		d    contract.ApprovalDecision
		want string
	}{
		{"another call", contract.ApprovalDecision{CallID: "call_0", Digest: waiting.Digest, Approve: true, By: "slack:U1"}, "stale approval"},
		{"another digest", contract.ApprovalDecision{CallID: "call_1", Digest: contract.Digest(args + " "), Approve: true, By: "slack:U1"}, "mismatched approval"},
	}
	for _, r := range refused {
		res, err := ans.Approve(ctx, run.GetID(), r.d)
		require.NoError(t, err, r.name)
		assert.False(t, res.Accepted, r.name)
		assert.Contains(t, res.Message, r.want, r.name)
	}

	approve := contract.ApprovalDecision{CallID: "call_1", Digest: waiting.Digest, Approve: true, By: "slack:U1"}
	res, err := ans.Approve(ctx, run.GetID(), approve)
	require.NoError(t, err)
	assert.Equal(t, contract.AnswerResult{Accepted: true, Message: "write_file approve=true"}, res)

	// The same decision again is the same update: the first outcome, not a second decision.
	res, err = ans.Approve(ctx, run.GetID(), approve)
	require.NoError(t, err)
	assert.True(t, res.Accepted)

	require.NoError(t, ans.Cancel(ctx, run.GetID(), contract.CancelRequest{Reason: "test"}))
	var out string
	require.NoError(t, run.Get(ctx, &out))
	assert.Equal(t, "1 decision: approve=true by slack:U1", out)

	// The session is gone: reaching it fails, which is an error and not a refusal.
	short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
	defer cancelShort()
	_, err = ans.Approve(short, "no-such-workflow", approve)
	assert.ErrorContains(t, err, "no-such-workflow")
}
