package workflows_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// TestReadsRunAsLocalActivities: a built-in tool that only reads runs as a local activity, a
// tool that may write as an activity of its own; a read that fails is answered as interrupted
// (it changed nothing: retry as is) with no question to the ledger, which only calls that may
// have written need.
func TestReadsRunAsLocalActivities(t *testing.T) {
	tests := []struct {
		name      string
		call      contract.ToolCall
		fail      bool
		wantLocal bool
		wantText  string
	}{
		{"list_dir", call("c1", toolspec.ListDir, `{"path":"."}`), false, true, "ok: list_dir"},
		{"read_file", call("c1", toolspec.ReadFile, `{"path":"a.go"}`), false, true, "ok: read_file"},
		{"search", call("c1", toolspec.Search, `{"pattern":"x"}`), false, true, "ok: search"},
		{"write_file", call("c1", toolspec.WriteFile, `{"path":"a.go","content":"x"}`), false, false, "ok: write_file"},
		{"a read that fails", call("c1", toolspec.ReadFile, `{"path":"a.go"}`), true, true,
			toolspec.OutcomeUnknownFeedback(toolspec.ReadFile, `{"path":"a.go"}`)},
	}
	usage := contract.Usage{InputTokens: 10, OutputTokens: 5}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, toolsReply(usage, tt.call), answerReply("done", usage))
			var local []string
			w.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
				local = append(local, info.ActivityType.Name)
			})
			if tt.fail {
				w.toolErr = func(contract.ToolRequest) error {
					return temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil)
				}
			}
			asked := 0
			w.ledger = func(contract.LedgerRequest) (contract.LedgerAnswer, error) {
				asked++
				return contract.LedgerAnswer{Verdict: contract.LedgerNotRun}, nil
			}

			sum := w.run(contract.SessionInput{Task: "t", Settings: contract.Settings{ToolSettings: contract.ToolSettings{Workdir: "/w"}}})
			require.Equal(t, contract.StatusCompleted, sum.Status)
			started, _ := w.activities()
			if tt.wantLocal {
				require.Equal(t, []string{contract.RunToolActivity}, local, "the read ran as a local activity")
				require.NotContains(t, started, contract.RunToolActivity)
			} else {
				require.Empty(t, local)
				require.Contains(t, started, contract.RunToolActivity)
			}
			require.Zero(t, asked, "the ledger was asked")
			reqs := w.modelRequests()
			require.Len(t, reqs, 2)
			fed, ok := findMessage(reqs[1].Append, func(m contract.Message) bool { return m.ToolCallID == "c1" })
			require.True(t, ok, "the call was answered")
			require.Equal(t, tt.wantText, fed.Content)
			require.Equal(t, tt.fail, fed.IsError)
			require.Equal(t, 1, sum.ToolCalls)
		})
	}
}
