package events

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/keelrun/keel/internal/contract"
)

// DefaultPoll is how often a follower reads a running activity's heartbeat details until it
// knows when the next heartbeat is due (pacer), so a piece of text waits at most about one
// events.interval plus this before it is printed. Describing a workflow is not a billed action,
// and a follower reads only while an activity runs.
const DefaultPoll = 300 * time.Millisecond

// retryFirst and retryCap shape a follower's waits after the server could not be read (a
// watcher whose network went away): doubling from retryFirst up to retryCap, and every event is
// still delivered once it is back, since positions say what was delivered.
const (
	retryFirst = 200 * time.Millisecond
	retryCap   = 5 * time.Second
)

// FollowOptions tune Follow.
type FollowOptions struct {
	// FromNow skips the turns and activities that had ended when Follow was called (a `watch`
	// shows those from the transcript); without it every event of the session's current run is
	// delivered from its start.
	FromNow bool
	// Poll overrides DefaultPoll.
	Poll time.Duration
	// Namespace is the session's namespace, client.DefaultNamespace when empty.
	Namespace string
	// DataConverter decodes results and heartbeat details; nil is the SDK's default, which reads
	// what the client hands over (a client with codec.keys decrypts every payload it receives).
	DataConverter converter.DataConverter
	// Resolve fetches a payload the SDK kept out of history (a claim, for a result over the
	// store's threshold: store.Resolver) and returns others as they are; nil reads claims as
	// carrying no events.
	Resolve func(ctx context.Context, p *commonpb.Payload) (*commonpb.Payload, error)
}

// Source is a session's live events as a follower reads them from Temporal.
type Source struct {
	events chan contract.Event
	done   chan struct{}
	cancel context.CancelFunc
	f      *follower
}

// Follow starts reading the live events of session workflowID through c, its current run and
// the runs it continues as, until the last of them ends or the source is closed. Each event is
// delivered once and in order: activity by activity as the session's and its turns' histories
// list them, and within an activity by position.
func Follow(ctx context.Context, c client.Client, workflowID string, o FollowOptions) *Source {
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Namespace == "" {
		o.Namespace = client.DefaultNamespace
	}
	if o.DataConverter == nil {
		o.DataConverter = converter.GetDefaultDataConverter()
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &follower{c: c, o: o, next: map[string]int{}, workflowID: workflowID}
	s := &Source{events: make(chan contract.Event, 4096), done: make(chan struct{}), cancel: cancel, f: f}
	f.out = s.events
	go func() {
		defer close(s.done)
		defer close(s.events)
		f.run(ctx)
	}()
	return s
}

// Events delivers the events; it is closed once the session ended and all of them were
// delivered, or the source was closed.
func (s *Source) Events() <-chan contract.Event { return s.events }

// Busy says a turn of the session runs: its events will say what happens next, so a follower
// need not ask the session (a billed query) while it is busy.
func (s *Source) Busy() bool { return s.f.turns.Load() > 0 }

// Close stops reading.
func (s *Source) Close() error {
	s.cancel()
	for range s.events {
	}
	<-s.done
	return nil
}

// follower is the state of one Source.
type follower struct {
	c          client.Client
	o          FollowOptions
	out        chan<- contract.Event
	workflowID string

	// mu serialises deliveries between the history readers and the heartbeat pollers; next is the
	// position after the last event delivered, per activity (run ID and activity ID).
	mu   sync.Mutex
	next map[string]int
	// turns counts the turn histories being read (one while a turn runs).
	turns atomic.Int32
	// cadence is the heartbeat cadence the pacers learned (a time.Duration, 0 before), kept
	// across runs: every turn's calls heartbeat at the same worker's events.interval.
	cadence atomic.Int64
}

// run follows the session's run chain.
func (f *follower) run(ctx context.Context) {
	fromNow := f.o.FromNow
	runID := ""
	for wait := retryFirst; runID == ""; wait = min(2*wait, retryCap) {
		d, err := f.c.DescribeWorkflow(ctx, f.workflowID, "")
		if err == nil {
			runID = d.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId()
			break
		}
		var gone *serviceerror.NotFound
		if errors.As(err, &gone) || !sleep(ctx, wait) {
			return
		}
	}
	for runID != "" && ctx.Err() == nil {
		runID = f.followRun(ctx, f.workflowID, runID, fromNow)
		fromNow = false
	}
}

// runState is what a follower knows of one run it reads: the activities scheduled and not yet
// ended, in the order they were scheduled.
type runState struct {
	workflowID, runID string
	pending           []pendingActivity
	// moved wakes the heartbeat poller when the first pending activity may have changed.
	moved chan struct{}
}

// move says the pending activities changed; called with mu held.
func (r *runState) move() {
	select {
	case r.moved <- struct{}{}:
	default:
	}
}

type pendingActivity struct {
	scheduled  int64
	activityID string
}

func (r *runState) key(activityID string) string { return r.runID + "/" + activityID }

// index is where the activity scheduled at event id is in pending, or -1.
func (r *runState) index(id int64) int {
	for i, p := range r.pending {
		if p.scheduled == id {
			return i
		}
	}
	return -1
}

// followRun delivers the events of one run (the session's or a turn's) until it ends, and
// returns the run it continued as, "" when it ended otherwise or ctx ended.
func (f *follower) followRun(ctx context.Context, workflowID, runID string, fromNow bool) string {
	var ended map[int64]bool
	// attached is the last event of the run when the follower attached (fromNow): a turn started
	// by then is followed from then too.
	var attached int64
	for wait := retryFirst; fromNow && ended == nil; wait = min(2*wait, retryCap) {
		var err error
		if ended, attached, err = f.endedSoFar(ctx, workflowID, runID); err != nil && !sleep(ctx, wait) {
			return ""
		}
	}
	r := &runState{workflowID: workflowID, runID: runID, moved: make(chan struct{}, 1)}
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	go f.pollHeartbeats(pctx, r)

	h := newHistoryReader(f.c, f.o.Namespace, workflowID, runID)
	var last int64
	for wait := retryFirst; ; {
		evs, over, err := h.next(ctx)
		if err != nil {
			// The history could not be read: read it again from where it was, after a wait.
			if !sleep(ctx, wait) {
				return ""
			}
			wait = min(2*wait, retryCap)
			continue
		}
		wait = retryFirst
		for _, ev := range evs {
			if ev.GetEventId() <= last {
				continue
			}
			last = ev.GetEventId()
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				if !ended[ev.GetEventId()] {
					f.mu.Lock()
					r.pending = append(r.pending, pendingActivity{scheduled: ev.GetEventId(), activityID: ev.GetActivityTaskScheduledEventAttributes().GetActivityId()})
					r.move()
					f.mu.Unlock()
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				a := ev.GetActivityTaskCompletedEventAttributes()
				f.ended(ctx, r, a.GetScheduledEventId(), a.GetResult())
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
				a := ev.GetActivityTaskFailedEventAttributes()
				f.ended(ctx, r, a.GetScheduledEventId(), a.GetFailure().GetApplicationFailureInfo().GetDetails())
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
				a := ev.GetActivityTaskCanceledEventAttributes()
				f.ended(ctx, r, a.GetScheduledEventId(), a.GetDetails())
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
				a := ev.GetActivityTaskTimedOutEventAttributes()
				f.ended(ctx, r, a.GetScheduledEventId(), a.GetFailure().GetTimeoutFailureInfo().GetLastHeartbeatDetails())
			case enumspb.EVENT_TYPE_MARKER_RECORDED:
				if ev.GetEventId() > attached {
					f.recorded(ctx, r, ev)
				}
			case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
				a := ev.GetChildWorkflowExecutionStartedEventAttributes()
				if a.GetWorkflowType().GetName() == contract.TurnWorkflow && !ended[a.GetInitiatedEventId()] {
					// Turns run one at a time, and sub-agents' children are sessions of their own.
					f.turns.Add(1)
					f.followRun(ctx, a.GetWorkflowExecution().GetWorkflowId(), a.GetWorkflowExecution().GetRunId(), ev.GetEventId() <= attached)
					f.turns.Add(-1)
				}
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
				return ev.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
				enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
				enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
				return ""
			}
		}
		if over {
			return ""
		}
	}
}

// endedSoFar lists the activities and children of a run that ended by now (the events that
// scheduled or initiated them), for a follower that skips them, and the run's last event.
func (f *follower) endedSoFar(ctx context.Context, workflowID, runID string) (map[int64]bool, int64, error) {
	ended := map[int64]bool{}
	var last int64
	it := f.c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, 0, fmt.Errorf("reading the history of %s: %w", workflowID, err)
		}
		last = ev.GetEventId()
		var id int64
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			id = ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			id = ev.GetActivityTaskFailedEventAttributes().GetScheduledEventId()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
			id = ev.GetActivityTaskCanceledEventAttributes().GetScheduledEventId()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			id = ev.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId()
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
			id = ev.GetChildWorkflowExecutionCompletedEventAttributes().GetInitiatedEventId()
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED:
			id = ev.GetChildWorkflowExecutionFailedEventAttributes().GetInitiatedEventId()
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED:
			id = ev.GetChildWorkflowExecutionCanceledEventAttributes().GetInitiatedEventId()
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED:
			id = ev.GetChildWorkflowExecutionTerminatedEventAttributes().GetInitiatedEventId()
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT:
			id = ev.GetChildWorkflowExecutionTimedOutEventAttributes().GetInitiatedEventId()
		}
		if id != 0 {
			ended[id] = true
		}
	}
	return ended, last, nil
}

// ended delivers what an ended activity's result or failure carries after the events delivered
// from its heartbeats, and forgets the activity.
func (f *follower) ended(ctx context.Context, r *runState, scheduled int64, p *commonpb.Payloads) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := r.index(scheduled)
	if i < 0 {
		return
	}
	a := r.pending[i]
	r.pending = append(r.pending[:i], r.pending[i+1:]...)
	r.move()
	f.deliver(ctx, r.key(a.activityID), f.decode(ctx, p))
}

// recorded delivers the events a local activity's result carries: all at once, since a local
// activity has no heartbeats, once the workflow task that ran it completed.
func (f *follower) recorded(ctx context.Context, r *runState, ev *historypb.HistoryEvent) {
	la, ok := LocalActivityOf(ev)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deliver(ctx, r.key("marker-"+strconv.FormatInt(ev.GetEventId(), 10)), f.decode(ctx, la.Result))
}

// pollHeartbeats reads the heartbeat details of the first running activity of r while there is
// one, when its pacer says (every Poll, or about once per heartbeat once it knows their cadence).
// Only the first: a later activity's events wait until the history says the first ended and its
// last events were delivered, so the order holds. Details are decoded (and decrypted, with
// codec.keys) only when the activity heartbeat since the last read.
func (f *follower) pollHeartbeats(ctx context.Context, r *runState) {
	p := &pacer{poll: f.o.Poll, every: time.Duration(f.cadence.Load())}
	t := time.NewTimer(f.o.Poll)
	defer t.Stop()
	var read pendingActivity
	for {
		due := false
		select {
		case <-ctx.Done():
			return
		case <-r.moved:
		case <-t.C:
			due = true
		}
		f.mu.Lock()
		var first pendingActivity
		if len(r.pending) > 0 {
			first = r.pending[0]
		}
		f.mu.Unlock()
		if first != read {
			// Another activity (or none): read it within a poll, as it may stream at once.
			read = first
			p.restart()
			t.Reset(f.o.Poll)
			continue
		}
		if !due || first.scheduled == 0 {
			// The same activity, its read not due yet; or none, until one is scheduled.
			continue
		}
		start := time.Now()
		beat, live := f.readBeat(ctx, r, first, p.beat)
		t.Reset(time.Until(p.next(start, time.Now(), beat)))
		f.cadence.Store(int64(p.every))
		if live == nil {
			continue
		}
		f.mu.Lock()
		if len(r.pending) > 0 && r.pending[0] == first {
			f.deliver(ctx, r.key(first.activityID), live)
		}
		f.mu.Unlock()
	}
}

// readBeat describes r's run and returns the last heartbeat time of activity a (zero before its
// first) and, when that is later than seen, the events its details carry.
func (f *follower) readBeat(ctx context.Context, r *runState, a pendingActivity, seen time.Time) (time.Time, *contract.LiveEvents) {
	d, err := f.c.DescribeWorkflow(ctx, r.workflowID, r.runID)
	if err != nil {
		return seen, nil
	}
	for _, pa := range d.RawResponse.GetPendingActivities() {
		if pa.GetActivityId() != a.activityID || pa.GetLastHeartbeatTime() == nil {
			continue
		}
		beat := pa.GetLastHeartbeatTime().AsTime()
		if !beat.After(seen) {
			return seen, nil
		}
		return beat, f.decode(ctx, pa.GetHeartbeatDetails())
	}
	return seen, nil
}

// decode reads the live events a result, failure details or heartbeat details carry (in their
// last payload: a failure's details hold the contract.Failure first); nil when they carry none
// (an activity that publishes nothing, or details of another shape).
func (f *follower) decode(ctx context.Context, p *commonpb.Payloads) *contract.LiveEvents {
	ps := p.GetPayloads()
	if len(ps) == 0 {
		return nil
	}
	last := ps[len(ps)-1]
	if f.o.Resolve != nil {
		var err error
		if last, err = f.o.Resolve(ctx, last); err != nil {
			return nil
		}
	}
	var d contract.LiveDetails
	if err := f.o.DataConverter.FromPayload(last, &d); err != nil {
		return nil
	}
	return d.Live
}

// deliver hands over the events of l the watcher has not had, by position; a hole before them
// (events left out of a bounded window) is said in a notice. Called with mu held.
func (f *follower) deliver(ctx context.Context, key string, l *contract.LiveEvents) {
	if l == nil || len(l.Events) == 0 {
		return
	}
	next := f.next[key]
	if gap := l.From - next; gap > 0 {
		f.send(ctx, gapNotice(l.Events[0], gap))
		next = l.From
	}
	for i, e := range l.Events {
		if pos := l.From + i; pos >= next {
			if !f.send(ctx, e) {
				return
			}
			next = pos + 1
			f.next[key] = next
		}
	}
	f.next[key] = next
}

func (f *follower) send(ctx context.Context, e contract.Event) bool {
	select {
	case f.out <- e:
		return true
	case <-ctx.Done():
		return false
	}
}

// gapNotice says, before e, that n events before it were left out of what reached the watcher:
// the activity's window had moved past them. The transcript has what they showed.
func gapNotice(e contract.Event, n int) contract.Event {
	pieces := "events were"
	if n == 1 {
		pieces = "event was"
	}
	return contract.Event{Event: contract.EventNotice, WorkflowID: e.WorkflowID, Turn: e.Turn, Time: e.Time,
		Text: fmt.Sprintf("%d live %s left out of what reached this terminal; the session's transcript is complete", n, pieces)}
}

// sleep waits d, or less when ctx ends; it says whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
