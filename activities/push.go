package activities

import (
	"context"

	"go.temporal.io/sdk/activity"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
)

// noWorkspaceRoot is the note of a branch a worker without a workspace root could not push.
const noWorkspaceRoot = "the worker that ended the session keeps no workspaces (workspaces.root), so no branch was pushed"

// PushBranch sends a session's changes to the origin as the branch keel/<session> when the
// session ends (workspace.Manager.Push says how, without the workspace's own .git). A reason not
// to push is a note in the answer; a failed push is an error, so Temporal retries it, and the
// session reports the last one in its summary rather than failing.
func (a *Activities) PushBranch(ctx context.Context, req contract.PushRequest) (contract.Branch, error) {
	if a.Workspaces == nil {
		return contract.Branch{Repo: req.Source.Repo, Name: contract.BranchName(req.SessionID), Note: noWorkspaceRoot}, nil
	}
	stop := a.keepBeating(ctx, func() any { return "push" })
	defer stop()
	br, err := a.Workspaces.Push(ctx, req)
	if err != nil {
		activity.GetLogger(ctx).Warn("pushing the session's branch", "repo", textfmt.Harmless(req.Source.Repo), "branch", br.Name, "error", err)
		return br, err
	}
	if br.Pushed {
		activity.GetLogger(ctx).Info("pushed the session's branch", "repo", textfmt.Harmless(req.Source.Repo), "branch", br.Name, "commit", br.Commit)
	}
	return br, nil
}
