package githubbot

import (
	"context"
	"fmt"
	"strings"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/contract"
)

// Sessions finds the sessions working on a pull request and steers them. Every change names its
// update ID, so one comment is one update however often it is delivered.
type Sessions interface {
	// OnPullRequest lists the running sessions whose KeelPullRequest is pr (owner/name#N, in any
	// case), at most MaxListed of them, and how many there are in all.
	OnPullRequest(ctx context.Context, pr string) (ids []string, total int, err error)
	Status(ctx context.Context, workflowID string) (contract.SessionStatus, error)
	Answer(ctx context.Context, workflowID, updateID string, a contract.Answer) (contract.AnswerResult, error)
	Approve(ctx context.Context, workflowID, updateID string, d contract.ApprovalDecision) (contract.AnswerResult, error)
	Say(ctx context.Context, workflowID, updateID string, m contract.Say) (contract.SayResult, error)
}

// MaxSessionsPerPR bounds how many sessions of one pull request a command reaches; the reply says
// how many it did not reach and names them.
const MaxSessionsPerPR = 50

// MaxListed bounds how many sessions of a pull request are listed for one command.
const MaxListed = 1000

// TemporalSessions is Sessions over a Temporal client.
type TemporalSessions struct {
	Client client.Client
}

// PullRequestQuery is the visibility query for the running sessions of a pull request. Sessions
// record the pull request in lower case (contract.StartSearchAttributes), as GitHub's names
// ignore case, so the query does too.
func PullRequestQuery(pr string) string {
	return fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND %s = '%s'",
		contract.SessionWorkflow, contract.PullRequestKey.GetName(), strings.ReplaceAll(strings.ToLower(pr), "'", ""))
}

// OnPullRequest lists the running sessions of pr, up to MaxListed, and counts them all.
func (t TemporalSessions) OnPullRequest(ctx context.Context, pr string) ([]string, int, error) {
	q := PullRequestQuery(pr)
	resp, err := t.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: MaxListed, Query: q})
	if err != nil {
		return nil, 0, fmt.Errorf("listing the sessions of %s: %w", pr, err)
	}
	var ids []string
	for _, ex := range resp.GetExecutions() {
		ids = append(ids, ex.GetExecution().GetWorkflowId())
	}
	if len(resp.GetNextPageToken()) == 0 {
		return ids, len(ids), nil
	}
	n, err := t.Client.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: q})
	if err != nil {
		return nil, 0, fmt.Errorf("counting the sessions of %s: %w", pr, err)
	}
	return ids, max(len(ids), int(n.GetCount())), nil
}

// answerer is the bots' adapter over the session client: a session's refusal comes back as a
// result carrying its reason, which the bot replies with.
func (t TemporalSessions) answerer() escalation.TemporalAnswerer {
	return escalation.TemporalAnswerer{Client: t.Client}
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
