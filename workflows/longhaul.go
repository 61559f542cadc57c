package workflows

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// waitsOut says whether a turn's failure is a usage limit this session waits out.
func (s *session) waitsOut(f *contract.Failure) bool {
	return s.usageWaits && f != nil && f.Class == contract.ClassUsageLimit && !f.ResetAt.IsZero()
}

// deadlineAt is when the session's duration limit trips, if it has one.
func (s *session) deadlineAt() (time.Time, bool) {
	if s.in.Limits.MaxDuration <= 0 {
		return time.Time{}, false
	}
	return s.state.StartedAt.Add(s.in.Limits.MaxDuration.Std()), true
}

// clock formats a time for the messages of a wait, in UTC: the workflow has no time zone of its
// own, and the terminal shows the local time itself.
func clock(t time.Time) string {
	return t.UTC().Format("15:04 MST")
}

// awaitReset keeps what a call refused for a usage limit spent (its attempts and any tokens, not
// another model call) and waits on a durable timer for the limit to reset: nothing runs and
// nothing heartbeats meanwhile. A cancel ends the session at once, the duration limit ends it as
// usual, and a person's message ends the wait early, so the call is made with it at once. A reset
// at or after the session's deadline is not waited for: it escalates at once, naming the reset.
// It returns a final summary when the session ends; otherwise the caller makes the call again.
func (s *session) awaitReset(ctx workflow.Context, turn int, res contract.TurnResult, deadline workflow.Future) (contract.Summary, bool) {
	f := res.Failure
	res.Counters.GatewayCalls = 0 // the call is made again; its attempts count
	s.state.Usage, s.state.Counters = s.state.Usage.Add(res.Usage), s.state.Counters.Add(res.Counters)
	for _, e := range res.Events {
		s.addEvent(ctx, e)
	}
	now := workflow.Now(ctx)
	if end, ok := s.deadlineAt(); ok && !f.ResetAt.Before(end) {
		return s.escalate(ctx, &contract.EscalationRequest{
			Reason: contract.ReasonUsageLimit, Class: f.Class, Attempts: f.Attempts, LastError: f.Reason,
			Summary: fmt.Sprintf("the model's usage limit resets at %s (%s from now), after the session's deadline at %s: waiting would run out the session's time",
				clock(f.ResetAt), textfmt.Duration(f.ResetAt.Sub(now)), clock(end)),
			Tried: []string{fmt.Sprintf("turn %d: %d attempt(s) of the model call", turn, f.Attempts)},
		}, deadline)
	}
	wait := max(f.ResetAt.Sub(now), time.Second)
	s.wait = &contract.UsageWait{Reason: f.Reason, Since: now, Until: f.ResetAt}
	s.state.Waits++
	s.status = contract.StatusWaitingReset
	s.upsertSearch(ctx)
	text := fmt.Sprintf("waiting for the usage limit to reset at %s (%s): %s", clock(f.ResetAt), textfmt.Duration(wait), f.Reason)
	s.addEvent(ctx, contract.Event{Event: contract.EventWait, Turn: turn, Class: f.Class, WaitMS: wait.Milliseconds(), Text: text})
	s.setWaitingDetails(ctx, text, "Cancel the session to stop waiting, or send it a message (starter say) to make the call at once.")

	tctx, stop := workflow.WithCancel(ctx)
	timer := workflow.NewTimerWithOptions(tctx, wait, workflow.TimerOptions{Summary: "usage limit resets at " + clock(f.ResetAt)})
	said := s.state.SaySeq
	_ = workflow.Await(ctx, func() bool {
		return timer.IsReady() || s.cancelReq != nil || s.state.SaySeq != said || (deadline != nil && deadline.IsReady())
	})
	stop()
	waited := workflow.Now(ctx).Sub(now)
	s.state.WaitedMS += waited.Milliseconds()
	s.wait = nil
	switch {
	case s.cancelReq != nil || ctx.Err() != nil:
		return s.cancelledSummary(ctx, ""), true
	case deadline != nil && deadline.IsReady():
		return s.limitSummary(ctx, contract.LimitDuration), true
	}
	why := "the usage limit has reset"
	if !timer.IsReady() {
		why = "a person's message ended the wait"
	}
	s.status = contract.StatusRunning
	s.upsertSearch(ctx)
	s.addEvent(ctx, contract.Event{Event: contract.EventWait, Turn: turn, Text: fmt.Sprintf("%s after %s; calling the model again", why, textfmt.Duration(waited))})
	return contract.Summary{}, false
}

// addModelTokens counts a call's tokens against the model that answered it; a result that names
// no model (recorded before turns reported it) counts nowhere.
func addModelTokens(m map[string]int64, model string, tokens int64) map[string]int64 {
	if model == "" || tokens == 0 {
		return m
	}
	m = maps.Clone(m)
	if m == nil {
		m = map[string]int64{}
	}
	m[model] += tokens
	return m
}

// checkTail bounds the end of a check's output that is fed back and shown.
const checkTail = 3 << 10

// checkVerdict is how one run of the goal's check ended.
type checkVerdict struct {
	passed bool
	// status is "exit status 1" or the like; tail the end of the output; key identifies the
	// failure across runs, digits aside (durations and line numbers change from run to run).
	status, tail, key string
}

var (
	exitStatus = regexp.MustCompile(`exit status \d+`)
	digits     = regexp.MustCompile(`[0-9]+`)
)

// verdict reads a check's result as the command tool writes it: success is exit status 0.
func verdict(res contract.ToolResult) checkVerdict {
	if !res.IsError && strings.HasPrefix(res.Content, toolspec.CommandSucceeded) {
		return checkVerdict{passed: true, status: "exit status 0"}
	}
	first, out, _ := strings.Cut(res.Content, "\n\n")
	out = strings.TrimPrefix(out, "Output:\n")
	if len(out) > checkTail {
		out = "…" + out[len(out)-checkTail:]
	}
	status := exitStatus.FindString(first)
	if status == "" {
		status = clip(first, 120)
	}
	return checkVerdict{status: status, tail: out, key: contract.Digest(status + "\n" + digits.ReplaceAllString(out, "N"))[:16]}
}

// checkGoal runs the goal's check after the model ended its turn without tool calls, as a
// run_command call in the work directory under the session's tool policy. A pass lets the session
// complete. A failure is fed back to the model (the status, the end of the output, what to do
// next) and the session goes on (again true), unless it is the same failure Repeats times in a
// row: then a person is asked, naming it. It returns a final summary when the session ends.
func (s *session) checkGoal(ctx workflow.Context, turn int, deadline workflow.Future) (sum contract.Summary, done, again bool) {
	g := s.in.Goal
	s.state.Checks++
	n := s.state.Checks
	args, _ := json.Marshal(map[string]string{"command": g.Check})
	call := contract.ToolCall{ID: fmt.Sprintf("goal-check-%d", n), Name: toolspec.RunCommand, Arguments: string(args)}
	s.setDetails(ctx, fmt.Sprintf("check %d: running %s", n, clip(g.Check, 200)))

	cctx, cancel := workflow.WithCancel(ctx)
	s.cancelTurn = cancel
	actx := workflow.WithActivityOptions(cctx, toolOptions(call, s.in.Policy, s.in.HeartbeatTimeout.Std()))
	req := contract.ToolRequest{SessionID: workflow.GetInfo(ctx).WorkflowExecution.ID, Turn: turn, Call: call, ToolSettings: s.in.ToolSettings, Sinks: s.sinks, Watched: s.watched(ctx)}
	req.Policy = s.in.Policy.ForTools()
	fut := workflow.ExecuteActivity(actx, contract.RunToolActivity, req)
	timedOut := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(fut, func(workflow.Future) {})
	if deadline != nil {
		sel.AddFuture(deadline, func(workflow.Future) { timedOut = true; cancel() })
	}
	sel.Select(ctx)
	var res contract.ToolResult
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	err := fut.Get(dctx, &res)
	s.cancelTurn = nil
	switch {
	case s.cancelReq != nil || ctx.Err() != nil:
		return s.cancelledSummary(ctx, ""), true, false
	case timedOut:
		return s.limitSummary(ctx, contract.LimitDuration), true, false
	case err != nil:
		res = contract.ToolResult{Content: "The check could not be run: its worker stopped or it timed out.", IsError: true}
	}

	v := verdict(res)
	if v.passed {
		s.state.CheckFails, s.state.CheckFailure = 0, ""
		s.addEvent(ctx, contract.Event{Event: contract.EventCheck, Turn: turn, Text: fmt.Sprintf("check %d `%s`: passed", n, g.Check)})
		return contract.Summary{}, false, false
	}
	if v.key == s.state.CheckFailure {
		s.state.CheckFails++
	} else {
		s.state.CheckFailure, s.state.CheckFails = v.key, 1
	}
	s.addEvent(ctx, contract.Event{Event: contract.EventCheck, Turn: turn, IsError: true,
		Text: fmt.Sprintf("check %d `%s`: failed (%s)\n%s", n, g.Check, v.status, v.tail)})
	s.state.Pending = append(s.state.Pending, contract.Message{Role: contract.RoleUser, Note: "check", Content: checkFeedback(g.Check, n, v)})
	repeats := g.Repeats
	if repeats <= 0 {
		repeats = contract.DefaultGoalRepeats
	}
	if s.state.CheckFails < repeats {
		s.upsertSearch(ctx)
		return contract.Summary{}, false, true
	}
	sum, done = s.escalate(ctx, &contract.EscalationRequest{
		Reason: contract.ReasonGoalCheck, Attempts: s.state.CheckFails, LastError: v.tail,
		Summary: fmt.Sprintf("the goal's check `%s` failed the same way %d times in a row (%s)", g.Check, s.state.CheckFails, v.status),
		Tried:   []string{fmt.Sprintf("%d checks, the last %d with the same failure, each fed back to the model", n, s.state.CheckFails)},
	}, deadline)
	if !done {
		s.state.CheckFails = 0
	}
	return sum, done, !done
}

// checkFeedback tells the model the check failed: nothing was undone, what failed, and what to do.
func checkFeedback(check string, n int, v checkVerdict) string {
	out := v.tail
	if strings.TrimSpace(out) == "" {
		out = "(it printed nothing)"
	}
	return fmt.Sprintf("[keel] The task is not done yet: its check `%s` failed (check %d, %s). Nothing was undone. "+
		"The end of its output:\n\n%s\n\nFix what it reports, then end your turn without tool calls when you expect the check to pass; it runs again then.",
		check, n, v.status, out)
}
