package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/toolspec"
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
		if dec.AllowFor != "" && s.takes(ctx, versionAllowSession) {
			// The marker only where a person allowed more: decisions before it replay as they ran.
			verdict += ", " + s.allow(allowanceFor(a, *dec))
		}
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
	case d.AllowFor != "" && d.AllowFor != contract.AllowTool && d.AllowFor != contract.AllowCommand:
		return fmt.Errorf("allow_for is %q; it is %q or %q", d.AllowFor, contract.AllowTool, contract.AllowCommand)
	case d.AllowFor != "" && !d.Approve:
		return errors.New("allow_for goes with an approval: a denied call allows nothing")
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
		if d.AllowFor != "" {
			verdict += "; " + describeAllowance(allowanceFor(*s.approval, d)) + " from now on in this session"
		}
	}
	return contract.AnswerResult{Accepted: true, Message: fmt.Sprintf("%s %s", s.approval.Tool, verdict)}, nil
}

// allowanceFor is what a decision allows beyond its call: the tool, or for run_command with
// AllowCommand its exact command text.
func allowanceFor(a contract.Approval, d contract.ApprovalDecision) contract.Allowance {
	al := contract.Allowance{Tool: a.Tool, By: d.By}
	if d.AllowFor == contract.AllowCommand && a.Tool == toolspec.RunCommand {
		al.Command = commandOf(a.Arguments)
	}
	return al
}

// commandOf is a run_command call's command text; "" when its arguments do not parse (they passed
// the schema, so they do), which then allows nothing narrower than the call could.
func commandOf(args string) string {
	var c toolspec.RunCommandArgs
	if json.Unmarshal([]byte(args), &c) != nil {
		return ""
	}
	return c.Command
}

// allow adds an allowance to the session's guards, which every later turn reads and which
// continue-as-new carries, and says what it allows. An allowance already covered by one held is
// not added twice; past MaxAllowances nothing more is added, and the call alone was approved.
func (s *session) allow(al contract.Allowance) string {
	if covering(s.state.Allowed, al.Tool, al.Command) == nil {
		if len(s.state.Allowed) >= contract.MaxAllowances {
			return fmt.Sprintf("not allowed for the session: it holds %d allowances already", contract.MaxAllowances)
		}
		s.state.Allowed = append(s.state.Allowed, al)
	}
	return "and " + describeAllowance(al) + " for the rest of the session"
}

// covering is the first allowance that lets a call of tool with command (run_command's text,
// else "") run without asking, or nil.
func covering(allowed []contract.Allowance, tool, command string) *contract.Allowance {
	for i, al := range allowed {
		if al.Tool == tool && (al.Command == "" || al.Command == command) {
			return &allowed[i]
		}
	}
	return nil
}

// describeAllowance says what an allowance lets through, as people read it.
func describeAllowance(al contract.Allowance) string {
	if al.Command != "" {
		return fmt.Sprintf("%s of exactly `%s` allowed", al.Tool, clip(al.Command, 200))
	}
	return "every " + al.Tool + " call allowed"
}
