package workflows_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// TestReconcileFromLedger: a tool activity that never reports (its worker died, its completion
// was lost) is answered from the ledger: a recorded outcome as the real result, no claim as "not
// run", a claim alone (or a ledger that cannot be read) as "outcome unknown". The stream gets one
// tool_result per call, from the workflow only when no activity posted it, and the summary counts
// the reconciled call.
func TestReconcileFromLedger(t *testing.T) {
	cmd := call("c1", toolspec.RunCommand, `{"command":"sleep 3; echo done"}`)
	unknown := toolspec.OutcomeUnknownFeedback(cmd.Name, cmd.Arguments)
	tests := []struct {
		name       string
		answer     contract.LedgerAnswer
		ledgerErr  bool
		wantText   string
		wantError  bool
		wantEvents int
	}{
		{"outcome shown by the activity", contract.LedgerAnswer{Verdict: contract.LedgerOutcome, Result: contract.ToolResult{Content: "exit 0\ndone"}, Shown: true}, false, "exit 0\ndone", false, 0},
		{"outcome never shown", contract.LedgerAnswer{Verdict: contract.LedgerOutcome, Result: contract.ToolResult{Content: "exit 1", IsError: true}}, false, "exit 1", true, 1},
		{"never claimed", contract.LedgerAnswer{Verdict: contract.LedgerNotRun}, false, toolspec.NotRunFeedback(cmd.Name), true, 1},
		{"claimed, no outcome", contract.LedgerAnswer{Verdict: contract.LedgerUnknown}, false, unknown, true, 1},
		{"ledger unreadable", contract.LedgerAnswer{}, true, unknown, true, 1},
	}
	usage := contract.Usage{InputTokens: 10, OutputTokens: 5}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, toolsReply(usage, cmd), answerReply("done", usage))
			w.toolErr = func(contract.ToolRequest) error {
				return temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)
			}
			var asked []contract.LedgerRequest
			w.ledger = func(req contract.LedgerRequest) (contract.LedgerAnswer, error) {
				asked = append(asked, req)
				if tt.ledgerErr {
					return contract.LedgerAnswer{}, temporal.NewNonRetryableApplicationError("store down", "Store", nil)
				}
				return tt.answer, nil
			}

			sum := w.run(contract.SessionInput{Task: "t", Settings: contract.Settings{ToolSettings: contract.ToolSettings{Workdir: "/w"}}})
			require.Equal(t, contract.StatusCompleted, sum.Status)
			require.Equal(t, []contract.LedgerRequest{{SessionID: asked[0].SessionID, Turn: 1, CallID: "c1"}}, asked)
			require.NotEmpty(t, asked[0].SessionID)
			reqs := w.modelRequests()
			require.Len(t, reqs, 2)
			fed, ok := findMessage(reqs[1].Append, func(m contract.Message) bool { return m.ToolCallID == "c1" })
			require.True(t, ok, "the call was answered")
			require.Equal(t, tt.wantText, fed.Content)
			require.Equal(t, tt.wantError, fed.IsError)
			require.Equal(t, 1, sum.ReconciledCalls)
			require.Equal(t, 1, sum.ToolCalls)
			var results []string
			for _, e := range sum.Events {
				if e.Event == contract.EventToolResult {
					results = append(results, e.Text)
				}
			}
			require.Len(t, results, tt.wantEvents, "tool_result events the workflow emitted: %q", strings.Join(results, " | "))
			if tt.wantEvents == 1 {
				require.Equal(t, tt.wantText, results[0], "the stream shows what the model was told")
			}
		})
	}
}
