package escalation

import (
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestSessionsQuery: a listing asks for sessions only (no turn children, no runs closed by
// continue-as-new), and each status filter names the attribute that holds it.
func TestSessionsQuery(t *testing.T) {
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
		if got := SessionsQuery(status); got != want {
			t.Errorf("%q: %s\nwant %s", status, got, want)
		}
	}
}

// TestWaitingOn: a session waits on a person for an open escalation that has choices, or for an
// approval; an answered escalation or a plain notice waits for nobody.
func TestWaitingOn(t *testing.T) {
	cases := []struct {
		name string
		st   contract.SessionStatus
		want string
	}{
		{"nothing", contract.SessionStatus{}, ""},
		{"escalation", contract.SessionStatus{Escalation: &contract.Escalation{ID: "esc-1", Reason: contract.ReasonRepairCap, Choices: []string{"retry"}}}, "escalation esc-1 ("},
		{"answered", contract.SessionStatus{Escalation: &contract.Escalation{ID: "esc-1", Choices: []string{"retry"}, Answer: &contract.Answer{}}}, ""},
		{"notice", contract.SessionStatus{Escalation: &contract.Escalation{ID: "esc-2"}}, ""},
		{"approval", contract.SessionStatus{Approval: &contract.Approval{Tool: "run_command", CallID: "c7"}}, "approval of run_command (call c7)"},
	}
	for _, c := range cases {
		got := WaitingOn(c.st)
		if (c.want == "") != (got == "") || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
