package activities

import (
	"context"

	"go.temporal.io/sdk/activity"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
)

// withWorkspace points a built-in tool call of a session that names a source (contract.Source) at
// the session's workspace on this worker, materializing it first when this worker has none. ok
// is false when it cannot: the result then says so, nothing ran, and a person is asked, since the
// model can do nothing about a repository that cannot be fetched or a worker without a root.
//
// A session that reaches this worker after its first turn and finds no workspace here (its
// earlier worker is gone) gets a fresh checkout of its commit; moved says so, and the result
// tells the model that files it changed before are not there.
func (a *Activities) withWorkspace(ctx context.Context, req contract.ToolRequest) (_ contract.ToolRequest, _ contract.ToolResult, ok, moved bool) {
	if req.Source == nil || req.Server != "" {
		return req, contract.ToolResult{}, true, false
	}
	log := activity.GetLogger(ctx)
	if a.Workspaces == nil {
		log.Error("the session names a repository to work on, but this worker has no workspace root (workspaces.root)", "repo", textfmt.Harmless(req.Source.Repo))
		return req, WorkspaceUnavailable, false, false
	}
	// A first fetch of a large repository can outlast the heartbeat timeout; beating shows the
	// worker is alive meanwhile.
	stop := a.keepBeating(ctx, func() any { return req.Call.ID })
	ws, err := a.Workspaces.Ensure(ctx, req.Source.WorkspaceOf(req.SessionID), *req.Source)
	stop()
	if err != nil {
		log.Error("the session's workspace could not be materialized", "repo", textfmt.Harmless(req.Source.Repo), "error", err)
		return req, WorkspaceUnavailable, false, false
	}
	if ws.Fetched || len(ws.Flattened) > 0 {
		log.Info("materialized the session's workspace", "repo", textfmt.Harmless(req.Source.Repo), "commit", ws.Commit, "dir", ws.Dir,
			"flattened_symlinks", len(ws.Flattened))
	}
	req.Workdir = ws.Dir
	return req, contract.ToolResult{}, true, ws.Made && req.Turn > 1
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
