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

// TestSegments: a merged timeline is cut at each turn's first event, each gap is named by the
// events either side of it, and the table sums a kind within a turn before taking the median.
func TestSegments(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	tl := Merge(
		[]Labelled{{Who: "gateway", Name: "request", At: at(0)}, {Who: "gateway", Name: "request", At: at(100)}, {Who: "gateway", Name: "request", At: at(150)}},
		[]Labelled{{Who: "wf", Name: "a", At: at(10)}, {Who: "wf", Name: "b", At: at(30)}, {Who: "wf", Name: "a", At: at(110)}, {Who: "wf", Name: "b", At: at(140)}},
	)
	segs := Segments(tl, func(e Labelled) bool { return e.Who == "gateway" })
	if len(segs) != 2 {
		t.Fatalf("%d segments, want 2: %v", len(segs), segs)
	}
	tests := []struct {
		label   string
		perTurn float64
		median  time.Duration
	}{
		{"wf: b -> gateway: request", 1, 10 * time.Millisecond},
		{"wf: a -> wf: b", 1, 20 * time.Millisecond},
		{"gateway: request -> wf: a", 1, 10 * time.Millisecond},
	}
	rows := StepTable(segs)
	if len(rows) != len(tests) {
		t.Fatalf("rows %+v, want %d", rows, len(tests))
	}
	for _, tt := range tests {
		found := false
		for _, r := range rows {
			if r.Label == tt.label {
				found = true
				if r.PerTurn != tt.perTurn || r.Median != tt.median {
					t.Errorf("%s: %.2f per turn, median %v; want %.2f and %v", tt.label, r.PerTurn, r.Median, tt.perTurn, tt.median)
				}
			}
		}
		if !found {
			t.Errorf("no row %q in %+v", tt.label, rows)
		}
	}
}
