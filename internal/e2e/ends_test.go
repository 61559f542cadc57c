package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// temporalEnds is how Temporal must show a session that ended with each status: the status of
// the execution and, for a failure, the error type.
var temporalEnds = map[string]struct {
	status enumspb.WorkflowExecutionStatus
	typ    string
}{
	contract.StatusCompleted: {enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, ""},
	contract.StatusCancelled: {enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, ""},
	contract.StatusAborted:   {enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, contract.EndAborted},
	contract.StatusFailed:    {enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, contract.EndFailed},
	contract.StatusLimit:     {enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, contract.EndLimit},
}

// requireTemporalEnd checks that Temporal tells the same story as the starter's summary: the
// execution's status, the failure's type and that it is not retryable, read from the server.
func requireTemporalEnd(t *testing.T, sum contract.Summary) {
	t.Helper()
	want, ok := temporalEnds[sum.Status]
	if !ok {
		t.Fatalf("summary status %q has no Temporal end", sum.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	desc, err := env.Client().DescribeWorkflow(ctx, sum.WorkflowID, sum.RunID)
	if err != nil {
		t.Fatalf("describing %s: %v", sum.WorkflowID, err)
	}
	d := desc.RawResponse
	if got := d.GetWorkflowExecutionInfo().GetStatus(); got != want.status {
		t.Fatalf("Temporal shows %s as %s, want %s for a %s session", sum.WorkflowID, got, want.status, sum.Status)
	}
	if want.typ == "" {
		return
	}
	it := env.Client().GetWorkflowHistory(ctx, sum.WorkflowID, sum.RunID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	ev, err := it.Next()
	if err != nil {
		t.Fatalf("reading the close event of %s: %v", sum.WorkflowID, err)
	}
	f := ev.GetWorkflowExecutionFailedEventAttributes().GetFailure()
	info := f.GetApplicationFailureInfo()
	if info.GetType() != want.typ || !info.GetNonRetryable() {
		t.Fatalf("%s failed with type %q (non-retryable %t), want %q non-retryable", sum.WorkflowID, info.GetType(), info.GetNonRetryable(), want.typ)
	}
	if f.GetMessage() == "" {
		t.Fatalf("%s failed with an empty message", sum.WorkflowID)
	}
}

// requireStamped checks that every line the starter printed with --output jsonl says when it
// happened and which session it is about, the summary included.
func requireStamped(t *testing.T, r testenv.Run) {
	t.Helper()
	wid := r.Summary.WorkflowID
	if wid == "" {
		t.Fatalf("no summary with a workflow ID:\n%s", r.Stdout)
	}
	for _, e := range r.Events {
		if e.Time.IsZero() || e.Time.Year() < 2000 || e.WorkflowID != wid {
			t.Fatalf("a %s event lacks its time or workflow ID (want %s): %+v", e.Event, wid, e)
		}
	}
	lines := nonEmptyLines(r.Stdout)
	var last struct {
		Event string    `json:"event"`
		Time  time.Time `json:"time"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Event != contract.EventSummary || last.Time.IsZero() {
		t.Fatalf("the last line is not a summary with a time: %s", lines[len(lines)-1])
	}
}
