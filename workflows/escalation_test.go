package workflows_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/jsondur"
)

// badArgs is a model that sends unparsable arguments four times in a row, a different tool each
// time, which spends the repair cap (3) and escalates.
func badArgs() []reply {
	return []reply{
		toolsReply(usage, call("b1", "read_file", `{"path": "calc.go"`)),
		toolsReply(usage, call("b2", "write_file", `{"path": "calc.go", "content": "pack`)),
		toolsReply(usage, call("b3", "list_dir", `{"path": `)),
		toolsReply(usage, call("b4", "run_command", `{"command": "go test`)),
	}
}

// pendingID reads the ID of the pending escalation from the status query; "" when there is none.
func (w *world) pendingID() string {
	st := w.status()
	if st.Escalation == nil || st.Escalation.Answer != nil {
		return ""
	}
	return st.Escalation.ID
}

// TestBadArgumentsEscalate: invalid arguments never reach a tool; each is answered with the exact
// fix, and once the repair cap is spent a person is asked. Their answer decides what happens next.
func TestBadArgumentsEscalate(t *testing.T) {
	const instruction = "write valid JSON: close every brace and quote"
	cases := []struct {
		name   string
		answer contract.Answer
		after  []reply
		status string
		turns  int
	}{
		{"abort", contract.Answer{Action: contract.ActionAbort, By: "dana", Via: "cli"}, nil, contract.StatusAborted, 4},
		{"edit", contract.Answer{Action: contract.ActionEdit, Text: instruction, By: "dana", Via: "slack"},
			[]reply{answerReply("done with valid JSON", usage)}, contract.StatusCompleted, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, append(badArgs(), c.after...)...)
			var waiting contract.SessionStatus
			var out *updateOutcome
			w.at(time.Minute, func() {
				waiting = w.status()
				a := c.answer
				a.EscalationID = w.pendingID()
				out = w.answer("answer-1", a)
			})
			sum := w.run(input(contract.Limits{}))

			assert.Empty(t, w.toolRequests(), "no invalid call reached a tool")
			require.NotNil(t, waiting.Escalation, "an escalation was pending")
			assert.Equal(t, contract.StatusWaiting, waiting.Status)
			assert.Equal(t, contract.ReasonRepairCap, waiting.Escalation.Reason)
			require.Len(t, waiting.Escalation.Calls, 1)
			assert.Equal(t, "b4", waiting.Escalation.Calls[0].ID)
			assert.Len(t, waiting.Escalation.Tried, contract.RepairCap+1, "every rejected call is listed as tried")
			assert.Equal(t, contract.RepairCap+1, waiting.Counters.BlockedCalls, "every rejected call is counted as blocked")

			require.NotNil(t, out)
			assert.True(t, out.accepted, "the answer was accepted")
			assert.NoError(t, out.failed)
			assert.True(t, out.result.Accepted, "the sender learned it was accepted: %+v", out.result)

			assert.Equal(t, c.status, sum.Status)
			assert.Equal(t, c.turns, sum.Turns)

			reqs := w.modelRequests()
			// Every rejected call was answered with feedback that counts down the repairs left.
			for i, want := range []string{"2 more invalid calls", "1 more invalid call", "this is the last repair"} {
				fb := reqs[i+1].Append[0]
				assert.Equal(t, badArgs()[i].calls[0].ID, fb.ToolCallID)
				assert.True(t, fb.IsError)
				assert.Contains(t, fb.Content, "was not run and nothing changed")
				assert.Contains(t, fb.Content, want)
			}

			if c.answer.Action == contract.ActionAbort {
				assert.Contains(t, sum.Reason, "dana answered abort with starter answer")
				tr := w.transcript()
				assert.Equal(t, "escalation", tr.Pending[len(tr.Pending)-1].Note)
				return
			}
			require.Len(t, reqs, 5)
			person, ok := findMessage(reqs[4].Append, func(m contract.Message) bool {
				return m.Role == contract.RoleUser && strings.HasPrefix(m.Content, contract.PersonPrefix)
			})
			require.True(t, ok, "the next model call carries the person's instruction: %+v", reqs[4].Append)
			assert.Equal(t, contract.PersonPrefix+instruction, person.Content)
			fb, ok := findMessage(reqs[4].Append, func(m contract.Message) bool { return m.ToolCallID == "b4" })
			require.True(t, ok, "the escalated call is still answered, so the transcript stays well-formed")
			assert.True(t, fb.IsError)
		})
	}
}

// TestAnswerValidator: the update's validator refuses, with a reason the sender sees, an answer
// when nothing is pending, an answer to another escalation, an edit without text, and any answer
// after the first; the first valid answer wins.
func TestAnswerValidator(t *testing.T) {
	script := badArgs()
	script[0].delay = 2 * time.Minute // so there is a moment with no escalation pending
	follow := answerReply("done", usage)
	follow.delay = time.Hour // so the second answer arrives while the session still runs
	w := newWorld(t, append(script, follow)...)

	outs := map[string]*updateOutcome{}
	w.at(time.Minute, func() {
		outs["nothing pending"] = w.answer("u1", contract.Answer{EscalationID: "esc-x-1", Action: contract.ActionAbort})
	})
	w.at(10*time.Minute, func() {
		id := w.pendingID()
		outs["unknown id"] = w.answer("u2", contract.Answer{EscalationID: "esc-nope-9", Action: contract.ActionAbort})
		outs["edit without text"] = w.answer("u3", contract.Answer{EscalationID: id, Action: contract.ActionEdit})
		outs["bad action"] = w.answer("u4", contract.Answer{EscalationID: id, Action: "shrug"})
		outs["first valid"] = w.answer("u5", contract.Answer{EscalationID: id, Action: contract.ActionRetry, By: "erin"})
	})
	w.at(20*time.Minute, func() {
		if e := w.status().Escalation; e != nil {
			outs["second answer"] = w.answer("u6", contract.Answer{EscalationID: e.ID, Action: contract.ActionAbort, By: "frank"})
		}
	})
	sum := w.run(input(contract.Limits{}))

	rejections := map[string]string{
		"nothing pending":   "no escalation is pending",
		"unknown id":        `escalation "esc-nope-9" is not the pending one`,
		"edit without text": "edit needs text",
		"bad action":        `action "shrug" is not one of`,
		"second answer":     `was already answered: erin answered retry`,
	}
	for name, want := range rejections {
		out := outs[name]
		require.NotNil(t, out, name)
		assert.False(t, out.accepted, "%s was accepted", name)
		if assert.Error(t, out.rejected, name) {
			assert.Contains(t, out.rejected.Error(), want, name)
		}
		// Only the answer after the first is typed as already answered (the session client's
		// ErrAlreadyAnswered); the other refusals are the sender's own mistakes.
		appErr, typed := errors.AsType[*temporal.ApplicationError](out.rejected)
		assert.Equal(t, name == "second answer", typed && appErr.Type() == contract.RefusalAlreadyAnswered, "%s: typed as already answered", name)
	}
	first := outs["first valid"]
	require.NotNil(t, first)
	assert.True(t, first.accepted)
	assert.Nil(t, first.rejected)
	assert.Equal(t, contract.StatusCompleted, sum.Status, "retry let the session go on; the later abort was refused")
	assert.Equal(t, 5, sum.Turns)
}

// TestAnswerBySignal: the signal path (Web UI, `temporal workflow signal`) applies the same
// validation: a wrong ID is ignored, a valid answer is applied.
func TestAnswerBySignal(t *testing.T) {
	w := newWorld(t, badArgs()...)
	w.at(time.Minute, func() {
		id := w.pendingID()
		w.env.SignalWorkflow(contract.SignalAnswerEscalation, contract.Answer{EscalationID: "esc-wrong-1", Action: contract.ActionRetry, By: "mallory"})
		w.env.SignalWorkflow(contract.SignalAnswerEscalation, contract.Answer{EscalationID: id, Action: contract.ActionAbort, By: "gina", Via: "signal"})
	})
	sum := w.run(input(contract.Limits{}))

	assert.Equal(t, contract.StatusAborted, sum.Status)
	assert.Contains(t, sum.Reason, "gina answered abort by signal")
	st := w.status()
	require.NotNil(t, st.Escalation)
	require.NotNil(t, st.Escalation.Answer)
	assert.Equal(t, "gina", st.Escalation.Answer.By)
}

// TestEscalationDeadline: with nobody answering, the channels are told in order (the first at once,
// the next halfway through) and the default action is taken at the deadline.
func TestEscalationDeadline(t *testing.T) {
	cases := []struct {
		name          string
		defaultAction string
		after         []reply
		status        string
	}{
		{"default abort", "", nil, contract.StatusAborted},
		{"default retry", contract.ActionRetry, []reply{answerReply("done after all", usage)}, contract.StatusCompleted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, append([]reply{sameCall("r1"), sameCall("r2"), sameCall("r3"), sameCall("r4")}, c.after...)...)
			in := input(contract.Limits{})
			in.Escalation = contract.EscalationPolicy{
				Deadline: jsondur.Duration(time.Hour), Channels: []string{"slack", "webhook"}, DefaultAction: c.defaultAction, UIBase: "http://127.0.0.1:8233",
			}
			start := w.env.Now()
			sum := w.run(in)

			assert.Equal(t, c.status, sum.Status)
			notices := w.sentNotices()
			require.Len(t, notices, 2)
			assert.Equal(t, "slack", notices[0].req.Channel)
			assert.Equal(t, "webhook", notices[1].req.Channel)
			e := notices[0].req.Escalation
			assert.Equal(t, contract.ReasonLoop, e.Reason)
			assert.Equal(t, e.ID, notices[1].req.Escalation.ID, "both channels tell of the same escalation")
			assert.Equal(t, "http://127.0.0.1:8233/namespaces/default-test-namespace/workflows/default-test-workflow-id", e.Link)
			assert.Equal(t, time.Hour, e.Deadline.Sub(notices[0].at), "the first channel is told at once")
			assert.Equal(t, 30*time.Minute, notices[1].at.Sub(notices[0].at), "the second halfway to the deadline")

			st := w.status()
			require.NotNil(t, st.Escalation)
			require.NotNil(t, st.Escalation.Answer)
			assert.Equal(t, "deadline", st.Escalation.Answer.By)
			if c.status == contract.StatusAborted {
				assert.Contains(t, sum.Reason, "the deadline passed: abort")
				assert.Equal(t, time.Hour, w.env.Now().Sub(start), "the session ended exactly at the deadline")
			}
		})
	}
}

// TestCancelWhileWaitingOnAPerson: a cancel ends a session that waits on an escalation at once,
// without waiting for the deadline, and stops the notice chain.
func TestCancelWhileWaitingOnAPerson(t *testing.T) {
	w := newWorld(t, badArgs()...)
	in := input(contract.Limits{})
	in.Escalation = contract.EscalationPolicy{Deadline: jsondur.Duration(time.Hour), Channels: []string{"slack", "webhook"}}
	w.at(10*time.Minute, func() {
		w.env.SignalWorkflow(contract.SignalCancel, contract.CancelRequest{Reason: "not worth a person's time"})
	})
	start := w.env.Now()
	sum := w.run(in)

	assert.Equal(t, contract.StatusCancelled, sum.Status)
	assert.Equal(t, "cancelled: not worth a person's time", sum.Reason)
	assert.Equal(t, 10*time.Minute, w.env.Now().Sub(start), "the session ended when the cancel came")
	notices := w.sentNotices()
	require.Len(t, notices, 1, "the second channel, due at 30 minutes, was never told")
	assert.Equal(t, "slack", notices[0].req.Channel)
}
