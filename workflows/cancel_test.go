package workflows_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/internal/contract"
)

// TestCancelDuringLongToolCall: both ways of stopping a session (the cancel signal the starter,
// CLI and Slack bot send, and Temporal's own cancellation from the Web UI) stop it while a tool runs,
// cancel the tool, and end with a cancelled summary and a record in the transcript.
func TestCancelDuringLongToolCall(t *testing.T) {
	cases := []struct {
		name   string
		cancel func(w *world)
		reason string
	}{
		{"cancel signal", func(w *world) {
			w.env.SignalWorkflow(contract.SignalCancel, contract.CancelRequest{Reason: "wrong task", By: "alice"})
		}, "cancelled: wrong task"},
		{"workflow cancellation", func(w *world) { w.env.CancelWorkflow() }, "cancelled by the user"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, toolsReply(usage, call("c1", "run_command", `{"command":"sleep 3600"}`)))
			w.toolDelay = time.Hour
			start := w.env.Now()
			w.at(5*time.Second, func() { c.cancel(w) })
			sum := w.run(input(contract.Limits{}))

			assert.Equal(t, contract.StatusCancelled, sum.Status)
			assert.Equal(t, c.reason, sum.Reason)
			// The model call completed and the tool ran before the cancel: the summary says so.
			assert.Equal(t, 1, sum.Turns)
			assert.Equal(t, 1, sum.GatewayCalls)
			assert.Equal(t, 1, sum.ToolCalls)
			assert.Equal(t, usage.Total(), sum.Tokens)
			started, cancelled := w.activities()
			assert.Equal(t, []string{contract.CallModelActivity, contract.RunToolActivity}, started)
			assert.Equal(t, []string{contract.RunToolActivity}, cancelled, "the running tool was cancelled")
			assert.Less(t, w.env.Now().Sub(start), time.Hour, "the session did not wait for the tool")
			assert.Empty(t, w.toolRequests(), "the tool never finished")

			tr := w.transcript()
			require.NotEmpty(t, tr.Pending)
			last := tr.Pending[len(tr.Pending)-1]
			assert.Equal(t, "cancelled", last.Note)
			assert.Contains(t, last.Content, c.reason)
		})
	}
}

// TestCancelWhileModelStreams: a cancel that arrives while the model is still thinking stops the
// session just the same.
func TestCancelWhileModelStreams(t *testing.T) {
	slow := answerReply("too late", usage)
	slow.delay = time.Hour
	w := newWorld(t, slow)
	w.at(time.Minute, func() { w.env.SignalWorkflow(contract.SignalCancel, contract.CancelRequest{}) })
	sum := w.run(input(contract.Limits{}))
	assert.Equal(t, contract.StatusCancelled, sum.Status)
	assert.Equal(t, "cancelled by the user", sum.Reason)
	assert.Empty(t, sum.Answer)
	_, cancelled := w.activities()
	assert.Equal(t, []string{contract.CallModelActivity}, cancelled, "the model stream was cancelled")
}
