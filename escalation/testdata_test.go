package escalation

import (
	"time"

	"github.com/keelrun/keel/contract"
)

// sampleEscalation is a fully filled escalation shared by the tests.
func sampleEscalation(id string) contract.Escalation {
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
		Spent:      12 * time.Second,
		Link:       "http://127.0.0.1:8233/namespaces/default/workflows/keel-0123456789abcdef0123",
		Choices:    []string{contract.ActionRetry, contract.ActionEdit, contract.ActionAbort},
		Deadline:   time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
	}
}
