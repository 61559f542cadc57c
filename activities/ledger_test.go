package activities_test

import (
	"context"
	"errors"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// refusingClaims is a store that cannot take a claim.
type refusingClaims struct{ store.Store }

func (refusingClaims) Claim(context.Context, store.LedgerKey) error { return errors.New("disk full") }

// TestRunToolLedger: RunTool claims a call that may change something before the tool starts (a
// read is not claimed), records the outcome before it reports, and ReadToolLedger answers with
// it; a call whose claim cannot be written is not run at all.
func TestRunToolLedger(t *testing.T) {
	tests := []struct {
		name        string
		call        contract.ToolCall
		server      string
		refuse      bool
		wantClaimed bool
		wantRun     bool
		wantText    string
	}{
		{"command", contract.ToolCall{ID: "c1", Name: toolspec.RunCommand, Arguments: `{"command":"echo hi"}`}, "", false, true, true, "ran c1"},
		{"write", contract.ToolCall{ID: "c2", Name: toolspec.WriteFile, Arguments: `{"path":"a","content":"b"}`}, "", false, true, true, "ran c2"},
		{"mcp tool", contract.ToolCall{ID: "c3", Name: "deploy", Arguments: `{}`}, "ops", false, true, true, "ran c3"},
		{"read", contract.ToolCall{ID: "c4", Name: toolspec.ReadFile, Arguments: `{"path":"a"}`}, "", false, false, true, "ran c4"},
		{"claim refused", contract.ToolCall{ID: "c5", Name: toolspec.RunCommand, Arguments: `{"command":"echo hi"}`}, "", true, false, false, toolspec.ClaimFailedFeedback(toolspec.RunCommand)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, err := store.OpenFile(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			var st store.Store = fs
			if tt.refuse {
				st = refusingClaims{fs}
			}
			ran := false
			var during string
			acts := &activities.Activities{Store: st}
			acts.Tools = activities.ToolRunnerFunc(func(ctx context.Context, req contract.ToolRequest) (contract.ToolResult, error) {
				ran = true
				ans, err := acts.ReadToolLedger(ctx, contract.LedgerRequest{SessionID: req.SessionID, Turn: req.Turn, CallID: req.Call.ID})
				if err != nil {
					t.Errorf("reading the ledger mid-call: %v", err)
				}
				during = ans.Verdict
				return contract.ToolResult{Content: "ran " + req.Call.ID, Changed: true}, nil
			})
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivityWithOptions(acts.RunTool, activity.RegisterOptions{Name: contract.RunToolActivity})
			env.RegisterActivityWithOptions(acts.ReadToolLedger, activity.RegisterOptions{Name: contract.ToolLedgerActivity})
			if _, err := env.ExecuteActivity(contract.RunToolActivity, contract.ToolRequest{SessionID: "s", Turn: 3, Call: tt.call, Server: tt.server}); err != nil {
				t.Fatal(err)
			}
			if ran != tt.wantRun {
				t.Fatalf("tool ran: %v, want %v", ran, tt.wantRun)
			}
			want := contract.LedgerNotRun
			if tt.wantClaimed {
				want = contract.LedgerUnknown
			}
			if tt.wantRun && during != want {
				t.Fatalf("while the tool ran the ledger said %q, want %q", during, want)
			}
			val, err := env.ExecuteActivity(contract.ToolLedgerActivity, contract.LedgerRequest{SessionID: "s", Turn: 3, CallID: tt.call.ID})
			if err != nil {
				t.Fatal(err)
			}
			var ans contract.LedgerAnswer
			if err := val.Get(&ans); err != nil {
				t.Fatal(err)
			}
			// Not shown: the result event reaches watchers only in the completion, so a turn that
			// reads the outcome instead shows it.
			if ans.Verdict != contract.LedgerOutcome || ans.Result.Content != tt.wantText || ans.Shown {
				t.Fatalf("after the call the ledger answers %+v, want the outcome %q, not shown", ans, tt.wantText)
			}
		})
	}
}

// TestRunToolAfterResolve: a call the turn already answered from the ledger (its activity was
// thought dead) never starts when its activity turns up late.
func TestRunToolAfterResolve(t *testing.T) {
	fs, err := store.OpenFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	acts := &activities.Activities{Store: fs}
	acts.Tools = activities.ToolRunnerFunc(func(context.Context, contract.ToolRequest) (contract.ToolResult, error) {
		ran = true
		return contract.ToolResult{Content: "ran"}, nil
	})
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(acts.RunTool, activity.RegisterOptions{Name: contract.RunToolActivity})
	env.RegisterActivityWithOptions(acts.ReadToolLedger, activity.RegisterOptions{Name: contract.ToolLedgerActivity})
	val, err := env.ExecuteActivity(contract.ToolLedgerActivity, contract.LedgerRequest{SessionID: "s", Turn: 1, CallID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	var ans contract.LedgerAnswer
	if err := val.Get(&ans); err != nil || ans.Verdict != contract.LedgerNotRun {
		t.Fatalf("the ledger answered %+v (%v), want not run", ans, err)
	}
	call := contract.ToolCall{ID: "c1", Name: toolspec.RunCommand, Arguments: `{"command":"echo hi"}`}
	if _, err := env.ExecuteActivity(contract.RunToolActivity, contract.ToolRequest{SessionID: "s", Turn: 1, Call: call}); err != nil {
		t.Fatal(err)
	}
	if ran {
		t.Fatal("the tool ran after its turn had told the model it did not start")
	}
}
