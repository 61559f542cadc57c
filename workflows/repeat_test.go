package workflows_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/internal/contract"
)

// sameCall is a model reply that makes the identical read_file call again (new call ID, same text).
func sameCall(id string) reply {
	return toolsReply(usage, call(id, "read_file", readCalc))
}

// TestRepeatDetection: the third identical call in a row is not run; the model is told to change
// approach, with the result attached to that call's ID.
func TestRepeatDetection(t *testing.T) {
	w := newWorld(t, sameCall("r1"), sameCall("r2"), sameCall("r3"), answerReply("changed approach", usage))
	sum := w.run(input(contract.Limits{}))

	assert.Equal(t, contract.StatusCompleted, sum.Status)
	assert.Len(t, w.toolRequests(), 2, "the third identical call did not run")
	assert.Equal(t, 2, sum.ToolCalls)
	assert.Equal(t, 1, sum.BlockedCalls)

	reqs := w.modelRequests()
	require.Len(t, reqs, 4)
	require.Len(t, reqs[3].Append, 1)
	fb := reqs[3].Append[0]
	assert.Equal(t, "r3", fb.ToolCallID)
	assert.True(t, fb.IsError)
	assert.Contains(t, fb.Content, "3 times in a row")
	assert.Contains(t, fb.Content, "Change approach")

	st := w.status()
	var blocked []contract.Event
	for _, e := range st.Events {
		if e.Event == contract.EventBlocked {
			blocked = append(blocked, e)
		}
	}
	require.Len(t, blocked, 1)
	assert.Equal(t, "r3", blocked[0].CallID)
	assert.Equal(t, 3, blocked[0].Turn)
}

// TestRepeatDetectionResetsOnOtherCall: only consecutive identical calls count.
func TestRepeatDetectionResetsOnOtherCall(t *testing.T) {
	w := newWorld(t,
		sameCall("r1"), sameCall("r2"),
		toolsReply(usage, call("x", "run_command", goTest)),
		sameCall("r3"), answerReply("done", usage),
	)
	sum := w.run(input(contract.Limits{}))
	assert.Equal(t, contract.StatusCompleted, sum.Status)
	assert.Equal(t, 4, sum.ToolCalls)
	assert.Zero(t, sum.BlockedCalls)
}

// TestRepeatPersistsEscalates: a fourth identical call, after the "change approach" feedback, is
// handed to a person with reason loop_persists; the call is still not run.
func TestRepeatPersistsEscalates(t *testing.T) {
	w := newWorld(t, sameCall("r1"), sameCall("r2"), sameCall("r3"), sameCall("r4"))
	var waiting contract.SessionStatus
	var out *updateOutcome
	w.at(time.Minute, func() {
		waiting = w.status()
		if waiting.Escalation != nil {
			out = w.answer("abort-1", contract.Answer{EscalationID: waiting.Escalation.ID, Action: contract.ActionAbort, By: "carol"})
		}
	})
	sum := w.run(input(contract.Limits{}))

	assert.Equal(t, contract.StatusWaiting, waiting.Status)
	require.NotNil(t, waiting.Escalation, "an escalation is pending after the fourth identical call")
	e := waiting.Escalation
	assert.Equal(t, contract.ReasonLoop, e.Reason)
	require.Len(t, e.Calls, 1)
	assert.Equal(t, "r4", e.Calls[0].ID)
	assert.Equal(t, readCalc, e.Calls[0].Arguments)
	assert.Equal(t, []string{contract.ActionRetry, contract.ActionEdit, contract.ActionAbort}, e.Choices)

	require.NotNil(t, out)
	assert.True(t, out.accepted)
	assert.Equal(t, contract.StatusAborted, sum.Status)
	assert.Len(t, w.toolRequests(), 2)
	assert.Equal(t, 2, sum.BlockedCalls, "the third and fourth calls were blocked")
}
