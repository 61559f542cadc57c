package githubbot

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/contract"
)

// Sessions finds the sessions working on a pull request and steers them. Every change names its
// update ID, so one comment is one update however often it is delivered.
type Sessions interface {
	// OnPullRequest lists the running sessions whose KeelPullRequest is pr (owner/name#N).
	OnPullRequest(ctx context.Context, pr string) ([]string, error)
	Status(ctx context.Context, workflowID string) (contract.SessionStatus, error)
	Answer(ctx context.Context, workflowID, updateID string, a contract.Answer) (contract.AnswerResult, error)
	Approve(ctx context.Context, workflowID, updateID string, d contract.ApprovalDecision) (contract.AnswerResult, error)
	Say(ctx context.Context, workflowID, updateID string, m contract.Say) (contract.SayResult, error)
}

// MaxSessionsPerPR bounds how many sessions of one pull request a command reaches.
const MaxSessionsPerPR = 50

// TemporalSessions is Sessions over a Temporal client.
type TemporalSessions struct {
	Client client.Client
}

// PullRequestQuery is the visibility query for the running sessions of a pull request.
func PullRequestQuery(pr string) string {
	return fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND %s = '%s'",
		contract.SessionWorkflow, contract.PullRequestKey.GetName(), pr)
}

// OnPullRequest lists the running sessions of pr, up to MaxSessionsPerPR.
func (t TemporalSessions) OnPullRequest(ctx context.Context, pr string) ([]string, error) {
	resp, err := t.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: MaxSessionsPerPR, Query: PullRequestQuery(pr)})
	if err != nil {
		return nil, fmt.Errorf("listing the sessions of %s: %w", pr, err)
	}
	var ids []string
	for _, ex := range resp.GetExecutions() {
		ids = append(ids, ex.GetExecution().GetWorkflowId())
	}
	return ids, nil
}

// Status asks the session where it is.
func (t TemporalSessions) Status(ctx context.Context, workflowID string) (contract.SessionStatus, error) {
	return escalation.TemporalAnswerer{Client: t.Client}.Status(ctx, workflowID)
}

// Answer sends the answer update under updateID.
func (t TemporalSessions) Answer(ctx context.Context, workflowID, updateID string, a contract.Answer) (contract.AnswerResult, error) {
	var res contract.AnswerResult
	msg, err := t.update(ctx, workflowID, updateID, contract.UpdateAnswerEscalation, a, &res)
	if msg != "" {
		return contract.AnswerResult{Message: msg}, nil
	}
	return res, err
}

// Approve sends the approve_call update under updateID.
func (t TemporalSessions) Approve(ctx context.Context, workflowID, updateID string, d contract.ApprovalDecision) (contract.AnswerResult, error) {
	var res contract.AnswerResult
	msg, err := t.update(ctx, workflowID, updateID, contract.UpdateApproveCall, d, &res)
	if msg != "" {
		return contract.AnswerResult{Message: msg}, nil
	}
	return res, err
}

// Say sends the say update under updateID.
func (t TemporalSessions) Say(ctx context.Context, workflowID, updateID string, m contract.Say) (contract.SayResult, error) {
	var res contract.SayResult
	msg, err := t.update(ctx, workflowID, updateID, contract.UpdateSay, m, &res)
	if msg != "" {
		return contract.SayResult{Message: msg}, nil
	}
	return res, err
}

// update sends one update and waits for its outcome into out. A session's refusal (its
// validator or handler failed the update) comes back as refused, the session's reason; only a
// failure to reach the session is an error.
func (t TemporalSessions) update(ctx context.Context, workflowID, updateID, name string, arg, out any) (refused string, err error) {
	h, err := t.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		UpdateID: updateID, WorkflowID: workflowID, UpdateName: name, Args: []any{arg},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, out)
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message(), nil
	}
	if err != nil {
		return "", fmt.Errorf("sending the %s update to %s: %w", name, workflowID, err)
	}
	return "", nil
}
