package githubbot

import (
	"context"
	"fmt"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/session"
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

// answerer is the bots' adapter over the session client: a session's refusal comes back as a
// result carrying its reason, which the bot replies with.
func (t TemporalSessions) answerer() session.TemporalAnswerer {
	return session.TemporalAnswerer{Client: t.Client}
}

// Status asks the session where it is.
func (t TemporalSessions) Status(ctx context.Context, workflowID string) (contract.SessionStatus, error) {
	return t.answerer().Status(ctx, workflowID)
}

// Answer sends the answer update under updateID.
func (t TemporalSessions) Answer(ctx context.Context, workflowID, updateID string, a contract.Answer) (contract.AnswerResult, error) {
	return t.answerer().AnswerAs(ctx, workflowID, updateID, a)
}

// Approve sends the approve_call update under updateID.
func (t TemporalSessions) Approve(ctx context.Context, workflowID, updateID string, d contract.ApprovalDecision) (contract.AnswerResult, error) {
	return t.answerer().ApproveAs(ctx, workflowID, updateID, d)
}

// Say sends the say update under updateID.
func (t TemporalSessions) Say(ctx context.Context, workflowID, updateID string, m contract.Say) (contract.SayResult, error) {
	return t.answerer().SayAs(ctx, workflowID, updateID, m)
}
