package escalation

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/keelrun/keel/contract"
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
	h, err := t.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		UpdateID:     answerUpdateID(a),
		WorkflowID:   workflowID,
		UpdateName:   contract.UpdateAnswerEscalation,
		Args:         []any{a},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return contract.AnswerResult{}, fmt.Errorf("sending the answer update to %s: %w", workflowID, err)
	}
	var res contract.AnswerResult
	if err := h.Get(ctx, &res); err != nil {
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) {
			return contract.AnswerResult{Accepted: false, Message: appErr.Message()}, nil
		}
		return contract.AnswerResult{}, fmt.Errorf("waiting for the answer update of %s: %w", workflowID, err)
	}
	return res, nil
}

// Cancel sends the cancel signal: the session stops its work and ends as cancelled.
func (t TemporalAnswerer) Cancel(ctx context.Context, workflowID string, req contract.CancelRequest) error {
	if err := t.Client.SignalWorkflow(ctx, workflowID, "", contract.SignalCancel, req); err != nil {
		return fmt.Errorf("sending the cancel signal to %s: %w", workflowID, err)
	}
	return nil
}

// Status asks the session where it is, without reading its history.
func (t TemporalAnswerer) Status(ctx context.Context, workflowID string) (contract.SessionStatus, error) {
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
