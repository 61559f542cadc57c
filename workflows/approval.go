package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
)

const defaultApprovalTimeout = 10 * time.Minute

// awaitApproval waits for a person to approve or deny one tool call, up to the approval timeout;
// no answer is a denial. It returns the decision (nil when none came), or a final summary when the
// session was cancelled or ran out of time meanwhile.
func (s *session) awaitApproval(ctx workflow.Context, a contract.Approval, durationLimit workflow.Future) (*contract.ApprovalDecision, contract.Summary, bool) {
	timeout := s.in.Policy.ApprovalTimeout.Std()
	if timeout <= 0 {
		timeout = defaultApprovalTimeout
	}
	a.Deadline = workflow.Now(ctx).Add(timeout)
	s.approval, s.decision = &a, nil
	s.status = contract.StatusWaiting
	s.upsertSearch(ctx)
	s.setWaitingDetails(ctx, fmt.Sprintf("waiting for approval of `%s` (call `%s`)", a.Tool, a.CallID), approvalHelp(workflow.GetInfo(ctx).WorkflowExecution.ID, a))
	s.addEvent(ctx, contract.Event{Event: contract.EventApproval, Turn: s.state.Turns, Tool: a.Tool, CallID: a.CallID, Arguments: a.Arguments,
		Text: fmt.Sprintf("%s %s waits for approval (digest %s)", a.Tool, clip(a.Arguments, 120), a.Digest[:12])})

	chainCtx, stopChain := workflow.WithCancel(ctx)
	s.notifyChain(chainCtx, s.approvalNotice(ctx, a))
	_, _ = workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{
		Timeout:      timeout,
		TimerOptions: workflow.TimerOptions{Summary: "approval deadline for " + a.Tool},
	}, func() bool {
		return s.decision != nil || s.cancelReq != nil || (durationLimit != nil && durationLimit.IsReady())
	})
	stopChain()
	dec := s.decision
	s.approval, s.decision = nil, nil
	s.status = contract.StatusRunning
	s.upsertSearch(ctx)
	s.setDetails(ctx, fmt.Sprintf("approval of %s %s decided", a.Tool, a.CallID))
	switch {
	case s.cancelReq != nil || ctx.Err() != nil:
		return nil, s.cancelledSummary(ctx, ""), true
	case dec == nil && durationLimit != nil && durationLimit.IsReady():
		return nil, s.limitSummary(ctx, contract.LimitDuration), true
	}
	verdict := "denied (no answer before the deadline)"
	if dec != nil && dec.Approve {
		verdict = "approved by " + dec.By
	} else if dec != nil {
		verdict = "denied by " + dec.By
	}
	s.addEvent(ctx, contract.Event{Event: contract.EventAnswer, Turn: s.state.Turns, Tool: a.Tool, CallID: a.CallID, Text: a.Tool + " " + verdict})
	return dec, contract.Summary{}, false
}

// approvalNotice is what the escalation channels are sent about a call waiting for approval. Its
// ID names the call, so notices stay idempotent per call.
func (s *session) approvalNotice(ctx workflow.Context, a contract.Approval) contract.Escalation {
	info := workflow.GetInfo(ctx)
	return contract.Escalation{
		ID:         "apr-" + contract.Digest(info.WorkflowExecution.ID + "/" + a.CallID)[:12],
		WorkflowID: info.WorkflowExecution.ID,
		Reason:     contract.ReasonApproval,
		Summary:    fmt.Sprintf("%s waits for approval", a.Tool),
		Calls:      []contract.ToolCall{{ID: a.CallID, Name: a.Tool, Arguments: a.Arguments}},
		Link:       uiLink(s.in.Escalation.UIBase, info.Namespace, info.WorkflowExecution.ID),
		Choices:    []string{contract.ActionApprove, contract.ActionDeny},
		Deadline:   a.Deadline,
		Approval:   &a,
	}
}

// validateApproval accepts a decision only for the call waiting right now, with the digest of its
// exact arguments: an approval can never approve a different call or be replayed later.
func (s *session) validateApproval(d contract.ApprovalDecision) error {
	a := s.approval
	switch {
	case a == nil:
		return errors.New("no tool call is waiting for approval")
	case s.decision != nil:
		return temporal.NewApplicationError(fmt.Sprintf("call %s was already decided", a.CallID), contract.RefusalAlreadyAnswered)
	case d.CallID != a.CallID:
		return fmt.Errorf("stale approval: call %q is not the one waiting (%s)", d.CallID, a.CallID)
	case d.Digest != a.Digest:
		return fmt.Errorf("mismatched approval: the digest does not match the arguments of call %s", a.CallID)
	case len(d.Reason) > contract.MaxDenyReason:
		return fmt.Errorf("the reason is %d bytes; at most %d reach the model", len(d.Reason), contract.MaxDenyReason)
	}
	return nil
}

func (s *session) decide(d contract.ApprovalDecision) (contract.AnswerResult, error) {
	if err := s.validateApproval(d); err != nil {
		return contract.AnswerResult{}, err
	}
	s.decision = &d
	verdict := "denied"
	if d.Approve {
		verdict = "approved"
	}
	return contract.AnswerResult{Accepted: true, Message: fmt.Sprintf("%s %s", s.approval.Tool, verdict)}, nil
}
