package bench

import (
	"cmp"
	"slices"
	"strings"
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

// Labelled is one event of a merged timeline: the workflow it belongs to and its name, the event
// type with the activity type for activity events ("ActivityTaskStarted CallModel").
type Labelled struct {
	Who   string
	Name  string
	At    time.Time
	Event *historypb.HistoryEvent
}

// Label names the events of one workflow's history for a merged timeline.
func Label(who string, events []*historypb.HistoryEvent) []Labelled {
	types := map[int64]string{}
	out := make([]Labelled, 0, len(events))
	for _, e := range events {
		name := strings.TrimPrefix(e.GetEventType().String(), "EVENT_TYPE_")
		name = strings.ReplaceAll(strings.ToLower(name), "_", " ")
		var scheduled int64
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			types[e.GetEventId()] = e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
			scheduled = e.GetEventId()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			scheduled = e.GetActivityTaskStartedEventAttributes().GetScheduledEventId()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			scheduled = e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			scheduled = e.GetActivityTaskFailedEventAttributes().GetScheduledEventId()
		}
		if t := types[scheduled]; t != "" {
			name += " " + t
		}
		out = append(out, Labelled{Who: who, Name: name, At: e.GetEventTime().AsTime(), Event: e})
	}
	return out
}

// Merge orders the events of several workflows by time, each workflow's own order kept.
func Merge(lists ...[]Labelled) []Labelled {
	var out []Labelled
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.SortStableFunc(out, func(a, b Labelled) int { return a.At.Compare(b.At) })
	return out
}

// Step is one gap of a timeline, named by the events on either side of it.
type Step struct {
	Label string
	D     time.Duration
}

// Segments cuts a merged timeline at every event start says begins a turn and returns each
// turn's steps, from its first event to the next turn's first event (the last segment, which
// has no next turn, is left out).
func Segments(tl []Labelled, start func(Labelled) bool) [][]Step {
	var out [][]Step
	var cur []Step
	open := false
	for i, e := range tl {
		if start(e) {
			if open {
				out = append(out, cur)
			}
			cur, open = nil, true
		}
		if open && i+1 < len(tl) {
			next := tl[i+1]
			cur = append(cur, Step{Label: e.Who + ": " + e.Name + " -> " + next.Who + ": " + next.Name, D: next.At.Sub(e.At)})
		}
	}
	return out
}

// StepRow is one kind of step over many turns: how many a turn has and the median of their sum
// per turn.
type StepRow struct {
	Label   string
	PerTurn float64
	Median  time.Duration
}

// StepTable sums each kind of step within every segment and returns, per kind, the count per
// segment and the median per segment (segments without it count as zero), largest first.
func StepTable(segs [][]Step) []StepRow {
	sums := map[string][]time.Duration{}
	counts := map[string]int{}
	for i, seg := range segs {
		for _, s := range seg {
			d := sums[s.Label]
			if len(d) == 0 {
				d = make([]time.Duration, len(segs))
			}
			d[i] += s.D
			sums[s.Label] = d
			counts[s.Label]++
		}
	}
	var rows []StepRow
	for label, ds := range sums {
		rows = append(rows, StepRow{Label: label, PerTurn: float64(counts[label]) / float64(len(segs)), Median: Percentile(ds, 0.5)})
	}
	slices.SortFunc(rows, func(a, b StepRow) int {
		return cmp.Or(cmp.Compare(b.Median, a.Median), cmp.Compare(a.Label, b.Label))
	})
	return rows
}
