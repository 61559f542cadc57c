// Package activities holds everything a session does to the world: the model call, the tool calls
// and the escalation notices. Activities are methods on one struct that holds their dependencies,
// so the worker registers one value and tests build it with local servers.
package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/tools/mcp"
	"github.com/keelrun/keel/internal/tools/snapshot"
	"github.com/keelrun/keel/internal/tools/toolspec"
	"github.com/keelrun/keel/internal/workspace"
)

// Activities are the dependencies of every activity.
type Activities struct {
	// Models reaches the worker's model, its fallbacks and the endpoints sessions name.
	Models *Models
	Store  store.Store
	// LiveEvery is how often a running activity of a watched session heartbeats its new live
	// events (events.interval); zero is contract.DefaultEventsInterval.
	LiveEvery time.Duration
	// Notifiers send escalation notices, by channel name.
	Notifiers map[string]escalation.Notifier
	// MCP serves the tools of the configured MCP servers (ListTools); nil when there are none.
	MCP *mcp.Manager
	// Tools runs tool calls: the worker's DefaultTools, wrapped in its hooks; nil means
	// DefaultTools with the default settings and MCP.
	Tools ToolRunner
	// Snapshots keeps each session's work directory per turn, for fork --turn; nil keeps none.
	Snapshots *snapshot.Store
	// Workspaces materializes the workspaces of sessions that name a repository and commit
	// (contract.Source); nil refuses such sessions' tools.
	Workspaces *workspace.Manager
	// HeartbeatEvery is how often a running model call or tool heartbeats while it waits on
	// something slow. When the server pushes cancellation to the worker (worker commands), a
	// heartbeat only proves the worker is alive, so it is long (LivenessHeartbeat); when it does
	// not, cancellation arrives in heartbeat replies and this bounds how long a cancelled call runs
	// on. Zero means FallbackHeartbeat.
	HeartbeatEvery time.Duration
}

// Register registers every activity under its contract name.
func (a *Activities) Register(w worker.ActivityRegistry) {
	w.RegisterActivityWithOptions(a.CallModel, activity.RegisterOptions{Name: contract.CallModelActivity})
	w.RegisterActivityWithOptions(a.CompactTranscript, activity.RegisterOptions{Name: contract.CompactActivity})
	w.RegisterActivityWithOptions(a.RunTool, activity.RegisterOptions{Name: contract.RunToolActivity})
	w.RegisterActivityWithOptions(a.ReadToolLedger, activity.RegisterOptions{Name: contract.ToolLedgerActivity})
	w.RegisterActivityWithOptions(a.NotifyEscalation, activity.RegisterOptions{Name: contract.NotifyActivity})
	w.RegisterActivityWithOptions(a.ListTools, activity.RegisterOptions{Name: contract.ListToolsActivity})
	w.RegisterActivityWithOptions(a.ReviewChanges, activity.RegisterOptions{Name: contract.ReviewChangesActivity})
	w.RegisterActivityWithOptions(a.PushBranch, activity.RegisterOptions{Name: contract.PushBranchActivity})
}

// ListTools returns the tools a new session offers the model: the built-in ones, then those of the
// MCP servers that answer. A server that does not answer is logged and left out rather than
// failing the session; its tools simply are not offered.
func (a *Activities) ListTools(ctx context.Context) ([]contract.ToolSpec, error) {
	specs := toolspec.Builtin()
	if a.MCP == nil {
		return specs, nil
	}
	more, err := a.MCP.Tools(ctx)
	if err != nil {
		activity.GetLogger(ctx).Warn("some MCP servers did not list their tools", "error", err)
	}
	return append(specs, more...), nil
}

// NotifyEscalation sends one escalation notice. The notifiers are idempotent by escalation id, so
// Temporal may retry this activity.
func (a *Activities) NotifyEscalation(ctx context.Context, req contract.NotifyRequest) error {
	n, ok := a.Notifiers[req.Channel]
	if !ok {
		activity.GetLogger(ctx).Warn("no notifier configured for channel; notice dropped", "channel", req.Channel)
		return nil
	}
	if err := n.Notify(ctx, req.Escalation); err != nil {
		err = fmt.Errorf("notifying %s of escalation %s: %w", req.Channel, req.Escalation.ID, err)
		if errors.As(err, new(escalation.PermanentError)) {
			return temporal.NewNonRetryableApplicationError(err.Error(), NoticeImpossible, nil)
		}
		return err
	}
	return nil
}

// NoticeImpossible is the error type of a notice no retry can deliver (escalation.PermanentError):
// the activity fails at once and the session's log says why.
const NoticeImpossible = "EscalationNoticeImpossible"

// LivenessHeartbeat is the heartbeat cadence when the server pushes cancellation: long enough
// that a model call of up to 15 s sends none besides the emitted rule's first one, short enough
// that the activities' default heartbeat timeout (45 s, set by the workflows) notices a dead
// worker with two beats to spare; a session with a shorter timeout beats three times per timeout.
// docs/failure-handling.md and docs/benchmarks.md have the measurements.
const LivenessHeartbeat = 15 * time.Second

// FallbackHeartbeat is the cadence on a server without worker commands, where a cancellation
// reaches an activity only in a heartbeat reply.
const FallbackHeartbeat = 200 * time.Millisecond

// heartbeatEvery is the cadence of one activity: HeartbeatEvery, but at least three beats per
// heartbeat timeout when the workflow set a shorter one.
func (a *Activities) heartbeatEvery(ctx context.Context) time.Duration {
	every := a.HeartbeatEvery
	if every <= 0 {
		every = FallbackHeartbeat
	}
	if t := activity.GetInfo(ctx).HeartbeatTimeout; t > 0 && every > t/3 {
		every = t / 3
	}
	return every
}

// keepBeating heartbeats with the latest details from get until ctx ends or stop is called.
func (a *Activities) keepBeating(ctx context.Context, get func() any) (stop func()) {
	return every(ctx, a.heartbeatEvery(ctx), func(ctx context.Context) { activity.RecordHeartbeat(ctx, get()) })
}

// every calls f every interval, on a goroutine of its own, until ctx ends or stop is called;
// stop returns once f no longer runs.
func every(ctx context.Context, interval time.Duration, f func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f(ctx)
			}
		}
	}()
	return func() { cancel(); <-done }
}
