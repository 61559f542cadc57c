package escalation

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/keelrun/keel/internal/contract"
)

// TemporalAnswerer delivers answers, cancellations and status queries to AgentSession workflows
// through a Temporal client.
type TemporalAnswerer struct {
	Client client.Client
}

// Answer sends the answer as the session's Update and waits for its outcome, so the sender learns
// whether it won. The update ID is derived from the escalation, the action, the text and the
// person, so a repeated delivery of the same answer (a redelivered click, a bot restart) is
// deduplicated by the server instead of being applied twice. A workflow that rejects the answer
// (validator or handler error) is reported as AnswerResult{Accepted: false}; only a failure to
// reach the workflow is an error.
func (t TemporalAnswerer) Answer(ctx context.Context, workflowID string, a contract.Answer) (contract.AnswerResult, error) {
	return t.AnswerOnce(ctx, workflowID, answerUpdateID(a), a)
}

// AnswerOnce is Answer with the update ID the caller names. A bot that acts on a request with an
// identity of its own (a GitHub comment) names the update after it, so a second delivery of that
// request, even one that finds the session waiting on a newer escalation, is the same update and
// changes nothing.
func (t TemporalAnswerer) AnswerOnce(ctx context.Context, workflowID, updateID string, a contract.Answer) (contract.AnswerResult, error) {
	h, err := t.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		UpdateID:     updateID,
		WorkflowID:   workflowID,
		UpdateName:   contract.UpdateAnswerEscalation,
		Args:         []any{a},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return contract.AnswerResult{}, fmt.Errorf("sending the answer update to %s: %w", workflowID, err)
	}
	return updateResult(ctx, h, workflowID, "answer")
}

// updateResult waits for an update's outcome; a rejection by the workflow is a result, not an
// error.
func updateResult(ctx context.Context, h client.WorkflowUpdateHandle, workflowID, what string) (contract.AnswerResult, error) {
	var res contract.AnswerResult
	if err := h.Get(ctx, &res); err != nil {
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) {
			return contract.AnswerResult{Accepted: false, Message: appErr.Message()}, nil
		}
		return contract.AnswerResult{}, fmt.Errorf("waiting for the %s update of %s: %w", what, workflowID, err)
	}
	return res, nil
}

// Approve sends the approve_call Update and waits for its outcome. The session's validator
// accepts only a decision on the call waiting right now, with the digest of its exact arguments,
// and only once; a refusal comes back as AnswerResult{Accepted: false} with the reason, and only a
// failure to reach the workflow is an error. The update ID is derived from the decision, so the
// same decision delivered twice is one update.
func (t TemporalAnswerer) Approve(ctx context.Context, workflowID string, d contract.ApprovalDecision) (contract.AnswerResult, error) {
	return t.ApproveOnce(ctx, workflowID, approveUpdateID(d), d)
}

// ApproveOnce is Approve with the update ID the caller names (see AnswerOnce).
func (t TemporalAnswerer) ApproveOnce(ctx context.Context, workflowID, updateID string, d contract.ApprovalDecision) (contract.AnswerResult, error) {
	h, err := t.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		UpdateID:     updateID,
		WorkflowID:   workflowID,
		UpdateName:   contract.UpdateApproveCall,
		Args:         []any{d},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return contract.AnswerResult{}, fmt.Errorf("sending the approval update to %s: %w", workflowID, err)
	}
	return updateResult(ctx, h, workflowID, "approval")
}

// Cancel sends the cancel signal: the session stops its work and ends as cancelled.
func (t TemporalAnswerer) Cancel(ctx context.Context, workflowID string, req contract.CancelRequest) error {
	if err := t.Client.SignalWorkflow(ctx, workflowID, "", contract.SignalCancel, req); err != nil {
		return fmt.Errorf("sending the cancel signal to %s: %w", workflowID, err)
	}
	return nil
}

// Say sends a person's message as the session's say update and waits until the session took it
// (or refused it, with the reason, when it has ended or the text is empty or too long). The SDK
// gives the update one ID for all its own retries, so the message is added once.
func (t TemporalAnswerer) Say(ctx context.Context, workflowID string, m contract.Say) (contract.SayResult, error) {
	return t.SayOnce(ctx, workflowID, "", m)
}

// SayOnce is Say with the update ID the caller names (see AnswerOnce), so a message delivered
// twice is added once; an empty ID lets the SDK choose one.
func (t TemporalAnswerer) SayOnce(ctx context.Context, workflowID, updateID string, m contract.Say) (contract.SayResult, error) {
	h, err := t.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		UpdateID:     updateID,
		WorkflowID:   workflowID,
		UpdateName:   contract.UpdateSay,
		Args:         []any{m},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return contract.SayResult{}, fmt.Errorf("sending the say update to %s: %w", workflowID, err)
	}
	var res contract.SayResult
	if err := h.Get(ctx, &res); err != nil {
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) {
			return contract.SayResult{Message: appErr.Message()}, nil
		}
		return contract.SayResult{}, fmt.Errorf("waiting for the say update of %s: %w", workflowID, err)
	}
	return res, nil
}

// Status asks the session where it is. A session that has ended is read from its history, so no
// worker needs to run to say how it ended.
func (t TemporalAnswerer) Status(ctx context.Context, workflowID string) (contract.SessionStatus, error) {
	if sum, ended, err := t.Ended(ctx, workflowID); err != nil {
		return contract.SessionStatus{}, err
	} else if ended {
		return contract.SessionStatus{
			Status: sum.Status, Turn: sum.Turns, Usage: sum.Usage, Events: sum.Events,
			Counters: contract.Counters{ToolCalls: sum.ToolCalls, BlockedCalls: sum.BlockedCalls, GatewayCalls: sum.GatewayCalls, GatewayAttempts: sum.GatewayAttempts},
		}, nil
	}
	v, err := t.Client.QueryWorkflow(ctx, workflowID, "", contract.QueryStatus)
	if err != nil {
		return contract.SessionStatus{}, fmt.Errorf("querying the status of %s: %w", workflowID, err)
	}
	var st contract.SessionStatus
	if err := v.Get(&st); err != nil {
		return contract.SessionStatus{}, fmt.Errorf("decoding the status of %s: %w", workflowID, err)
	}
	return st, nil
}

// answerUpdateID names an answer so that the same answer sent twice is one update.
func answerUpdateID(a contract.Answer) string {
	return "answer/" + a.EscalationID + "/" + contract.Digest(a.Action + "\x00" + a.Text + "\x00" + a.By)[:16]
}

// approveUpdateID names a decision so that the same decision sent twice is one update.
func approveUpdateID(d contract.ApprovalDecision) string {
	return "approve/" + d.CallID + "/" + contract.Digest(fmt.Sprintf("%s\x00%t\x00%s", d.Digest, d.Approve, d.By))[:16]
}

// Ended reads how a session ended from its history, with no worker involved; ended is false while
// it runs. A session terminated or timed out by Temporal has no summary and is an error naming that.
func (t TemporalAnswerer) Ended(ctx context.Context, workflowID string) (sum contract.Summary, ended bool, err error) {
	d, err := t.Client.DescribeWorkflow(ctx, workflowID, "")
	if err != nil {
		return sum, false, fmt.Errorf("querying the status of %s: %w", workflowID, err)
	}
	status := d.RawResponse.GetWorkflowExecutionInfo().GetStatus()
	if status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return sum, false, nil
	}
	err = t.Client.GetWorkflow(ctx, workflowID, "").Get(ctx, &sum)
	if s, ok := contract.EndedSummary(err); ok {
		return s, true, nil
	}
	if err != nil {
		return sum, true, fmt.Errorf("session %s ended %s without a summary: %w", workflowID, status, err)
	}
	return sum, true, nil
}

// TaskMemo is the memo key the starter writes a session's task under (shortened), so a listing
// shows it without reading each session's history.
const TaskMemo = "task"

// SessionsQuery is the visibility query that lists sessions only: AgentSession workflows, not
// their AgentTurn children, and not the runs a session closed by continuing as new. status, when
// set, narrows it to one ListStatuses value.
func SessionsQuery(status string) string {
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus != 'ContinuedAsNew'", contract.SessionWorkflow)
	switch status {
	case "":
	case contract.StatusRunning, contract.StatusWaiting:
		q += fmt.Sprintf(" AND ExecutionStatus = 'Running' AND %s = '%s'", contract.StatusKey.GetName(), status)
	case StatusTerminated:
		q += " AND ExecutionStatus = 'Terminated'"
	case StatusTimedOut:
		q += " AND ExecutionStatus = 'TimedOut'"
	default:
		q += fmt.Sprintf(" AND %s = '%s'", contract.StatusKey.GetName(), status)
	}
	return q
}

// Statuses of a session that Temporal ended without Keel's say: its KeelStatus is still the last
// one it set.
const (
	StatusTerminated = "terminated"
	StatusTimedOut   = "timed_out"
)

// ListStatuses are the statuses a listing can filter by.
var ListStatuses = []string{
	contract.StatusRunning, contract.StatusWaiting, contract.StatusCompleted, contract.StatusFailed,
	contract.StatusCancelled, contract.StatusLimit, contract.StatusAborted, StatusTerminated, StatusTimedOut,
}

// SessionRow is one session in a listing.
type SessionRow struct {
	WorkflowID string    `json:"workflow_id"`
	Status     string    `json:"status"`
	Task       string    `json:"task"`
	Turns      int64     `json:"turns"`
	Tokens     int64     `json:"tokens"`
	Started    time.Time `json:"started"`
	// Waiting names what a waiting session waits on a person for: an escalation or an approval.
	Waiting string `json:"waiting,omitempty"`
}

// Sessions lists up to limit sessions (running ones first, then the most recently closed, as the
// server orders them) with status, when set, one of ListStatuses. A waiting session is asked what
// it waits for, one query each.
func (t TemporalAnswerer) Sessions(ctx context.Context, status string, limit int) ([]SessionRow, error) {
	resp, err := t.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: int32(limit), Query: SessionsQuery(status)})
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	var rows []SessionRow
	for _, ex := range resp.GetExecutions() {
		if len(rows) == limit {
			break
		}
		r := t.row(ctx, ex)
		if r.Status == contract.StatusWaiting {
			if st, err := t.Status(ctx, r.WorkflowID); err == nil {
				r.Waiting = WaitingOn(st)
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// row reads one listed execution: its search attributes, and its task from the memo (or, for a
// session started before the starter wrote one, from its summary in the Web UI's user metadata).
func (t TemporalAnswerer) row(ctx context.Context, ex *workflowpb.WorkflowExecutionInfo) SessionRow {
	dc := converter.GetDefaultDataConverter()
	r := SessionRow{WorkflowID: ex.GetExecution().GetWorkflowId(), Started: ex.GetStartTime().AsTime(), Status: contract.StatusRunning}
	fields := ex.GetSearchAttributes().GetIndexedFields()
	_ = dc.FromPayload(fields[contract.StatusKey.GetName()], &r.Status)
	_ = dc.FromPayload(fields[contract.TurnsKey.GetName()], &r.Turns)
	_ = dc.FromPayload(fields[contract.TokensKey.GetName()], &r.Tokens)
	switch ex.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		r.Status = StatusTerminated
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		r.Status = StatusTimedOut
	}
	if p, ok := ex.GetMemo().GetFields()[TaskMemo]; ok {
		_ = dc.FromPayload(p, &r.Task)
	} else if d, err := t.Client.DescribeWorkflow(ctx, r.WorkflowID, ex.GetExecution().GetRunId()); err == nil {
		_ = dc.FromPayload(d.RawResponse.GetExecutionConfig().GetUserMetadata().GetSummary(), &r.Task)
	}
	return r
}

// WaitingOn says what a session waits on a person for, or "" when it waits for nobody.
func WaitingOn(st contract.SessionStatus) string {
	switch e, a := st.Escalation, st.Approval; {
	case e != nil && e.Answer == nil && len(e.Choices) > 0:
		return fmt.Sprintf("escalation %s (%s)", e.ID, Reason(e.Reason))
	case a != nil:
		return fmt.Sprintf("approval of %s (call %s)", a.Tool, a.CallID)
	}
	return ""
}

// PendingSession is a running session that waits on a person, with its status.
type PendingSession struct {
	WorkflowID string
	Status     contract.SessionStatus
}

// Pending lists the running sessions that wait on a person: an escalation to answer or a tool
// call to approve.
func (t TemporalAnswerer) Pending(ctx context.Context) ([]PendingSession, error) {
	resp, err := t.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("%s AND %s = true AND ExecutionStatus = 'Running'", SessionsQuery(""), contract.PendingEscalationKey.GetName()),
	})
	if err != nil {
		return nil, fmt.Errorf("listing sessions waiting on a person: %w", err)
	}
	var out []PendingSession
	for _, ex := range resp.GetExecutions() {
		id := ex.GetExecution().GetWorkflowId()
		st, err := t.Status(ctx, id)
		if err != nil || WaitingOn(st) == "" {
			continue
		}
		out = append(out, PendingSession{WorkflowID: id, Status: st})
	}
	return out, nil
}
