package bench

import (
	"context"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// ev builds an event at ms milliseconds after a fixed start.
func ev(id int64, ms int, t enumspb.EventType, attrs func(*historypb.HistoryEvent)) *historypb.HistoryEvent {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := &historypb.HistoryEvent{EventId: id, EventType: t, EventTime: timestamppb.New(base.Add(time.Duration(ms) * time.Millisecond))}
	if attrs != nil {
		attrs(e)
	}
	return e
}

func completedOf(scheduled int64) func(*historypb.HistoryEvent) {
	return func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{
			ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{ScheduledEventId: scheduled},
		}
	}
}

func TestChildPhases(t *testing.T) {
	evs := []*historypb.HistoryEvent{
		ev(1, 0, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, nil),
		ev(2, 1, enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, nil),
		ev(3, 4, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED, nil),
		ev(4, 10, enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, nil),
		ev(5, 10, enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, nil),
		ev(6, 11, enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED, nil),
		ev(7, 19, enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, completedOf(5)),
		ev(8, 19, enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, nil),
		ev(9, 21, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED, nil),
		ev(10, 30, enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, nil),
		ev(11, 31, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, nil),
	}
	got := ChildPhases(evs)
	want := Phases{Span: 31 * time.Millisecond, WFTWait: 5 * time.Millisecond, WFTRun: 15 * time.Millisecond, Activities: []time.Duration{9 * time.Millisecond}}
	if got.Span != want.Span || got.WFTWait != want.WFTWait || got.WFTRun != want.WFTRun || len(got.Activities) != 1 || got.Activities[0] != want.Activities[0] {
		t.Errorf("ChildPhases = %+v, want %+v", got, want)
	}
}

func TestBetweenChildren(t *testing.T) {
	tests := []struct {
		name string
		evs  []*historypb.HistoryEvent
		want []time.Duration
	}{
		{"one child has no gap", []*historypb.HistoryEvent{
			ev(1, 0, enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, nil),
			ev(2, 50, enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED, nil),
		}, nil},
		{"two children", []*historypb.HistoryEvent{
			ev(1, 0, enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, nil),
			ev(2, 50, enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED, nil),
			ev(3, 62, enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, nil),
			ev(4, 100, enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED, nil),
			ev(5, 107, enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, nil),
		}, []time.Duration{12 * time.Millisecond, 7 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BetweenChildren(tt.evs)
			if len(got) != len(tt.want) {
				t.Fatalf("BetweenChildren = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("gap %d = %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestRPCsRecordsCallsButNotPolls(t *testing.T) {
	var r RPCs
	ok := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	for _, m := range []string{
		"/temporal.api.workflowservice.v1.WorkflowService/RecordActivityTaskHeartbeat",
		"/temporal.api.workflowservice.v1.WorkflowService/RecordActivityTaskHeartbeat",
		"/temporal.api.workflowservice.v1.WorkflowService/PollActivityTaskQueue",
		"/temporal.api.workflowservice.v1.WorkflowService/RespondActivityTaskCompleted",
	} {
		if err := r.Intercept(context.Background(), m, nil, nil, nil, ok); err != nil {
			t.Fatal(err)
		}
	}
	got := r.Take()
	if len(got) != 2 || len(got["RecordActivityTaskHeartbeat"]) != 2 || len(got["RespondActivityTaskCompleted"]) != 1 {
		t.Errorf("recorded %v, want 2 heartbeats and 1 completion, no polls", got)
	}
	if again := r.Take(); len(again) != 0 {
		t.Errorf("second Take = %v, want nothing", again)
	}
}
