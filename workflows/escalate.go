package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/metrics/record"
)

const defaultEscalationDeadline = 30 * time.Minute

// escalate stops the session to ask a person, notifies the channels in order across the deadline,
// and applies the first valid answer (or the default action at the deadline). The session's
// duration limit still holds while it waits. It returns a final summary when the session ends.
func (s *session) escalate(ctx workflow.Context, req *contract.EscalationRequest, durationLimit workflow.Future) (contract.Summary, bool) {
	e := s.openEscalation(ctx, req, []string{contract.ActionRetry, contract.ActionEdit, contract.ActionAbort})
	s.status = contract.StatusWaiting
	s.upsertSearch(ctx)
	s.setWaitingDetails(ctx, "waiting on a person: "+req.Reason, escalationHelp(*e))

	chainCtx, stopChain := workflow.WithCancel(ctx)
	s.notifyChain(chainCtx, *e)
	deadline := e.Deadline.Sub(workflow.Now(ctx))
	answered, _ := workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{
		Timeout:      deadline,
		TimerOptions: workflow.TimerOptions{Summary: fmt.Sprintf("escalation %s deadline", e.ID)},
	}, func() bool {
		return e.Answer != nil || s.cancelReq != nil || (durationLimit != nil && durationLimit.IsReady())
	})
	stopChain()
	record.EscalationClosed(workflow.GetMetricsHandler(ctx))

	if s.cancelReq != nil || ctx.Err() != nil {
		return s.cancelledSummary(ctx, ""), true
	}
	if e.Answer == nil && durationLimit != nil && durationLimit.IsReady() {
		return s.limitSummary(ctx, contract.LimitDuration), true
	}
	if !answered {
		e.Answer = &contract.Answer{EscalationID: e.ID, Action: s.defaultAction(), By: answeredByDeadline, Via: "timer"}
	}
	s.status = contract.StatusRunning
	s.upsertSearch(ctx)
	s.setDetails(ctx, fmt.Sprintf("escalation %s answered %s", e.ID, e.Answer.Action))
	s.addEvent(ctx, contract.Event{Event: contract.EventAnswer, Escalation: e, Text: answerText(e.Answer)})
	return s.apply(ctx, e)
}

// apply carries out an answer: abort ends the session, retry resets the counters that tripped,
// edit also puts the person's text in front of the model.
func (s *session) apply(ctx workflow.Context, e *contract.Escalation) (contract.Summary, bool) {
	a := e.Answer
	note := fmt.Sprintf("[keel] escalation %s (%s): %s.", e.ID, e.Reason, answerText(a))
	switch a.Action {
	case contract.ActionAbort:
		s.state.Pending = append(s.state.Pending, contract.Message{Role: contract.RoleUser, Note: "escalation", Content: note + " The session ended here."})
		sum := s.summary(ctx, contract.StatusAborted, "")
		sum.Reason = fmt.Sprintf("aborted after escalation %s (%s): %s", e.ID, answerText(a), e.Summary)
		return sum, true
	case contract.ActionEdit:
		s.state.Pending = append(s.state.Pending, contract.Message{Role: contract.RoleUser, Note: "escalation", Content: contract.PersonPrefix + a.Text})
	}
	s.state.Repairs = nil
	s.state.Rejected = nil
	s.state.Repeat = contract.RepeatState{}
	return contract.Summary{}, false
}

func (s *session) defaultAction() string {
	if s.in.Escalation.DefaultAction == contract.ActionRetry {
		return contract.ActionRetry
	}
	return contract.ActionAbort
}

// openEscalation creates the record a person decides on.
func (s *session) openEscalation(ctx workflow.Context, req *contract.EscalationRequest, choices []string) *contract.Escalation {
	s.escalSeq++
	info := workflow.GetInfo(ctx)
	now := workflow.Now(ctx)
	deadline := s.in.Escalation.Deadline.Std()
	if deadline <= 0 {
		deadline = defaultEscalationDeadline
	}
	e := &contract.Escalation{
		ID:            escalationID(info.WorkflowExecution.ID, info.WorkflowExecution.RunID, s.escalSeq),
		WorkflowID:    info.WorkflowExecution.ID,
		Reason:        req.Reason,
		Class:         req.Class,
		Summary:       s.treePrefix() + req.Summary,
		Tried:         req.Tried,
		Attempts:      req.Attempts,
		LastError:     req.LastError,
		Calls:         req.Calls,
		SpentMS:       now.Sub(s.state.StartedAt).Milliseconds(),
		Link:          uiLink(s.in.Escalation.UIBase, info.Namespace, info.WorkflowExecution.ID),
		GitHub:        s.in.GitHub,
		Choices:       choices,
		Deadline:      now.Add(deadline),
		DefaultAction: s.defaultAction(),
	}
	s.escalation = e
	record.EscalationRaised(workflow.GetMetricsHandler(ctx), req.Reason)
	s.addEvent(ctx, contract.Event{Event: contract.EventEscalation, Escalation: e, Text: e.Summary, Turn: s.state.Turns})
	return e
}

// raiseNotice records a surfaced gateway failure that a person should know about (budget, retries
// exhausted) and notifies the channels. The session does not wait: the failure is final.
func (s *session) raiseNotice(ctx workflow.Context, f *contract.Failure) {
	reason := ""
	switch f.Class {
	case contract.ClassBudget:
		reason = contract.ReasonBudget
	case contract.ClassTransport, contract.ClassThrottle, contract.ClassSchema:
		reason = contract.ReasonGatewayRetries
	default:
		return
	}
	e := s.openEscalation(ctx, &contract.EscalationRequest{
		Reason: reason, Class: f.Class, Summary: f.Reason, Attempts: f.Attempts, LastError: f.Reason,
		Tried: []string{fmt.Sprintf("%d attempt(s) of the model call", f.Attempts)},
	}, nil)
	record.EscalationClosed(workflow.GetMetricsHandler(ctx))
	for _, ch := range s.in.Escalation.Channels {
		s.notify(ctx, ch, *e)
	}
}

// notifyChain sends the escalation to the configured channels in order: the first at once, the
// rest spread evenly over the deadline, each behind a timer that shows in the Web UI.
func (s *session) notifyChain(ctx workflow.Context, e contract.Escalation) {
	channels := s.in.Escalation.Channels
	if len(channels) == 0 {
		return
	}
	step := e.Deadline.Sub(workflow.Now(ctx)) / time.Duration(len(channels))
	workflow.Go(ctx, func(ctx workflow.Context) {
		for i, ch := range channels {
			if i > 0 {
				t := workflow.NewTimerWithOptions(ctx, step, workflow.TimerOptions{Summary: "escalation chain: next notify " + ch})
				if t.Get(ctx, nil) != nil {
					return
				}
			}
			s.notify(ctx, ch, e)
		}
	})
}

// notify sends one notice through the retryable, idempotent notice activity.
func (s *session) notify(ctx workflow.Context, channel string, e contract.Escalation) {
	actx := workflow.WithActivityOptions(ctx, notifyOptions(channel))
	err := workflow.ExecuteActivity(actx, contract.NotifyActivity, contract.NotifyRequest{Channel: channel, Escalation: e}).Get(actx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Warn("escalation notice failed", "channel", channel, "error", err)
	}
}

func uiLink(base, namespace, workflowID string) string {
	if base == "" {
		return ""
	}
	return fmt.Sprintf("%s/namespaces/%s/workflows/%s", base, namespace, workflowID)
}

// escalationID is unique across sessions (notices are idempotent by it) and short enough to type:
// run IDs are time-ordered, so their prefixes repeat for sessions started together; a digest of
// the whole execution does not.
func escalationID(workflowID, runID string, seq int) string {
	return fmt.Sprintf("esc-%s-%d", contract.Digest(workflowID + "/" + runID)[:8], seq)
}
