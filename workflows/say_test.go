package workflows_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
)

const sayText = "use the table-driven style"

// sayUpdate sends the say update and returns what the sender learns.
func (w *world) sayUpdate(m contract.Say) *contract.SayResult {
	out := &contract.SayResult{}
	w.env.UpdateWorkflow(contract.UpdateSay, "", &testsuite.TestUpdateCallback{
		OnAccept: func() {},
		OnReject: func(err error) { out.Message = "rejected: " + err.Error() },
		OnComplete: func(v any, _ error) {
			if r, ok := v.(contract.SayResult); ok {
				*out = r
			}
		},
	}, m)
	return out
}

// sayCount counts the person's message among the messages a model request stores first.
func sayCount(req contract.ModelRequest) int {
	n := 0
	for _, m := range req.Append {
		if m.Role == contract.RoleUser && m.Note == "say" && strings.Contains(m.Content, sayText) {
			n++
		}
	}
	return n
}

// TestSayReachesTheNextModelCallOnce: a message sent while the model thinks or while a tool runs
// waits for the turn to end and reaches the next model call exactly once; with interrupt the turn
// in flight is cancelled first and what it produced is kept. A final answer that arrived with a
// message waiting does not end the session: the model sees the message first.
func TestSayReachesTheNextModelCallOnce(t *testing.T) {
	slowAnswer := answerReply("done", usage)
	slowAnswer.delay = time.Minute
	slowCall := toolsReply(usage, call("c1", "run_command", `{"command":"go test ./..."}`))
	slowCall.delay = time.Minute
	cases := []struct {
		name      string
		script    []reply
		toolDelay time.Duration
		send      func(w *world)
		// wantCalls is how many model calls the session makes; the message is in the last one.
		wantCalls int
		// wantCancelled lists the activities the interrupt cancelled.
		wantCancelled []string
		// wantTool is the tool message that precedes the person's message, if any.
		wantTool string
	}{
		{
			name:      "update while the model thinks",
			script:    []reply{slowAnswer, answerReply("done, table-driven", usage)},
			send:      func(w *world) { w.sayUpdate(contract.Say{Text: sayText, By: "alice", Via: "cli"}) },
			wantCalls: 2,
		},
		{
			name:      "signal while a tool runs",
			script:    []reply{toolsReply(usage, call("c1", "run_command", `{"command":"go test ./..."}`)), answerReply("done", usage)},
			toolDelay: time.Minute,
			send: func(w *world) {
				w.env.SignalWorkflow(contract.SignalSay, contract.Say{Text: sayText, By: "bob", Via: "ui"})
			},
			wantCalls: 2,
			wantTool:  "ok: run_command",
		},
		{
			name:      "interrupt while a tool runs",
			script:    []reply{toolsReply(usage, call("c1", "run_command", `{"command":"go test ./..."}`), call("c2", "read_file", `{"path":"a.go"}`)), answerReply("done", usage)},
			toolDelay: time.Hour,
			send: func(w *world) {
				w.sayUpdate(contract.Say{Text: sayText, By: "alice", Interrupt: true})
			},
			wantCalls:     2,
			wantCancelled: []string{contract.RunToolActivity},
			wantTool:      "read_file was not run: a person interrupted the turn",
		},
		{
			name:   "interrupt while the model thinks",
			script: []reply{slowCall, answerReply("done", usage)},
			send: func(w *world) {
				w.sayUpdate(contract.Say{Text: sayText, By: "alice", Interrupt: true})
			},
			wantCalls:     2,
			wantCancelled: []string{contract.CallModelActivity},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, c.script...)
			w.toolDelay = c.toolDelay
			w.at(10*time.Second, func() { c.send(w) })
			sum := w.run(input(contract.Limits{}))

			assert.Equal(t, contract.StatusCompleted, sum.Status)
			reqs := w.modelRequests()
			require.Len(t, reqs, c.wantCalls)
			for i, r := range reqs[:len(reqs)-1] {
				assert.Zero(t, sayCount(r), "model call %d was sent before the message", i+1)
			}
			last := reqs[len(reqs)-1]
			assert.Equal(t, 1, sayCount(last), "the message reaches the next model call exactly once")
			_, cancelled := w.activities()
			assert.Equal(t, c.wantCancelled, cancelled)
			if c.wantTool != "" {
				require.GreaterOrEqual(t, len(last.Append), 2)
				tool := last.Append[len(last.Append)-2]
				assert.Equal(t, contract.RoleTool, tool.Role)
				assert.Contains(t, tool.Content, c.wantTool)
			}
			var saw bool
			for _, e := range w.status().Events {
				saw = saw || (e.Event == contract.EventSay && e.Text == sayText)
			}
			assert.True(t, saw, "the message is a session event, for watch and jsonl")
		})
	}
}

// TestSayValidator: an empty or oversized message is refused with a reason and changes nothing.
func TestSayValidator(t *testing.T) {
	cases := []struct {
		name string
		text string
		want string
	}{
		{"empty", "  ", "the message is empty"},
		{"too long", strings.Repeat("x", contract.MaxSayBytes+1), "the most a message may have is"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			slow := answerReply("done", usage)
			slow.delay = time.Minute
			w := newWorld(t, slow)
			var out *contract.SayResult
			w.at(10*time.Second, func() { out = w.sayUpdate(contract.Say{Text: c.text}) })
			sum := w.run(input(contract.Limits{}))
			assert.Equal(t, contract.StatusCompleted, sum.Status)
			require.NotNil(t, out)
			assert.False(t, out.Accepted)
			assert.Contains(t, out.Message, c.want)
			assert.Len(t, w.modelRequests(), 1, "a refused message starts no model call")
		})
	}
}

// TestSayCarriedAcrossContinueAsNew: a message that arrived in a run's last turn travels in the
// carried state, so the next run delivers it.
func TestSayCarriedAcrossContinueAsNew(t *testing.T) {
	w := newWorld(t, toolsReply(usage, call("c1", "read_file", `{"path":"a.go"}`)))
	w.toolDelay = time.Minute
	w.at(10*time.Second, func() { w.sayUpdate(contract.Say{Text: sayText, By: "alice"}) })
	in := input(contract.Limits{})
	in.TurnsPerRun = 1
	w.env.ExecuteWorkflow(contract.SessionWorkflow, in)
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(w.env.GetWorkflowError(), &can), "the run continues as new: %v", w.env.GetWorkflowError())
	var next contract.SessionInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.Carry)
	require.Len(t, next.Carry.Inbox, 1)
	assert.Contains(t, next.Carry.Inbox[0].Content, sayText)
	assert.Equal(t, 1, next.Carry.SaySeq)
}
