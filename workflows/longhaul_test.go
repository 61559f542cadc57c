package workflows_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/jsondur"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

var longStart = time.Date(2026, 12, 1, 11, 52, 0, 0, time.UTC)

// usageLimited is the error of a model call refused for a usage limit that resets at reset.
func usageLimited(reset time.Time) error {
	f := contract.Failure{Class: contract.ClassUsageLimit, Reason: "gateway rate limited: the limit resets at " + reset.Format(time.RFC3339), Attempts: 1, ResetAt: reset}
	return temporal.NewApplicationErrorWithOptions(f.Reason, contract.ModelErrorType, temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{f}})
}

func checkFailed(out string) contract.ToolResult {
	return contract.ToolResult{Content: "The command finished with exit status 1, which means it failed; it may have changed files before it failed. Read the output, fix the cause, and run it again.\n\nOutput:\n" + out, Changed: true}
}

func checkPassed() contract.ToolResult {
	return contract.ToolResult{Content: toolspec.CommandSucceeded + "\n\nOutput:\nok", Changed: true}
}

func goalInput() contract.SessionInput {
	in := input(contract.Limits{MaxTurns: 20})
	in.Goal = &contract.Goal{Check: "go test ./..."}
	return in
}

func eventsOf(evs []contract.Event, kind string) []contract.Event {
	var out []contract.Event
	for _, e := range evs {
		if e.Event == kind {
			out = append(out, e)
		}
	}
	return out
}

// TestGoalCheckFailsTwiceThenPasses: every final answer runs the check; the two failures are fed
// back to the model with the end of their output, and the third run's pass completes the session.
func TestGoalCheckFailsTwiceThenPasses(t *testing.T) {
	u := contract.Usage{InputTokens: 10, OutputTokens: 5}
	w := newWorld(t, answerReply("done", u), answerReply("done again", u), answerReply("done now", u))
	results := []contract.ToolResult{checkFailed("--- FAIL: TestAdd\nFAIL calc 0.01s"), checkFailed("--- FAIL: TestSub\nFAIL calc 0.02s"), checkPassed()}
	w.tool = func(req contract.ToolRequest) contract.ToolResult {
		r := results[0]
		results = results[1:]
		return r
	}
	sum := w.run(goalInput())
	require.Equal(t, contract.StatusCompleted, sum.Status, sum.Reason)
	require.Equal(t, 3, sum.Checks)
	require.Equal(t, "done now", sum.Answer)
	reqs := w.toolRequests()
	require.Len(t, reqs, 3)
	require.Equal(t, toolspec.RunCommand, reqs[0].Call.Name)
	require.JSONEq(t, `{"command":"go test ./..."}`, reqs[0].Call.Arguments)
	// The model's second and third calls carry the check's feedback.
	mr := w.modelRequests()
	require.Len(t, mr, 3)
	for i, want := range []string{"TestAdd", "TestSub"} {
		fb, ok := findMessage(mr[i+1].Append, func(m contract.Message) bool { return m.Note == "check" })
		require.True(t, ok, "model call %d carries no check feedback", i+2)
		require.Contains(t, fb.Content, want)
		require.Contains(t, fb.Content, "exit status 1")
	}
	checks := eventsOf(sum.Events, contract.EventCheck)
	require.Len(t, checks, 3)
	require.True(t, checks[0].IsError && checks[1].IsError && !checks[2].IsError, "check events %+v", checks)
}

// TestGoalCheckSameFailureEscalates: the same failure three times in a row (durations aside)
// asks a person, naming the check and the failure; nobody answers, so the default aborts.
func TestGoalCheckSameFailureEscalates(t *testing.T) {
	u := contract.Usage{InputTokens: 10, OutputTokens: 5}
	w := newWorld(t, answerReply("done", u), answerReply("done", u), answerReply("done", u))
	n := 0
	w.tool = func(contract.ToolRequest) contract.ToolResult {
		n++
		return checkFailed("--- FAIL: TestAdd\nFAIL calc 0.0" + string(rune('0'+n)) + "s")
	}
	sum := w.run(goalInput())
	require.Equal(t, contract.StatusAborted, sum.Status)
	require.Equal(t, 3, sum.Checks)
	esc := eventsOf(sum.Events, contract.EventEscalation)
	require.Len(t, esc, 1)
	e := esc[0].Escalation
	require.Equal(t, contract.ReasonGoalCheck, e.Reason)
	require.Contains(t, e.Summary, "go test ./...")
	require.Contains(t, e.Summary, "3 times in a row")
	require.Contains(t, e.LastError, "FAIL: TestAdd")
	require.Len(t, w.modelRequests(), 3)
}

// TestUsageLimitWaitsOnATimer: a call refused for a usage limit two hours out waits on a timer
// (no activity meanwhile, the wait in the status), then the same call is made once more.
func TestUsageLimitWaitsOnATimer(t *testing.T) {
	reset := longStart.Add(2*time.Hour + 13*time.Minute)
	u := contract.Usage{InputTokens: 10, OutputTokens: 5}
	w := newWorld(t, reply{err: usageLimited(reset)}, answerReply("done", u))
	w.env.SetStartTime(longStart)
	var during contract.SessionStatus
	w.at(time.Hour, func() { during = w.status() })
	in := input(contract.Limits{MaxTurns: 5, MaxDuration: jsondur.Duration(3 * time.Hour)})
	sum := w.run(in)
	require.Equal(t, contract.StatusCompleted, sum.Status, sum.Reason)
	require.Equal(t, contract.StatusWaitingReset, during.Status)
	require.NotNil(t, during.Wait)
	require.True(t, during.Wait.Until.Equal(reset), "the wait is until %v, want %v", during.Wait.Until, reset)
	require.Equal(t, "waiting for the usage limit to reset at 14:05, 1h 13m", during.Wait.Text(longStart.Add(time.Hour), time.UTC))
	mr := w.modelRequests()
	require.Len(t, mr, 2)
	require.True(t, mr[0].WaitLimits && mr[1].WaitLimits, "the session asks its calls to report usage limits")
	require.Equal(t, mr[0].Append, mr[1].Append, "the same call is made again")
	require.Equal(t, 1, sum.Waits)
	require.InDelta(t, (2*time.Hour + 13*time.Minute).Milliseconds(), sum.WaitedMS, 2000)
	require.Equal(t, 1, sum.Turns)
	require.Equal(t, 1, sum.GatewayCalls)
	waits := eventsOf(sum.Events, contract.EventWait)
	require.Len(t, waits, 2)
	require.Contains(t, waits[0].Text, "14:05 UTC")
}

// TestUsageLimitAfterDeadlineEscalates: a reset after the session's deadline is not waited for:
// the session escalates at once, naming the reset time.
func TestUsageLimitAfterDeadlineEscalates(t *testing.T) {
	reset := longStart.Add(2*time.Hour + 13*time.Minute)
	w := newWorld(t, reply{err: usageLimited(reset)})
	w.env.SetStartTime(longStart)
	var during contract.SessionStatus
	w.at(time.Second, func() { during = w.status() })
	sum := w.run(input(contract.Limits{MaxTurns: 5, MaxDuration: jsondur.Duration(time.Hour)}))
	require.Equal(t, contract.StatusWaiting, during.Status, "the session waits on a person at once")
	require.NotNil(t, during.Escalation)
	require.Equal(t, contract.ReasonUsageLimit, during.Escalation.Reason)
	require.Contains(t, during.Escalation.Summary, "resets at 14:05 UTC")
	require.Contains(t, during.Escalation.Summary, "12:52 UTC")
	require.NotEqual(t, contract.StatusCompleted, sum.Status)
	require.Zero(t, sum.Waits)
	require.Len(t, w.modelRequests(), 1)
}

// TestCancelDuringUsageWait: a cancel during the wait ends the session at once, with no other call.
func TestCancelDuringUsageWait(t *testing.T) {
	reset := longStart.Add(2 * time.Hour)
	w := newWorld(t, reply{err: usageLimited(reset)})
	w.env.SetStartTime(longStart)
	w.at(10*time.Minute, func() { w.env.CancelWorkflow() })
	sum := w.run(input(contract.Limits{MaxTurns: 5, MaxDuration: jsondur.Duration(3 * time.Hour)}))
	require.Equal(t, contract.StatusCancelled, sum.Status)
	require.Len(t, w.modelRequests(), 1)
	require.Equal(t, 1, sum.Waits)
	require.Less(t, sum.WaitedMS, (11 * time.Minute).Milliseconds())
	require.True(t, strings.HasPrefix(sum.Reason, "cancelled"), sum.Reason)
}
