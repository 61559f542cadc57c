package workflows

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/metrics/record"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// AgentTurn is one turn: one model call, then each requested tool call in order through the gates
// (schema, repeat detection, policy), a single-attempt tool activity, and a feedback message.
func AgentTurn(ctx workflow.Context, in contract.TurnInput) (contract.TurnResult, error) {
	tools, err := toolspec.Join(in.BuiltinTools, in.Tools)
	if err != nil {
		return contract.TurnResult{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.ToolsUnknownErrorType, nil)
	}
	t := &turn{in: in, tools: tools, guards: in.Guards, metrics: workflow.GetMetricsHandler(ctx)}
	t.guards.Repairs, t.guards.Rejected = copyCounts(in.Repairs), slices.Clone(in.Rejected)
	if err := workflow.SetQueryHandlerWithOptions(ctx, contract.QueryTurnStep, func() (contract.TurnStep, error) { return t.step, nil },
		workflow.QueryHandlerOptions{Description: "What the turn runs now: the model call, or a tool call and its arguments, since when"}); err != nil {
		return contract.TurnResult{}, fmt.Errorf("registering the turn's step query: %w", err)
	}
	return t.run(ctx)
}

// turn is the state of one AgentTurn.
type turn struct {
	in contract.TurnInput
	// tools is the whole tool list, resolved from in.BuiltinTools and in.Tools.
	tools []contract.ToolSpec
	res   contract.TurnResult
	// guards are the session's, as this turn changes them (the repair counts and rejected calls
	// are the turn's own copies); the result carries them back.
	guards   contract.Guards
	feedback []contract.Message
	metrics  record.Handler
	// step is what the turn runs now (the step query and the turn's current details).
	step contract.TurnStep
	// children are the sub-agents started by this turn's delegate calls (delegate.go); planned
	// is how many delegate calls its reply holds.
	children []child
	planned  int
}

// stepTo records what the turn runs from now: the model call when call is nil, else that tool call.
// The Web UI shows it as the turn's current details, which cost no action.
func (t *turn) stepTo(ctx workflow.Context, call *contract.ToolCall) {
	t.step = contract.TurnStep{Turn: t.in.Turn, Since: workflow.Now(ctx).UTC()}
	what := "calling the model"
	if call != nil {
		t.step.Tool, t.step.CallID, t.step.Arguments = call.Name, call.ID, call.Arguments
		what = fmt.Sprintf("running %s %s", call.Name, clip(call.Arguments, 200))
	}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("**turn %d: %s** (since %s)", t.in.Turn, what, t.step.Since.Format(time.TimeOnly+" MST")))
}

func (t *turn) run(ctx workflow.Context) (contract.TurnResult, error) {
	if len(t.in.Resume) > 0 {
		return t.resume(ctx)
	}
	resp, err := t.callModel(ctx)
	if errors.Is(err, errTurnCancelled) {
		t.res.Cancelled = true
		return t.res, nil
	}
	if err != nil {
		return t.res, err
	}
	if t.res.Failure != nil {
		return t.res, nil
	}
	t.res.Head = resp.Head
	calls := resp.Message.ToolCalls
	if len(calls) == 0 {
		t.res.Final = true
		t.res.Answer = resp.Message.Content
		return t.finish(), nil
	}
	return t.runCalls(ctx, calls)
}

// resume continues a turn after a person decided on an approval: no new model call, the decided
// call first (it already passed the gates before the approval), then the calls after it.
func (t *turn) resume(ctx workflow.Context) (contract.TurnResult, error) {
	t.res.Head = t.in.Head
	t.feedback = append(t.feedback, t.in.Pending...)
	first := t.in.Resume[0]
	spec, _ := toolspec.Lookup(t.tools, first.Name)
	if d := t.in.Approved; d == nil || d.CallID != first.ID || !d.Approve {
		why := "a person declined it"
		if d == nil || d.CallID != first.ID {
			why = "no approval arrived before the deadline"
		} else if d.Reason != "" && workflow.GetVersion(ctx, versionDenyReason, workflow.DefaultVersion, 1) == 1 {
			// The marker only where a reason came: turns without one replay as they ran.
			why = "a person declined it and said: " + d.Reason
		}
		t.reply(first, toolspec.ApprovalDeniedFeedback(first.Name, why), true)
	} else if err := t.gateAndRun(ctx, first, spec); err != nil {
		return t.res, err
	}
	return t.runCalls(ctx, t.in.Resume[1:])
}

// runCalls takes calls through the gates in order, stopping at the first that needs a person.
func (t *turn) runCalls(ctx workflow.Context, calls []contract.ToolCall) (contract.TurnResult, error) {
	t.planned = countDelegations(calls)
	for i, call := range calls {
		if ctx.Err() != nil {
			return t.stopCalls(ctx, calls[i:], false)
		}
		if err := t.handleCall(ctx, call); err != nil {
			if isCanceled(err) {
				return t.stopCalls(ctx, calls[i:], true)
			}
			return t.res, err
		}
		if t.res.NeedsApproval != nil {
			t.res.Resume = calls[i:]
			break
		}
		if t.res.Escalate != nil {
			t.skipRest(calls[i+1:])
			break
		}
	}
	if len(t.children) > 0 {
		t.awaitChildren(ctx)
		t.res.Cancelled = ctx.Err() != nil // a cancel that came while sub-agents ran: the session says why
	}
	return t.finish(), nil
}

// stopCalls ends a turn cancelled during its tool calls. Turns since keep-interrupted-turn return
// what they have, answering the call that was running (its outcome is unknown) and the calls not
// started, so a session that goes on (a person interrupted it) keeps a well-formed transcript.
func (t *turn) stopCalls(ctx workflow.Context, rest []contract.ToolCall, running bool) (contract.TurnResult, error) {
	t.awaitChildren(ctx)
	if workflow.GetVersion(ctx, versionKeepInterrupted, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return t.res, temporal.NewCanceledError()
	}
	for i, c := range rest {
		if i == 0 && running {
			text := toolspec.OutcomeUnknownFeedback(c.Name, c.Arguments)
			t.reply(c, text, true)
			t.res.Events = append(t.res.Events, contract.Event{Event: contract.EventToolResult, Turn: t.in.Turn, Tool: c.Name, CallID: c.ID, IsError: true, Text: text})
			continue
		}
		t.reply(c, fmt.Sprintf("%s was not run: a person interrupted the turn; nothing was changed. Read their message and send it again if it is still needed.", c.Name), true)
	}
	t.res.Cancelled = true
	return t.finish(), nil
}

// callModel runs the CallModel activity. A surfaced failure becomes res.Failure; a cancellation is
// returned as an error. A reply that did not parse is called again once, after the activity's
// wait, with the strict instruction in the request.
func (t *turn) callModel(ctx workflow.Context) (contract.ModelResponse, error) {
	actx := workflow.WithActivityOptions(ctx, modelCallOptions(t.in.Turn, t.in.HeartbeatTimeout.Std()))
	req := contract.ModelRequest{
		SessionID: t.in.SessionID, Turn: t.in.Turn, Head: t.in.Head, Append: t.in.Pending,
		BuiltinTools: t.in.BuiltinTools, Tools: t.in.Tools, ModelSettings: t.in.ModelSettings, Sinks: t.in.Sinks,
		Compaction: t.in.Compaction, Status: t.in.Status, Watched: t.in.Watched,
	}
	t.res.Counters.GatewayCalls = 1
	t.stepTo(ctx, nil)
	for {
		var resp contract.ModelResponse
		err := workflow.ExecuteActivity(actx, contract.CallModelActivity, req).Get(actx, &resp)
		if err == nil {
			t.res.Counters.GatewayAttempts = resp.Attempt
			if resp.Fallback {
				t.res.Counters.FallbackCalls = 1
			}
			t.res.Usage = resp.Usage
			t.res.Model = resp.Model
			return resp, nil
		}
		if ctx.Err() != nil || isCanceled(err) {
			t.res.Partial = cancelledPartial(err)
			return resp, errTurnCancelled
		}
		f := modelFailure(err)
		if f.StrictRetryMS > 0 && !req.Strict && workflow.GetVersion(ctx, versionStrictRetry, workflow.DefaultVersion, 1) == 1 {
			if workflow.Sleep(ctx, time.Duration(f.StrictRetryMS)*time.Millisecond) != nil {
				return resp, errTurnCancelled
			}
			req.Strict, req.PriorAttempts = true, f.Attempts
			continue
		}
		t.res.Counters.GatewayAttempts = max(f.Attempts, 1)
		t.res.Failure = &f
		t.res.Transcript = contract.Transcript(t.in.TranscriptRef)
		return resp, nil
	}
}

// modelFailure reads the Failure the CallModel activity attached to its error.
func modelFailure(err error) contract.Failure {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == contract.ModelErrorType {
		var f contract.Failure
		if app.Details(&f) == nil && f.Class != "" {
			return f
		}
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return contract.Failure{Class: contract.ClassTransport, Reason: "the model call timed out", Attempts: modelRetryBackstop}
	}
	return contract.Failure{Class: contract.ClassUnknown, Reason: "the model call failed: " + err.Error(), Attempts: 1}
}

// errTurnCancelled ends a cancelled turn early; run turns it into a result that carries what was
// received so far, so the session keeps it.
var errTurnCancelled = errors.New("turn cancelled")

// cancelledPartial reads the text a cancelled model call had already shown.
func cancelledPartial(err error) string {
	var ce *temporal.CanceledError
	var f contract.Failure
	if errors.As(err, &ce) && ce.HasDetails() && ce.Details(&f) == nil {
		return f.Partial
	}
	return ""
}

func isCanceled(err error) bool {
	var ce *temporal.CanceledError
	return errors.As(err, &ce)
}

// finish returns the turn's result: its messages in order after the assistant message.
func (t *turn) finish() contract.TurnResult {
	t.res.Pending = t.feedback
	t.res.Guards = t.guards
	return t.res
}

// reply records the message that answers one tool call.
func (t *turn) reply(call contract.ToolCall, content string, isError bool) {
	t.feedback = append(t.feedback, contract.Message{
		Role: contract.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: content, IsError: isError,
	})
}

// skipRest answers the calls after an escalation so the transcript stays well-formed.
func (t *turn) skipRest(calls []contract.ToolCall) {
	for _, c := range calls {
		t.reply(c, fmt.Sprintf("%s was not run: an earlier call in this turn needs a person's decision first; nothing was changed. Send it again if it is still needed.", c.Name), true)
	}
}

func copyCounts(m map[string]int) map[string]int {
	if m == nil {
		return map[string]int{}
	}
	return maps.Clone(m)
}
