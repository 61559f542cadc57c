// Package samples holds the escalations that the tests of the notices (escalation) and of the
// Slack bot (slackbot) render and answer, written once for both.
package samples

import (
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// Escalation is a fully filled escalation shared by the tests.
func Escalation(id string) contract.Escalation {
	return contract.Escalation{
		ID:         id,
		WorkflowID: "keel-0123456789abcdef0123",
		Reason:     contract.ReasonGatewayRetries,
		Class:      contract.ClassTransport,
		Summary:    "the model gateway did not answer",
		Tried:      []string{"4 attempts with backoff", "a stricter instruction"},
		Attempts:   4,
		LastError:  "connection reset by peer",
		Calls:      []contract.ToolCall{{ID: "c1", Name: "write_file", Arguments: `{"path":"a.txt"}`}},
		SpentMS:    12000,
		Link:       "http://127.0.0.1:8233/namespaces/default/workflows/keel-0123456789abcdef0123",
		Choices:    []string{contract.ActionRetry, contract.ActionEdit, contract.ActionAbort},
		Deadline:   time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
	}
}

// Approval is an approval notice as the session sends it: one write_file call, its digest,
// choices approve and deny, and the approval deadline.
func Approval(id string) contract.Escalation {
	args := `{"path":"calc.go","content":"package calc\n"}`
	deadline := time.Date(2026, 12, 1, 10, 10, 0, 0, time.UTC)
	a := contract.Approval{CallID: "call_w1", Tool: "write_file", Digest: contract.Digest(args), Arguments: args, Deadline: deadline}
	return contract.Escalation{
		ID:         id,
		WorkflowID: "keel-0123456789abcdef0123",
		Reason:     contract.ReasonApproval,
		Summary:    "write_file waits for approval",
		Calls:      []contract.ToolCall{{ID: a.CallID, Name: a.Tool, Arguments: a.Arguments}},
		Link:       "http://127.0.0.1:8233/namespaces/default/workflows/keel-0123456789abcdef0123",
		Choices:    []string{contract.ActionApprove, contract.ActionDeny},
		Deadline:   deadline,
		Approval:   &a,
	}
}
