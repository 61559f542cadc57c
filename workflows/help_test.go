package workflows

import (
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestHelpLinesAreShortWithTheActionFirst: every answer in a waiting session's details starts
// with its action word in bold, every command line fits the Web UI's pane, and the deny command
// differs from the approve one on its first line.
func TestHelpLinesAreShortWithTheActionFirst(t *testing.T) {
	wid := "keel-run-20261201-105755-81e1dd"
	digest := strings.Repeat("d7", 32)
	cases := []struct {
		name    string
		help    string
		actions []string
	}{
		{"escalation", escalationHelp(contract.Escalation{ID: "esc-5f8e8f32-1", WorkflowID: wid, Reason: "repair_cap_exceeded",
			Summary: "the model sent invalid arguments 4 times in a row", Choices: []string{contract.ActionRetry, contract.ActionEdit, contract.ActionAbort}}),
			[]string{contract.ActionRetry, contract.ActionEdit, contract.ActionAbort}},
		{"approval", approvalHelp(wid, contract.Approval{CallID: "call_fe1bee106b08c237dfaca", Tool: "run_command", Arguments: `{"command":"go test ./..."}`, Digest: digest}),
			[]string{contract.ActionApprove, contract.ActionDeny}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, a := range c.actions {
				if !strings.Contains(c.help, "\n**"+a+"**") {
					t.Errorf("no paragraph starts with **%s**:\n%s", a, c.help)
				}
			}
			for _, l := range strings.Split(c.help, "\n") {
				if strings.HasPrefix(l, "    ") && len(l)-4 > 80 {
					t.Errorf("code line of %d characters: %q", len(l)-4, l)
				}
			}
		})
	}
	if !strings.Contains(cases[1].help, "    starter approve --deny \\\n") {
		t.Errorf("the deny command does not say --deny on its first line:\n%s", cases[1].help)
	}
}
