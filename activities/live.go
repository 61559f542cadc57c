package activities

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/events"
	"github.com/keelrun/keel/internal/tools"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// liveEvery is how often a running command's new output becomes an output event.
const liveEvery = 250 * time.Millisecond

// liveCall is the live events of the activity running under a context: its journal, and the
// details every heartbeat of the activity carries (which hold the journal's window).
type liveCall struct {
	j    *events.Journal
	mu   sync.Mutex
	beat func() any
	stop func()
	// watched says the session was watched as the call started.
	watched bool
}

// liveCallKey is the context key of the running activity's liveCall.
type liveCallKey struct{}

// beginLive starts an activity's live events: j is its journal, beat what its heartbeats carry.
// While the session is watched (watched), a heartbeat goes out every LiveEvery when events were
// added since the last one; unwatched, only the activity's own heartbeats carry them, and its
// result does. The returned context carries the journal to publish; end stops the heartbeats.
func (a *Activities) beginLive(ctx context.Context, watched bool, j *events.Journal, beat func() any) (context.Context, *liveCall) {
	l := &liveCall{j: j, beat: beat, stop: func() {}, watched: watched}
	ctx = context.WithValue(ctx, liveCallKey{}, l)
	// A local activity cannot heartbeat: its result alone carries its events.
	if watched && activity.IsActivity(ctx) && !activity.GetInfo(ctx).IsLocalActivity {
		l.stop = every(ctx, a.liveInterval(), func(ctx context.Context) {
			if j.Unsent() {
				activity.RecordHeartbeat(ctx, l.details())
			}
		})
	}
	return ctx, l
}

// liveInterval is LiveEvery, or contract.DefaultEventsInterval when unset.
func (a *Activities) liveInterval() time.Duration {
	if a.LiveEvery > 0 {
		return a.LiveEvery
	}
	return contract.DefaultEventsInterval
}

// details is what the activity's heartbeats carry now.
func (l *liveCall) details() any {
	l.mu.Lock()
	beat := l.beat
	l.mu.Unlock()
	return beat()
}

// setBeat changes what the heartbeats carry (a model call's attempt state, once it streams).
func (l *liveCall) setBeat(beat func() any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.beat = beat
}

// end stops the watched heartbeats, and says once, in the worker's log with the activity's
// session and turn, when a watched call's events left the window before a heartbeat or the
// result carried them.
func (l *liveCall) end(ctx context.Context) {
	l.stop()
	if n := l.j.Dropped(); n > 0 && l.watched && activity.IsActivity(ctx) {
		activity.GetLogger(ctx).Warn("live events were dropped for this call's watchers (more than its window holds between two heartbeats); the transcript is complete", "dropped", n)
	}
}

// flush heartbeats the events not yet carried by one: before an attempt fails and is retried, so
// the next attempt goes on from them and watchers see them.
func (l *liveCall) flush(ctx context.Context) {
	if l.j.Unsent() && activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx, l.details())
	}
}

// liveOf is the liveCall of the activity running under ctx, or nil.
func liveOf(ctx context.Context) *liveCall {
	l, _ := ctx.Value(liveCallKey{}).(*liveCall)
	return l
}

// publish adds e to the journal of the activity running under ctx; outside one (a compaction's
// model call) it goes nowhere.
func publish(ctx context.Context, e contract.Event) {
	if l := liveOf(ctx); l != nil {
		l.j.Add(e)
	}
}

// toolBeat is what a tool call's heartbeats carry.
type toolBeat struct {
	CallID string               `json:"call_id"`
	Live   *contract.LiveEvents `json:"live,omitempty"`
}

// liveOutput publishes a running command's output while it runs, as output events: at most one
// per liveEvery, each with at most contract.OutputEventMax bytes (the end of what arrived since
// the last one). The command writes into a buffer that never blocks.
func (a *Activities) liveOutput(ctx context.Context, req contract.ToolRequest) (io.Writer, func()) {
	buf := &pendingOutput{}
	return buf, every(ctx, liveEvery, func(ctx context.Context) {
		if text := buf.take(); text != "" {
			publish(ctx, contract.Event{
				Event: contract.EventOutput, WorkflowID: req.SessionID, Turn: req.Turn,
				Tool: req.Call.Name, CallID: req.Call.ID, Text: text,
			})
		}
	})
}

// pendingOutput keeps the end of the output not yet published.
type pendingOutput struct {
	mu sync.Mutex
	b  []byte
}

// Write keeps the last contract.OutputEventMax bytes and never fails or blocks for long.
func (p *pendingOutput) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.b = append(p.b, b...)
	if over := len(p.b) - contract.OutputEventMax; over > 0 {
		p.b = append(p.b[:0], p.b[over:]...)
	}
	return len(b), nil
}

// take returns what is pending and empties the buffer.
func (p *pendingOutput) take() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := string(p.b)
	p.b = p.b[:0]
	return s
}

// liveKey is the context key of a tool call's live output writer.
type liveKey struct{}

// withLiveOutput hands the live output writer to the tool runner through the context, so runners
// that wrap DefaultTools pass it on without knowing of it.
func withLiveOutput(ctx context.Context, w io.Writer) context.Context {
	if w == nil {
		return ctx
	}
	return context.WithValue(ctx, liveKey{}, w)
}

// liveOutputOf is the live output writer of the call running under ctx, or nil.
func liveOutputOf(ctx context.Context) io.Writer {
	w, _ := ctx.Value(liveKey{}).(io.Writer)
	return w
}

// beforeMax bounds the content a write_file call's event carries of the file it replaces.
const beforeMax = 64 << 10

// writesOver is, for a write_file call, the file's content before it runs (contract.Event.Before):
// a watcher may show the call only after it ran, when the file no longer holds it. Nil for other
// calls and for files over beforeMax.
func writesOver(req contract.ToolRequest) *string {
	if req.Call.Name != toolspec.WriteFile {
		return nil
	}
	var a toolspec.WriteFileArgs
	if json.Unmarshal([]byte(req.Call.Arguments), &a) != nil {
		return nil
	}
	before, ok := tools.ReadForDiff(req.Workdir, a.Path, beforeMax)
	if !ok {
		return nil
	}
	return &before
}
