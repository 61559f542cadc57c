package session

import (
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestQuery: a listing asks for sessions only (no turn children, no runs closed by
// continue-as-new), and each status filter names the attribute that holds it.
func TestQuery(t *testing.T) {
	base := "WorkflowType = 'AgentSession' AND ExecutionStatus != 'ContinuedAsNew'"
	cases := map[string]string{
		"":                   base,
		"running":            base + " AND ExecutionStatus = 'Running' AND KeelStatus = 'running'",
		"waiting":            base + " AND ExecutionStatus = 'Running' AND KeelStatus = 'waiting'",
		"failed":             base + " AND KeelStatus = 'failed'",
		StatusTerminated:     base + " AND ExecutionStatus = 'Terminated'",
		StatusTimedOut:       base + " AND ExecutionStatus = 'TimedOut'",
		contract.StatusLimit: base + " AND KeelStatus = 'limit'",
	}
	for status, want := range cases {
		if got := Query(status); got != want {
			t.Errorf("%q: %s\nwant %s", status, got, want)
		}
	}
}
