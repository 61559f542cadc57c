package bench

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"
)

// History reads every event of one run.
func History(ctx context.Context, c client.Client, id, runID string) ([]*historypb.HistoryEvent, error) {
	it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var out []*historypb.HistoryEvent
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("reading the history of %s/%s: %w", id, runID, err)
		}
		out = append(out, ev)
	}
	return out, nil
}

// Bytes is the encoded size of events, the figure Temporal's history size limits count.
func Bytes(events []*historypb.HistoryEvent) int {
	n := 0
	for _, e := range events {
		n += proto.Size(e)
	}
	return n
}

// Run is one run of a workflow that continued as new.
type Run struct {
	RunID  string
	Events []*historypb.HistoryEvent
}

// Runs reads every run of a workflow, oldest first, by following each run's first event back to
// the run it continued from.
func Runs(ctx context.Context, c client.Client, id string) ([]Run, error) {
	var runs []Run
	runID := ""
	for range 1000 {
		evs, err := History(ctx, c, id, runID)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			return nil, fmt.Errorf("run %s of %s has no events", runID, id)
		}
		if runID == "" {
			d, err := c.DescribeWorkflow(ctx, id, "")
			if err != nil {
				return nil, fmt.Errorf("describing %s: %w", id, err)
			}
			runID = d.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId()
		}
		runs = append([]Run{{RunID: runID, Events: evs}}, runs...)
		prev := evs[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if prev == "" {
			return runs, nil
		}
		runID = prev
	}
	return nil, fmt.Errorf("more than 1000 runs of %s", id)
}

// Span is the time from the first to the last event of a history.
func Span(events []*historypb.HistoryEvent) time.Duration {
	if len(events) < 2 {
		return 0
	}
	return events[len(events)-1].GetEventTime().AsTime().Sub(events[0].GetEventTime().AsTime())
}

// Timeline renders a history as event types with the milliseconds since the previous event, to
// see where a turn's time goes.
func Timeline(events []*historypb.HistoryEvent) string {
	out := ""
	var prev time.Time
	for i, e := range events {
		t := e.GetEventTime().AsTime()
		gap := 0.0
		if i > 0 {
			gap = Ms(t.Sub(prev))
		}
		prev = t
		out += fmt.Sprintf("  %+8.1f ms  %s\n", gap, e.GetEventType())
	}
	return out
}
