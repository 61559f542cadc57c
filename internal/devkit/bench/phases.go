package bench

import (
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
)

// Phases splits a turn child's history into where its time went, to attribute the gap between
// a Keel turn and the floor's.
type Phases struct {
	// Span is the child's first to last event.
	Span time.Duration
	// WFTWait is the time workflow tasks spent scheduled and not yet started: server dispatch.
	WFTWait time.Duration
	// WFTRun is the time from a workflow task's start to its completion: the worker's workflow
	// code and the round trip that reports it.
	WFTRun time.Duration
	// Activities is each activity's time from scheduled to completed, in order.
	Activities []time.Duration
}

// ChildPhases reads the phases of one child workflow's history.
func ChildPhases(events []*historypb.HistoryEvent) Phases {
	p := Phases{Span: Span(events)}
	var wftScheduled, wftStarted time.Time
	scheduled := map[int64]time.Time{}
	for _, e := range events {
		at := e.GetEventTime().AsTime()
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
			wftScheduled = at
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			wftStarted = at
			p.WFTWait += at.Sub(wftScheduled)
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			p.WFTRun += at.Sub(wftStarted)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			scheduled[e.GetEventId()] = at
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			id := e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
			p.Activities = append(p.Activities, at.Sub(scheduled[id]))
		}
	}
	return p
}

// BetweenChildren is, for every child after the first, the parent's time from the previous
// child's completion to this child's start: the parent's own work between turns.
func BetweenChildren(events []*historypb.HistoryEvent) []time.Duration {
	var out []time.Duration
	var completed time.Time
	for _, e := range events {
		at := e.GetEventTime().AsTime()
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
			completed = at
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
			if !completed.IsZero() {
				out = append(out, at.Sub(completed))
			}
		}
	}
	return out
}
