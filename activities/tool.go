package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/events"
	"github.com/keelrun/keel/internal/metrics/record"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/tools"
	"github.com/keelrun/keel/internal/tools/mcp"
	"github.com/keelrun/keel/internal/tools/snapshot"
	"github.com/keelrun/keel/internal/tools/toolspec"
	"github.com/keelrun/keel/internal/workspace"
)

// RunTool runs one tool call, once. A tool failure is a result written for the model, never an
// activity error: Temporal must not retry a call that may already have changed something. The
// only errors are cancellation, so the workflow learns the call is really gone. The ledger of side
// effects gets a claim before a tool that may change something starts and the outcome before the
// activity reports, so a turn that never hears back can still tell what happened.
func (a *Activities) RunTool(ctx context.Context, req contract.ToolRequest) (res contract.ToolResult, err error) {
	j := events.NewJournal(nil)
	ctx, live := a.beginLive(ctx, req.Watched, j, func() any { return toolBeat{CallID: req.Call.ID, Live: j.Live()} })
	defer live.end(ctx)
	defer func() {
		// Set last, so the result event is in it.
		if err == nil {
			res.Live = j.Live()
		}
	}()
	req, refused, ok, ws := a.withWorkspace(ctx, req)
	if !ok {
		return refused, nil
	}
	if ws.note != "" {
		defer func() { res.Content = ws.note + res.Content }()
	}
	publish(ctx, contract.Event{
		Event: contract.EventToolCall, WorkflowID: req.SessionID, Turn: req.Turn,
		Tool: req.Call.Name, CallID: req.Call.ID, Arguments: req.Call.Arguments, Before: writesOver(req),
	})
	key := ledgerKey(ctx, req.SessionID, req.Turn, req.Call.ID)
	if a.claim(ctx, key, req) {
		stop := a.keepBeating(ctx, live.details)
		live, stopLive := a.liveOutput(ctx, req)
		snap := a.snapshots(ctx, req, ws.rec)
		res, err = a.tools().Run(withLiveOutput(ctx, live), req)
		snap()
		stopLive()
		stop()
		if err != nil {
			// The runner could not attempt the call: nothing ran, and the ledger says so by
			// holding no outcome for it.
			return contract.ToolResult{}, err
		}
	} else {
		res = contract.ToolResult{Content: toolspec.ClaimFailedFeedback(req.Call.Name), IsError: true}
	}
	outcome := record.ToolOK
	if res.IsError {
		outcome = record.ToolError
	}
	if ctx.Err() != nil {
		a.settle(ctx, key, req, res)
		record.ToolCall(activity.GetMetricsHandler(ctx), req.Call.Name, record.ToolCancelled)
		activity.GetLogger(ctx).Info("tool call cancelled", "tool", req.Call.Name)
		// What the call showed rides in the cancellation, for watchers.
		return res, temporal.NewCanceledError(contract.LiveDetails{Live: j.Live()})
	}
	record.ToolCall(activity.GetMetricsHandler(ctx), req.Call.Name, outcome)
	if a.settle(ctx, key, req, res) {
		publish(ctx, contract.Event{
			Event: contract.EventToolResult, WorkflowID: req.SessionID, Turn: req.Turn,
			Tool: req.Call.Name, CallID: req.Call.ID, Text: res.Content, IsError: res.IsError,
		})
	}
	return res, nil
}

// ToolRunner runs one tool call. A tool's failure is a result for the model; an error means the
// call could not be attempted at all and fails the activity. The worker's wiring may wrap the
// runner (the demo injects tool faults, the failover drill records every execution) without the
// activity or its request knowing.
type ToolRunner interface {
	Run(ctx context.Context, req contract.ToolRequest) (contract.ToolResult, error)
}

// ToolRunnerFunc is a function that is a ToolRunner.
type ToolRunnerFunc func(ctx context.Context, req contract.ToolRequest) (contract.ToolResult, error)

// Run calls f.
func (f ToolRunnerFunc) Run(ctx context.Context, req contract.ToolRequest) (contract.ToolResult, error) {
	return f(ctx, req)
}

// DefaultTools runs built-in tools in the request's work directory and MCP tools on their server.
type DefaultTools struct {
	// Settings are the worker's tool settings, built once by internal/app.
	Settings tools.Settings
	// MCP serves the tools of the configured MCP servers; nil when there are none.
	MCP *mcp.Manager
	// CheckWorkdir, when set, refuses a work directory that holds the worker's own files.
	CheckWorkdir func(dir string) error
}

// Run runs the call where its tool lives.
func (d DefaultTools) Run(ctx context.Context, req contract.ToolRequest) (contract.ToolResult, error) {
	if req.Server != "" && d.MCP != nil {
		return d.MCP.Call(ctx, req.Server, req.Call.Name, req.Call.Arguments), nil
	}
	if d.CheckWorkdir != nil {
		if err := d.CheckWorkdir(req.Workdir); err != nil {
			activity.GetLogger(ctx).Error("refusing the session's tools: its work directory holds the worker's own files", "workdir", req.Workdir, "error", err)
			return WorkdirRefused, nil
		}
	}
	box := &tools.Box{Root: req.Workdir, Policy: req.Policy.ToolLimits, Settings: d.Settings, Live: liveOutputOf(ctx)}
	box.SandboxFailed = func(err error) {
		activity.GetLogger(ctx).Error("run_command's sandbox could not be set up, so commands cannot run in this work directory; "+
			"a root worker needs a filesystem with idmapped mounts for the work directory and tools.sandbox_cache (see docs/tools.md)",
			"workdir", req.Workdir, "error", err)
	}
	return box.Run(ctx, req.Call), nil
}

// WorkdirRefused is what a built-in tool answers in a work directory that holds the worker's own
// state, store or configuration: nothing runs there, because a session could read other sessions'
// transcripts or rewrite how later commands are confined. The model cannot fix that, so the
// result is fatal and the session asks a person; the worker logs which file it was.
var WorkdirRefused = contract.ToolResult{
	Content: "This session's work directory holds the worker's own files, which no session may reach, so the tool " +
		"was not run and nothing changed. Do not try other tools: conclude and report that the session has to be " +
		"started in a work directory that does not contain them.",
	IsError: true,
	Fatal:   true,
}

// tools is the configured runner, or DefaultTools with the default settings and the MCP servers.
func (a *Activities) tools() ToolRunner {
	if a.Tools != nil {
		return a.Tools
	}
	return DefaultTools{MCP: a.MCP}
}

// snapshots keeps the work directory's state per turn for a built-in tool that may change it
// (starter fork --turn N restores it): before the session's first such call the state it started
// from, and after each call the state this turn left; for a session's workspace (rec from
// withWorkspace), that state is also recorded in the store, bound to this call. The returned
// function takes the second. A snapshot or record that fails is logged; the tool runs regardless.
func (a *Activities) snapshots(ctx context.Context, req contract.ToolRequest, rec workspace.Recording) func() {
	if a.Snapshots == nil || req.Server != "" || req.Workdir == "" {
		return func() {}
	}
	if spec, ok := toolspec.Lookup(toolspec.Builtin(), req.Call.Name); !ok || !spec.Writes {
		return func() {}
	}
	warn := func(err error) {
		var limit *snapshot.LimitError
		var recLimit *workspace.RecordLimitError
		switch {
		case errors.As(err, &limit):
			// A size limit: the operator's log says which, and so does the user's terminal,
			// since a later fork of this turn will lack files.
			activity.GetLogger(ctx).Warn("the work directory's snapshot for fork --turn reached a size limit", "turn", req.Turn, "error", err)
			publish(ctx, contract.Event{Event: contract.EventNotice, WorkflowID: req.SessionID, Turn: req.Turn,
				Text: limit.Error() + map[bool]string{false: "; a fork of this turn will not have them", true: "; a fork of this turn is refused"}[limit.Whole]})
		case errors.As(err, &recLimit):
			activity.GetLogger(ctx).Warn("the session's workspace is over the record limit", "turn", req.Turn, "error", err)
			publish(ctx, contract.Event{Event: contract.EventNotice, WorkflowID: req.SessionID, Turn: req.Turn, Text: recLimit.Error()})
		case errors.Is(err, store.ErrFenced):
			activity.GetLogger(ctx).Warn("refused to record the session's workspace: a later call of the session holds it, so this worker's copy is stale and was dropped",
				"turn", req.Turn, "call", req.Call.ID, "error", err)
		case err != nil:
			activity.GetLogger(ctx).Warn("the work directory's snapshot for fork --turn could not be taken", "turn", req.Turn, "error", err)
		}
	}
	warn(a.Snapshots.EnsureBase(req.SessionID, req.Workdir))
	return func() {
		m, err := a.Snapshots.Take(req.SessionID, req.Turn, req.Workdir)
		warn(err)
		var limit *snapshot.LimitError
		if rec.Epoch == 0 || (err != nil && !errors.As(err, &limit)) {
			return
		}
		// Recorded even when the call was cancelled: what it changed is the session's state.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		defer cancel()
		warn(a.Workspaces.Record(rctx, rec, req.SessionID, req.Turn, req.Call.ID, a.Snapshots, m))
	}
}

// recordTimeout bounds recording a workspace after a call: the contents a call changed and a
// manifest, well inside it on any store a team runs.
const recordTimeout = 2 * time.Minute
