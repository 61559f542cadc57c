package session

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
)

// CancelOutcome is what CancelOrEnd did.
type CancelOutcome int

const (
	// CancelEnded: the session took the cancel and ended within the bound.
	CancelEnded CancelOutcome = iota
	// CancelTaken: a worker took the cancel; the session is still ending (a tool winding down).
	CancelTaken
	// TerminatedNeverTaken: no worker had ever started the session, so it was terminated at once:
	// the cancel signal would wait for a worker as long as the session does.
	TerminatedNeverTaken
	// TerminatedNotTaken: no worker took the cancel within the bound, so it was terminated.
	TerminatedNotTaken
)

// Cancelled is what CancelOrEnd did, with a sentence saying it.
type Cancelled struct {
	Outcome CancelOutcome
	Message string
}

// pollEvery is how often CancelOrEnd looks whether the session ended.
const pollEvery = 200 * time.Millisecond

// CancelOrEnd cancels a session and makes sure it ends. A cancel is a signal the workflow handles,
// so a session no worker ever took (its queue has no worker, or the wrong one) would stay running
// forever with the cancel waiting in its history; such a session is terminated with the reason at
// once. Otherwise the cancel is sent and CancelOrEnd waits up to bound for the session to end; when
// it has not, and no worker has taken the cancel (the workflow task it scheduled never started),
// the session is terminated too. A worker that took it is left to finish what it stops.
func (c Client) CancelOrEnd(ctx context.Context, workflowID string, req contract.CancelRequest, bound time.Duration) (Cancelled, error) {
	taken, err := c.everTaken(ctx, workflowID)
	if err != nil {
		return Cancelled{}, err
	}
	if !taken {
		reason := "cancelled before any worker took the session: " + req.Reason
		if err := c.terminate(ctx, workflowID, reason); err != nil {
			return Cancelled{}, err
		}
		return Cancelled{TerminatedNeverTaken, fmt.Sprintf("session %s was never taken by a worker (no workflow task of it started); terminated it (%s)", workflowID, req.Reason)}, nil
	}
	if err := c.Cancel(ctx, workflowID, req); err != nil {
		return Cancelled{}, err
	}
	deadline := time.Now().Add(bound)
	for {
		d, err := c.Temporal.DescribeWorkflow(ctx, workflowID, "")
		if err != nil {
			return Cancelled{}, fmt.Errorf("describing %s: %w", workflowID, err)
		}
		if st := d.RawResponse.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			said := "ended"
			if sum, _, err := c.Ended(ctx, workflowID); err == nil && sum.Status != "" {
				said = sum.Status
			}
			return Cancelled{CancelEnded, fmt.Sprintf("session %s %s", workflowID, said)}, nil
		}
		if !time.Now().Before(deadline) {
			wt := d.RawResponse.GetPendingWorkflowTask()
			if wt == nil || wt.GetState() == enumspb.PENDING_WORKFLOW_TASK_STATE_STARTED {
				return Cancelled{CancelTaken, fmt.Sprintf("cancel sent to %s; a worker took it and the session is ending: `starter watch %s` shows how it ends", workflowID, workflowID)}, nil
			}
			reason := fmt.Sprintf("no worker took the cancel within %s: %s", textfmt.Duration(bound), req.Reason)
			if err := c.terminate(ctx, workflowID, reason); err != nil {
				return Cancelled{}, err
			}
			queue := d.RawResponse.GetExecutionConfig().GetTaskQueue().GetName()
			return Cancelled{TerminatedNotTaken, fmt.Sprintf("no worker took the cancel of %s within %s (none polls task queue %q); terminated it", workflowID, textfmt.Duration(bound), queue)}, nil
		}
		select {
		case <-ctx.Done():
			return Cancelled{}, ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// everTaken reports whether any worker ever started a workflow task of the session: the third
// event of a taken session's history is its first WorkflowTaskStarted, so this reads a few events.
func (c Client) everTaken(ctx context.Context, workflowID string) (bool, error) {
	it := c.Temporal.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return false, fmt.Errorf("reading the history of %s: %w", workflowID, c.classify(ctx, workflowID, err))
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			return true, nil
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
			enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
			enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
			// An ended run: the cancel reports that it ended.
			return true, nil
		}
	}
	return false, nil
}

// terminate ends a session with reason.
func (c Client) terminate(ctx context.Context, workflowID, reason string) error {
	if err := c.Temporal.TerminateWorkflow(ctx, workflowID, "", reason); err != nil {
		return fmt.Errorf("terminating %s: %w", workflowID, c.classify(ctx, workflowID, err))
	}
	return nil
}
