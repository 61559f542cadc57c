package events

import (
	"context"
	"fmt"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// historySettle is how long a history reader that is caught up waits before its next long poll:
// the events of a step (a workflow task's start and completion, an activity's scheduling) reach
// the history a few milliseconds apart, and each long poll returns at the first of them. Waiting
// lets them come back in one answer, and delays an event by at most this.
const historySettle = 50 * time.Millisecond

// historyPage is how many events one answer holds at most; an answer this full means more are
// there, and the reader asks again at once.
const historyPage = 256

// historyReader reads one run's history with long polls, from its start or from where an earlier
// read of it stopped.
type historyReader struct {
	c         client.Client
	namespace string
	exec      *commonpb.WorkflowExecution
	token     []byte
	// settle says the last answer left the reader caught up.
	settle bool
}

func newHistoryReader(c client.Client, namespace, workflowID, runID string) *historyReader {
	return &historyReader{c: c, namespace: namespace, exec: &commonpb.WorkflowExecution{WorkflowId: workflowID, RunId: runID}}
}

// next returns the events after those it returned before, waiting for some: an empty answer is
// a long poll that ran out. ended says the history has no more. After an error the reader starts
// over from the run's first event (the caller skips what it has).
func (h *historyReader) next(ctx context.Context) (evs []*historypb.HistoryEvent, ended bool, err error) {
	if h.settle && !sleep(ctx, historySettle) {
		return nil, false, ctx.Err()
	}
	resp, err := h.c.WorkflowService().GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{
		Namespace:              h.namespace,
		Execution:              h.exec,
		MaximumPageSize:        historyPage,
		NextPageToken:          h.token,
		WaitNewEvent:           true,
		HistoryEventFilterType: enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT,
		SkipArchival:           true,
	})
	if err != nil {
		h.token, h.settle = nil, false
		return nil, false, fmt.Errorf("reading the history of %s: %w", h.exec.GetWorkflowId(), err)
	}
	evs = resp.GetHistory().GetEvents()
	h.token = resp.GetNextPageToken()
	h.settle = len(evs) > 0 && len(evs) < historyPage
	return evs, len(h.token) == 0, nil
}
