package deploy

import (
	"context"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
)

// taskRun is one workflow or activity task of a session (or of one of its turns) as its history
// records it: when it started and which worker took it.
type taskRun struct {
	At       time.Time
	Identity string
}

// sessionHistory is what the histories of a session and its turn workflows say about where its
// work ran.
type sessionHistory struct {
	Tasks []taskRun
	// Activities maps "workflowID#activityID" to the identity of the worker that started it.
	Activities map[string]string
	// LostTools maps the tool activities ("workflowID#activityID") that timed out to the kind of
	// timeout (TIMEOUT_TYPE_HEARTBEAT when their worker died while running them).
	LostTools map[string]string
}

// readSessionHistory walks the history of a session and of every child workflow it started.
func readSessionHistory(ctx context.Context, c client.Client, sessionID string) (sessionHistory, error) {
	h := sessionHistory{Activities: map[string]string{}, LostTools: map[string]string{}}
	queue := []string{sessionID}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		children, err := h.readOne(ctx, c, id)
		if err != nil {
			return h, err
		}
		queue = append(queue, children...)
	}
	return h, nil
}

// readOne adds one workflow's tasks and activities and returns the IDs of the children it started.
func (h *sessionHistory) readOne(ctx context.Context, c client.Client, workflowID string) ([]string, error) {
	type activity struct{ id, typ string }
	scheduled := map[int64]activity{} // by the event ID of ActivityTaskScheduled
	var children []string
	it := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("reading the history of %s: %w", workflowID, err)
		}
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			h.Tasks = append(h.Tasks, taskRun{At: e.GetEventTime().AsTime(), Identity: e.GetWorkflowTaskStartedEventAttributes().GetIdentity()})
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := e.GetActivityTaskScheduledEventAttributes()
			scheduled[e.GetEventId()] = activity{a.GetActivityId(), a.GetActivityType().GetName()}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			a := e.GetActivityTaskStartedEventAttributes()
			h.Tasks = append(h.Tasks, taskRun{At: e.GetEventTime().AsTime(), Identity: a.GetIdentity()})
			h.Activities[workflowID+"#"+scheduled[a.GetScheduledEventId()].id] = a.GetIdentity()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			to := e.GetActivityTaskTimedOutEventAttributes()
			if a := scheduled[to.GetScheduledEventId()]; a.typ == contract.RunToolActivity {
				h.LostTools[workflowID+"#"+a.id] = to.GetFailure().GetTimeoutFailureInfo().GetTimeoutType().String()
			}
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			children = append(children, e.GetStartChildWorkflowExecutionInitiatedEventAttributes().GetWorkflowId())
		}
	}
	return children, nil
}

// workerNames turns the SDK's default worker identity ("pid@host@") into the cluster's process
// names, by the pids run-cluster.sh recorded.
type workerNames map[string]string // pid → name

func (w workerNames) of(identity string) string {
	pid, _, _ := strings.Cut(identity, "@")
	if name, ok := w[pid]; ok {
		return name
	}
	return "unknown(" + identity + ")"
}

// movedAcross reports whether a session had tasks on from before the kill and on to after it.
func (h sessionHistory) movedAcross(names workerNames, kill time.Time, from, to string) bool {
	var before, after bool
	for _, r := range h.Tasks {
		switch {
		case r.At.Before(kill) && names.of(r.Identity) == from:
			before = true
		case r.At.After(kill) && names.of(r.Identity) == to:
			after = true
		}
	}
	return before && after
}
