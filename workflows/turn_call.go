package workflows

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/metrics/record"
	"github.com/keelrun/keel/internal/tools/breaker"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// anyTool is the repairs key that counts consecutive rejected calls of any tool.
const anyTool = "*"

// repeatThreshold is the identical call that is not run; one more after that feedback escalates.
const repeatThreshold = 3

// handleCall takes one tool call through the gates in order: schema, repeat detection, policy,
// then the tool activity. Every refusal answers the call with feedback the model can act on.
func (t *turn) handleCall(ctx workflow.Context, call contract.ToolCall) error {
	spec, known := toolspec.Lookup(t.tools, call.Name)
	if !known {
		t.noteRepeat(call)
		t.rejectArgs(call, toolspec.UnknownToolFeedback(call.Name, toolspec.Names(t.tools)))
		return nil
	}
	if p := toolspec.Validate(spec, call.Arguments); p != nil {
		t.noteRepeat(call)
		t.rejectArgs(call, p.Feedback(call.Name, t.repairsLeft(call.Name)-1))
		return nil
	}
	delete(t.guards.Repairs, call.Name) // a count of zero is no entry: every turn's history carries the map
	delete(t.guards.Repairs, anyTool)
	t.guards.Rejected = nil

	if n := t.noteRepeat(call); n >= repeatThreshold {
		t.blockRepeat(call, n)
		return nil
	}
	if why := t.policyRefusal(call); why != "" {
		text := toolspec.PolicyDeniedFeedback(call.Name, why)
		t.reply(call, text, true)
		t.res.Counters.BlockedCalls++
		t.escalateCall(contract.ReasonPolicy, call, "a call outside the tool policy: "+why, text)
		return nil
	}
	if t.needsApproval(spec) && !t.allowed(call) {
		t.res.NeedsApproval = &contract.Approval{
			CallID: call.ID, Tool: call.Name, Digest: contract.Digest(call.Arguments), Arguments: call.Arguments,
		}
		return nil
	}
	return t.gateAndRun(ctx, call, spec)
}

// needsApproval applies the approval policy: never, writes (tools that may change the world) or
// always; tools on the allow list never wait.
func (t *turn) needsApproval(spec contract.ToolSpec) bool {
	p := t.in.Policy
	if slices.Contains(p.Allow, spec.Name) {
		return false
	}
	switch p.Approval {
	case contract.ApprovalAlways:
		return true
	case contract.ApprovalWrites:
		return spec.Writes
	}
	return false
}

// allowed says whether a person allowed this call for the rest of the session at an earlier
// approval, and if so records which allowance let it through, so the person sees why nobody was
// asked. Sessions before allow-session hold no allowances and never get here with one.
func (t *turn) allowed(call contract.ToolCall) bool {
	if len(t.guards.Allowed) == 0 {
		return false
	}
	command := ""
	if call.Name == toolspec.RunCommand {
		command = commandOf(call.Arguments)
	}
	al := covering(t.guards.Allowed, call.Name, command)
	if al == nil {
		return false
	}
	by := ""
	if al.By != "" {
		by = " by " + al.By
	}
	t.res.Events = append(t.res.Events, contract.Event{Event: contract.EventAnswer, Turn: t.in.Turn, Tool: call.Name, CallID: call.ID,
		Text: fmt.Sprintf("%s %s runs without asking: %s%s for this session", call.Name, clip(call.Arguments, 120), describeAllowance(*al), by)})
	return true
}

// gateAndRun is the last gate, the tool's breaker, then the tool activity.
func (t *turn) gateAndRun(ctx workflow.Context, call contract.ToolCall, spec contract.ToolSpec) error {
	if spec.Name == toolspec.Delegate && spec.Server == "" && workflow.GetVersion(ctx, versionDelegate, workflow.DefaultVersion, 1) == 1 {
		t.delegate(ctx, call)
		return nil
	}
	key := breaker.Key(spec.Name, spec.Server)
	if d := t.guards.Breakers.Allow(t.in.Policy.Breaker, key, workflow.Now(ctx)); !d.Run {
		t.refuseOpen(call, key)
		return nil
	}
	if toolspec.OnlyReads(spec) && t.in.LocalReads {
		return t.runRead(ctx, call, key)
	}
	return t.runTool(ctx, call, spec.Server, key)
}

// refuseOpen answers a call whose breaker is open at once, with no activity, offering the
// configured fallback when that tool is there and its own breaker would let it run.
func (t *turn) refuseOpen(call contract.ToolCall, key string) {
	fallback := t.in.Policy.Fallbacks[call.Name]
	if fb, ok := toolspec.Lookup(t.tools, fallback); !ok || fb.Name == call.Name {
		fallback = ""
	}
	text := toolspec.BreakerOpenFeedback(call.Name, fallback)
	t.reply(call, text, true)
	t.res.Counters.BlockedCalls++
	record.ToolCall(t.metrics, call.Name, record.ToolBlocked)
	record.Breaker(t.metrics, key, true)
	t.res.Events = append(t.res.Events, contract.Event{Event: contract.EventBlocked, Turn: t.in.Turn, Tool: call.Name, CallID: call.ID, Text: text})
}

// runTool runs the single-attempt tool activity, feeds its result back, and tells the tool's
// breaker how the call ended (cancellations are not counted).
func (t *turn) runTool(ctx workflow.Context, call contract.ToolCall, server, key string) error {
	actx := workflow.WithActivityOptions(ctx, toolOptions(call, t.in.Policy, t.in.HeartbeatTimeout.Std()))
	var res contract.ToolResult
	t.stepTo(ctx, &call)
	err := workflow.ExecuteActivity(actx, contract.RunToolActivity, t.toolRequest(call, server)).Get(actx, &res)
	t.res.Counters.ToolCalls++
	if err != nil {
		if ctx.Err() != nil || isCanceled(err) {
			return temporal.NewCanceledError()
		}
		// The worker died, the activity timed out or its completion was lost: the ledger of side
		// effects says which, and the call is never run again by Temporal.
		if workflow.GetVersion(ctx, versionToolLedger, workflow.DefaultVersion, 1) == 1 {
			return t.reconcile(ctx, call, server, key)
		}
		t.outcomeUnknown(ctx, call, server, key)
		return nil
	}
	t.answer(ctx, call, server, key, res)
	return nil
}

// runRead runs a built-in tool that only reads as a local activity: no activity task, no
// workflow task after it, no ledger. A worker lost mid-read retries the workflow task, which
// runs the read again: harmless, since it changed nothing. A read that failed is answered as
// interrupted, which says it changed nothing.
func (t *turn) runRead(ctx workflow.Context, call contract.ToolCall, key string) error {
	lctx := workflow.WithLocalActivityOptions(ctx, readOptions(call, t.in.Policy))
	var res contract.ToolResult
	t.stepTo(ctx, &call)
	err := workflow.ExecuteLocalActivity(lctx, contract.RunToolActivity, t.toolRequest(call, "")).Get(lctx, &res)
	t.res.Counters.ToolCalls++
	switch {
	case err == nil:
		t.answer(ctx, call, "", key, res)
	case ctx.Err() != nil || isCanceled(err):
		return temporal.NewCanceledError()
	default:
		t.outcomeUnknown(ctx, call, "", key)
	}
	return nil
}

// toolRequest is what the tool activity of call gets.
func (t *turn) toolRequest(call contract.ToolCall, server string) contract.ToolRequest {
	req := contract.ToolRequest{
		SessionID: t.in.SessionID, Turn: t.in.Turn, Call: call, ToolSettings: t.in.ToolSettings, Sinks: t.in.Sinks, Watched: t.in.Watched, Server: server,
	}
	req.Policy = t.in.Policy.ForTools()
	return req
}

// answer feeds a call's result back, tells an MCP tool's breaker how it went and escalates what
// the model cannot fix.
func (t *turn) answer(ctx workflow.Context, call contract.ToolCall, server, key string, res contract.ToolResult) {
	// Only MCP servers trip breakers: a failing built-in tool runs in this worker and its failures
	// are the model's to fix (a missing file), not an outage.
	if server != "" && !toolspec.IsPolicyViolation(res) {
		t.guards.Breakers.Record(t.in.Policy.Breaker, key, workflow.Now(ctx), !res.IsError)
		record.Breaker(t.metrics, key, breakerOpen(t.guards.Breakers, key, workflow.Now(ctx)))
	}
	t.reply(call, res.Content, res.IsError)
	switch {
	case toolspec.IsPolicyViolation(res):
		t.escalateCall(contract.ReasonPolicy, call, "a call outside the tool policy", res.Content)
	case res.Fatal:
		t.escalateCall(contract.ReasonFatalTool, call, call.Name+" hit an error the model cannot fix", res.Content)
	}
}

// outcomeUnknown answers a call that may or may not have done its work.
func (t *turn) outcomeUnknown(ctx workflow.Context, call contract.ToolCall, server, key string) {
	record.ToolCall(t.metrics, call.Name, record.ToolUnknown)
	if server != "" {
		t.guards.Breakers.Record(t.in.Policy.Breaker, key, workflow.Now(ctx), false)
	}
	t.replyShown(call, toolspec.OutcomeUnknownFeedback(call.Name, call.Arguments))
}

// replyShown answers a call with feedback no activity posted, and adds the tool_result event the
// stream shows for it instead: the only one for that call.
func (t *turn) replyShown(call contract.ToolCall, text string) {
	t.reply(call, text, true)
	t.res.Events = append(t.res.Events, contract.Event{Event: contract.EventToolResult, Turn: t.in.Turn, Tool: call.Name, CallID: call.ID, IsError: true, Text: text})
}

// reconcile answers a call whose activity never reported from the ledger of side effects: the
// recorded outcome is the result; no claim means the tool never started (reported as not run, so
// the model decides whether it still wants it and nothing runs twice behind its back); only a
// claim without an outcome is "outcome unknown". A ledger that cannot be read is the last case.
func (t *turn) reconcile(ctx workflow.Context, call contract.ToolCall, server, key string) error {
	lctx := workflow.WithActivityOptions(ctx, ledgerOptions())
	var ans contract.LedgerAnswer
	if err := workflow.ExecuteActivity(lctx, contract.ToolLedgerActivity, contract.LedgerRequest{
		SessionID: t.in.SessionID, Turn: t.in.Turn, CallID: call.ID,
	}).Get(lctx, &ans); err != nil {
		if ctx.Err() != nil || isCanceled(err) {
			return temporal.NewCanceledError()
		}
		ans = contract.LedgerAnswer{Verdict: contract.LedgerUnknown}
	}
	t.res.Counters.ReconciledCalls++
	switch ans.Verdict {
	case contract.LedgerOutcome:
		outcome := record.ToolOK
		if ans.Result.IsError {
			outcome = record.ToolError
		}
		record.ToolCall(t.metrics, call.Name, outcome)
		if !ans.Shown {
			t.res.Events = append(t.res.Events, contract.Event{Event: contract.EventToolResult, Turn: t.in.Turn, Tool: call.Name, CallID: call.ID, IsError: ans.Result.IsError, Text: ans.Result.Content})
		}
		t.answer(ctx, call, server, key, ans.Result)
	case contract.LedgerNotRun:
		record.ToolCall(t.metrics, call.Name, record.ToolBlocked)
		t.replyShown(call, toolspec.NotRunFeedback(call.Name))
	default:
		t.outcomeUnknown(ctx, call, server, key)
	}
	return nil
}

// repairsLeft is how many more invalid calls this tool may make before a person is asked.
func (t *turn) repairsLeft(tool string) int {
	return contract.RepairCap - max(t.guards.Repairs[tool], t.guards.Repairs[anyTool])
}

// rejectArgs answers a call whose arguments cannot be used, and escalates once the repair cap is
// spent: self-correction is the first line, a person the last.
func (t *turn) rejectArgs(call contract.ToolCall, feedback string) {
	t.guards.Repairs[call.Name]++
	t.guards.Repairs[anyTool]++
	record.ToolCall(t.metrics, call.Name, record.ToolBlocked)
	t.reply(call, feedback, true)
	t.res.Counters.BlockedCalls++
	t.guards.Rejected = append(t.guards.Rejected, triedLine(t.in.Turn, call))
	if n := len(t.guards.Rejected); n > maxTried {
		t.guards.Rejected = slices.Clone(t.guards.Rejected[n-maxTried:])
	}
	t.res.Events = append(t.res.Events, contract.Event{Event: contract.EventBlocked, Turn: t.in.Turn, Tool: call.Name, CallID: call.ID, Arguments: call.Arguments, Text: feedback})
	if t.repairsLeft(call.Name) < 0 {
		t.escalateCall(contract.ReasonRepairCap, call,
			fmt.Sprintf("the model sent invalid arguments %d times in a row", max(t.guards.Repairs[call.Name], t.guards.Repairs[anyTool])), feedback)
		t.res.Escalate.Tried = slices.Clone(t.guards.Rejected)
	}
}

// noteRepeat updates repeat detection (consecutive identical calls, compared as text) and returns
// how many times in a row this call has now been made.
func (t *turn) noteRepeat(call contract.ToolCall) int {
	key := toolspec.RepeatKey(call)
	if key == t.guards.Repeat.Key {
		t.guards.Repeat.Count++
	} else {
		t.guards.Repeat = contract.RepeatState{Key: key, Count: 1}
	}
	return t.guards.Repeat.Count
}

// blockRepeat refuses a spinning call without running it; a loop that goes on after that feedback
// is handed to a person.
func (t *turn) blockRepeat(call contract.ToolCall, n int) {
	text := toolspec.RepeatFeedback(call.Name, n)
	t.reply(call, text, true)
	t.res.Counters.BlockedCalls++
	record.ToolCall(t.metrics, call.Name, record.ToolBlocked)
	t.res.Events = append(t.res.Events, contract.Event{Event: contract.EventBlocked, Turn: t.in.Turn, Tool: call.Name, CallID: call.ID, Text: text})
	if n > repeatThreshold {
		t.escalateCall(contract.ReasonLoop, call, fmt.Sprintf("the model repeated the same %s call %d times, even after being told to change approach", call.Name, n), text)
	}
}

// policyRefusal says why the policy refuses the call, or "" when it may run.
func (t *turn) policyRefusal(call contract.ToolCall) string {
	if slices.Contains(t.in.Policy.Deny, call.Name) {
		return "the tool " + call.Name + " is on the deny list"
	}
	return ""
}

func (t *turn) escalateCall(reason string, call contract.ToolCall, summary, lastError string) {
	t.res.Escalate = &contract.EscalationRequest{
		Reason:    reason,
		Summary:   summary,
		LastError: lastError,
		Calls:     []contract.ToolCall{call},
		Tried:     []string{triedLine(t.in.Turn, call)},
	}
}

// maxTried bounds the rejected calls an escalation lists.
const maxTried = 10

// triedLine is one entry of an escalation's "Tried" list.
func triedLine(turn int, call contract.ToolCall) string {
	return fmt.Sprintf("turn %d: %s %s", turn, call.Name, clip(call.Arguments, 200))
}

// breakerOpen reports whether key's breaker is open, without changing it.
func breakerOpen(s breaker.State, key string, now time.Time) bool {
	for _, st := range s.Snapshot(now) {
		if st.Key == key {
			return st.State == breaker.Open
		}
	}
	return false
}
