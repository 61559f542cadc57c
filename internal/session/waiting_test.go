package session

import (
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

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
