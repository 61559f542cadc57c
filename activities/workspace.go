package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/textfmt"
	"github.com/keelrun/keel/internal/workspace"
)

// workspaceRun is what withWorkspace learned for one call: the call's hold on the workspace in
// the store, and a note the result starts with.
type workspaceRun struct {
	rec  workspace.Recording
	note string
}

// withWorkspace points a built-in tool call of a session that names a source (contract.Source) at
// the session's workspace on this worker, making it first when this worker has none or an
// outdated copy. ok is false when it cannot: the result then says so and nothing ran.
//
// With the store recording workspaces, the call first takes the workspace (Fence): a call
// scheduled before the one that holds it is stale (its turn went on without it), and changes
// nothing. A session that reaches this worker after its first turn gets its workspace restored
// as recorded after the last tool result that may have written, and the result says from which
// turn; without the store it gets a fresh checkout of its commit and is told its changes are gone.
func (a *Activities) withWorkspace(ctx context.Context, req contract.ToolRequest) (_ contract.ToolRequest, _ contract.ToolResult, ok bool, run workspaceRun) {
	if req.Source == nil || req.Server != "" {
		return req, contract.ToolResult{}, true, run
	}
	log := activity.GetLogger(ctx)
	if a.Workspaces == nil {
		log.Error("the session names a repository to work on, but this worker has no workspace root (workspaces.root)", "repo", textfmt.Harmless(req.Source.Repo))
		return req, WorkspaceUnavailable, false, run
	}
	name := req.Source.WorkspaceOf(req.SessionID)
	info := activity.GetInfo(ctx)
	rec, err := a.Workspaces.Fence(ctx, name, info.ScheduledTime, fmt.Sprintf("turn %d call %s (activity %s)", req.Turn, req.Call.ID, info.ActivityID))
	if errors.Is(err, store.ErrFenced) {
		log.Warn("refusing a stale tool call: a later call of the session holds its workspace", "turn", req.Turn, "call", req.Call.ID, "error", err)
		return req, Superseded, false, run
	}
	if err != nil {
		log.Error("the session's workspace could not be taken in the store", "error", err)
		return req, WorkspaceUnavailable, false, run
	}
	run.rec = rec
	// A first fetch of a large repository can outlast the heartbeat timeout; beating shows the
	// worker is alive meanwhile.
	stop := a.keepBeating(ctx, func() any { return req.Call.ID })
	ws, err := a.Workspaces.Ensure(ctx, name, *req.Source)
	stop()
	var restore *workspace.RestoreError
	if errors.As(err, &restore) {
		log.Error("the session's recorded workspace could not be restored", "turn", restore.Turn, "error", err)
		publish(ctx, contract.Event{Event: contract.EventNotice, WorkflowID: req.SessionID, Turn: req.Turn,
			Text: "the session's workspace could not be restored on this worker: " + textfmt.Harmless(err.Error())})
		return req, WorkspaceUnrestorable, false, run
	}
	if err != nil {
		log.Error("the session's workspace could not be materialized", "repo", textfmt.Harmless(req.Source.Repo), "error", err)
		return req, WorkspaceUnavailable, false, run
	}
	if ws.Made {
		log.Info("materialized the session's workspace", "repo", textfmt.Harmless(req.Source.Repo), "commit", ws.Commit, "dir", ws.Dir,
			"flattened_symlinks", len(ws.Flattened), "restored", ws.Restored != nil)
	}
	req.Workdir = ws.Dir
	switch r := ws.Restored; {
	case !ws.Made || req.Turn <= 1:
	case r != nil && r.Own:
		run.note = RestoredNote(r.Turn)
	case r == nil && a.Workspaces.States == nil:
		run.note = MovedNote
	}
	return req, contract.ToolResult{}, true, run
}

// RestoredNote starts the result of a tool call that ran in a workspace restored on another
// worker than the one that last wrote it.
func RestoredNote(turn int) string {
	return fmt.Sprintf("Note: this session moved to another worker, where its workspace was restored as it was recorded after turn %d "+
		"(the last tool result that may have changed files). Whatever a call after that changed is not here; check those files before relying on them.\n\n", turn)
}

// Superseded is the result of a tool call that a later call of the same session overtook (its
// worker was paused or cut off while the session went on elsewhere): nothing ran, and the
// session has answered the call without it already.
var Superseded = contract.ToolResult{
	Content: "This tool call was not run: a later call of this session holds its workspace, so nothing changed. Go on from the results you have.",
	IsError: true,
}

// WorkspaceUnrestorable is what a built-in tool answers when the session's recorded workspace
// could not be restored on this worker (a size limit left it unrecorded, it was pruned, or the
// store lacks a file): going on from other files than the transcript says would mislead the model,
// so a person is asked. The worker's log and the session's notice say why.
var WorkspaceUnrestorable = contract.ToolResult{
	Content: "This session's workspace could not be restored on this worker from its recorded state, so the tool was not run and " +
		"nothing changed. Do not try other tools: conclude and report that the workspace could not be restored.",
	IsError: true,
	Fatal:   true,
}

// MovedNote starts the result of a tool call that ran in a workspace made afresh for a session
// that had run on another worker.
const MovedNote = "Note: this session moved to another worker, where its workspace was checked out afresh at the session's commit; " +
	"changes made to files before this call are not here. Check the files you changed before relying on them.\n\n"

// WorkspaceUnavailable is what a built-in tool answers when the session's workspace could not be
// made on this worker (the worker's log says why).
var WorkspaceUnavailable = contract.ToolResult{
	Content: "This session's workspace (its repository at the requested commit) could not be prepared on the worker, so the tool " +
		"was not run and nothing changed. Do not try other tools: conclude and report that the workspace could not be prepared.",
	IsError: true,
	Fatal:   true,
}
