package githubjobs

import (
	"context"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// postAttempts bounds the tries to post one result; the waits between them add up to about 16
// minutes, then the result waits for the next bot start (Resume).
const postAttempts = 12

// watch waits, in the background, for the job's session to end and then edits its comment to
// show the result. A watcher dies with its process; Resume gives a starting bot watchers for the
// jobs that still run or ended while no bot watched, so the result survives a restart, and it is
// an edit of the job's one comment whichever process writes it, so writing it twice posts once.
func (j *Jobs) watch(r jobRef) {
	j.mu.Lock()
	if j.watching[r.WorkflowID] {
		j.mu.Unlock()
		return
	}
	j.watching[r.WorkflowID] = true
	j.mu.Unlock()
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		defer func() {
			j.mu.Lock()
			delete(j.watching, r.WorkflowID)
			j.mu.Unlock()
		}()
		sum, ended := j.await(j.ctx, r.WorkflowID)
		if j.ctx.Err() != nil {
			return
		}
		body := resultBody(r, sum, ended)
		err := retryGitHub(j.ctx, postAttempts, func() error { return j.postComment(j.ctx, r, body) })
		if err != nil {
			j.cfg.Logger.Warn("posting a github job's result", "workflow_id", r.WorkflowID, "pull_request", prName(r.Repo, r.PR), "error", err)
			return
		}
		j.cfg.Logger.Info("github job result posted", "workflow_id", r.WorkflowID, "pull_request", prName(r.Repo, r.PR), "status", sum.Status)
	}()
}

// await waits for the session to end (following its continue-as-new runs) and returns its
// summary, or the error that says why it has none (terminated, timed out).
func (j *Jobs) await(ctx context.Context, workflowID string) (contract.Summary, error) {
	var sum contract.Summary
	err := j.cfg.Temporal.GetWorkflow(ctx, workflowID, "").Get(ctx, &sum)
	if s, ok := contract.EndedSummary(err); ok {
		return s, nil
	}
	if err != nil {
		return sum, fmt.Errorf("the session ended without a summary: %w", err)
	}
	return sum, nil
}

// Resume gives this process a watcher for every job on its task queue that runs, or ended within
// the resume window, so results of jobs whose bot stopped are posted (a comment that already shows the result is
// left as it is). A bot calls it once at start; several bots may, each edits the same comments.
func (j *Jobs) Resume(ctx context.Context) error {
	since := time.Now().Add(-j.cfg.ResumeWindow).UTC().Format(time.RFC3339)
	q := fmt.Sprintf("%s IS NOT NULL AND TaskQueue = %s AND (ExecutionStatus = 'Running' OR CloseTime > %s)",
		contract.GitHubJobKey.GetName(), quote(j.cfg.TaskQueue), quote(since))
	refs, err := j.list(ctx, q)
	if err != nil {
		return fmt.Errorf("resuming the watchers of github jobs: %w", err)
	}
	for _, r := range refs {
		j.watch(r)
	}
	j.cfg.Logger.Info("github jobs resumed", "jobs", len(refs))
	return nil
}
