package session

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/keelrun/keel/internal/contract"
)

// taskMemo is the memo key Start writes a session's task under, so a listing shows it without
// reading each session's history.
const taskMemo = "task"

// Statuses of a session that Temporal ended without Keel's say: its KeelStatus is still the last
// one it set.
const (
	StatusTerminated = "terminated"
	StatusTimedOut   = "timed_out"
)

// ListStatuses are the statuses a listing can filter by.
var ListStatuses = []string{
	contract.StatusRunning, contract.StatusWaiting, contract.StatusWaitingReset, contract.StatusCompleted, contract.StatusFailed,
	contract.StatusCancelled, contract.StatusLimit, contract.StatusAborted, StatusTerminated, StatusTimedOut,
}

// Query is the visibility query that lists sessions only: AgentSession workflows, not their
// AgentTurn children, and not the runs a session closed by continuing as new. status, when set,
// narrows it to one ListStatuses value.
func Query(status string) string {
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus != 'ContinuedAsNew'", contract.SessionWorkflow)
	switch status {
	case "":
	case contract.StatusRunning, contract.StatusWaiting, contract.StatusWaitingReset:
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

// Row is one session in a listing.
type Row struct {
	WorkflowID string    `json:"workflow_id"`
	Status     string    `json:"status"`
	Task       string    `json:"task"`
	Turns      int64     `json:"turns"`
	Tokens     int64     `json:"tokens"`
	Started    time.Time `json:"started"`
	// Waiting names what a waiting session waits on a person for (an escalation or an approval),
	// in words the caller chooses: List leaves it empty.
	Waiting string `json:"waiting,omitempty"`
}

// List lists up to limit sessions (running ones first, then the most recently closed, as the
// server orders them) with status, when set, one of ListStatuses.
func (c Client) List(ctx context.Context, status string, limit int) ([]Row, error) {
	resp, err := c.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: int32(limit), Query: Query(status)})
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	var rows []Row
	for _, ex := range resp.GetExecutions() {
		if len(rows) == limit {
			break
		}
		rows = append(rows, c.row(ctx, ex))
	}
	return rows, nil
}

// row reads one listed execution: its search attributes, and its task from the memo (or, for a
// session started before the starter wrote one, from its summary in the Web UI's user metadata).
func (c Client) row(ctx context.Context, ex *workflowpb.WorkflowExecutionInfo) Row {
	dc := converter.GetDefaultDataConverter()
	r := Row{WorkflowID: ex.GetExecution().GetWorkflowId(), Started: ex.GetStartTime().AsTime(), Status: contract.StatusRunning}
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
	if p, ok := ex.GetMemo().GetFields()[taskMemo]; ok {
		_ = dc.FromPayload(p, &r.Task)
	} else if d, err := c.Temporal.DescribeWorkflow(ctx, r.WorkflowID, ex.GetExecution().GetRunId()); err == nil {
		_ = dc.FromPayload(d.RawResponse.GetExecutionConfig().GetUserMetadata().GetSummary(), &r.Task)
	}
	return r
}

// AwaitsAnswer reports whether e is an escalation waiting for a person's answer: open, with
// choices (a notice that only tells people of a failure has none).
func AwaitsAnswer(e *contract.Escalation) bool {
	return e != nil && e.Answer == nil && len(e.Choices) > 0
}

// WaitsOnPerson reports whether a session with this status waits on a person: an escalation to
// answer or a tool call to approve.
func WaitsOnPerson(st contract.SessionStatus) bool {
	return AwaitsAnswer(st.Escalation) || st.Approval != nil
}

// Pending is a running session that waits on a person, with its status.
type Pending struct {
	WorkflowID string
	Status     contract.SessionStatus
}

// Pending lists the running sessions that wait on a person: an escalation to answer or a tool
// call to approve. Each candidate is asked its status, one query each.
func (c Client) Pending(ctx context.Context) ([]Pending, error) {
	resp, err := c.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("%s AND %s = true AND ExecutionStatus = 'Running'", Query(""), contract.PendingEscalationKey.GetName()),
	})
	if err != nil {
		return nil, fmt.Errorf("listing sessions waiting on a person: %w", err)
	}
	var out []Pending
	for _, ex := range resp.GetExecutions() {
		id := ex.GetExecution().GetWorkflowId()
		st, err := c.Status(ctx, id)
		if err != nil || !WaitsOnPerson(st) {
			continue
		}
		out = append(out, Pending{WorkflowID: id, Status: st})
	}
	return out, nil
}
