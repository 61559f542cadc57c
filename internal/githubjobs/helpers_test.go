package githubjobs

import (
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"

	"github.com/keelrun/keel/internal/contract"
)

// executionWith is a listed execution carrying the GitHubJobKey values given (none when nil) and
// the pull request pr (owner/name#N).
func executionWith(t *testing.T, id, pr string, vals []string) *workflowpb.WorkflowExecutionInfo {
	t.Helper()
	ex := &workflowpb.WorkflowExecutionInfo{Execution: &commonpb.WorkflowExecution{WorkflowId: id}}
	if vals == nil {
		return ex
	}
	p, err := converter.GetDefaultDataConverter().ToPayload(vals)
	if err != nil {
		t.Fatal(err)
	}
	q, err := converter.GetDefaultDataConverter().ToPayload(pr)
	if err != nil {
		t.Fatal(err)
	}
	ex.SearchAttributes = &commonpb.SearchAttributes{IndexedFields: map[string]*commonpb.Payload{contract.GitHubJobKey.GetName(): p, contract.PullRequestKey.GetName(): q}}
	return ex
}
