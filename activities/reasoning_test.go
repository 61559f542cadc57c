package activities_test

import (
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/gateway"
	"github.com/keelrun/keel/internal/store"
)

// TestCallModelKeepsReasoningInTheStore: on the Responses wire, the reasoning items of a reply are
// stored with the assistant message, left out of the activity's result (the workflow's history
// never carries them), and the next call, which loads the transcript from the store, hands them
// back.
func TestCallModelKeepsReasoningInTheStore(t *testing.T) {
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	p, err := gateway.New(gateway.Config{Provider: gateway.ProviderOpenAIResponses, BaseURL: gw.BaseURL() + "/v1", APIKey: "k", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	acts := &activities.Activities{Models: activities.Solo(p), Store: st}
	call := func(req contract.ModelRequest) contract.ModelResponse {
		t.Helper()
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivityWithOptions(acts.CallModel, activity.RegisterOptions{Name: contract.CallModelActivity})
		val, err := env.ExecuteActivity(contract.CallModelActivity, req)
		if err != nil {
			t.Fatal(err)
		}
		var resp contract.ModelResponse
		if err := val.Get(&resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}

	first := call(contract.ModelRequest{SessionID: "s", Turn: 1, Append: []contract.Message{{Role: contract.RoleUser, Content: "fix the failing test"}}})
	if first.Message.Reasoning != nil || len(first.Message.ToolCalls) == 0 {
		t.Fatalf("result message %+v: want tool calls and no reasoning items", first.Message)
	}
	stored, err := st.Load(t.Context(), first.Head)
	if err != nil {
		t.Fatal(err)
	}
	if last := stored[len(stored)-1]; last.Role != contract.RoleAssistant || len(last.Reasoning) != 1 {
		t.Fatalf("stored reply %+v: want the assistant message with its reasoning item", last)
	}
	var results []contract.Message
	for _, c := range first.Message.ToolCalls {
		results = append(results, contract.Message{Role: contract.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: "ok"})
	}
	call(contract.ModelRequest{SessionID: "s", Turn: 2, Head: first.Head, Append: results})
	recs := gw.Stats().Records
	if len(recs) != 2 || recs[1].Reasoning != 1 {
		t.Fatalf("records %+v: want the second call to hand back the first reply's reasoning item", recs)
	}
}
