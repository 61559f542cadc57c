package githubjobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/session"
)

// jobRef is what a job's comment and its cancellation need to know of it. It travels in the
// session's search attributes (PullRequestKey and GitHubJobKey), which a listing returns in clear
// even when payloads are encrypted, so a bot that restarts rebuilds it from the server alone.
type jobRef struct {
	WorkflowID string
	Repo       string
	PR         int
	Commit     string
	Rule       string
	Path       string
}

func (j Job) ref() jobRef {
	return jobRef{WorkflowID: j.Key.WorkflowID(), Repo: j.GitHub.Repo, PR: j.GitHub.PR, Commit: j.GitHub.Commit, Rule: j.Rule, Path: j.Path}
}

// Prefixes of the values of the GitHubJobKey search attribute, one value per fact.
const (
	attrRepo   = "repo:"
	attrCommit = "commit:"
	attrRule   = "rule:"
	attrPath   = "path:"
)

// attrs is the job's GitHubJobKey value. The repository is in lower case, as GitHub compares
// names and as running queries it.
func (r jobRef) attrs() []string {
	return []string{attrRepo + strings.ToLower(r.Repo), attrCommit + r.Commit, attrRule + r.Rule, attrPath + r.Path}
}

// prName is the pull request the way GitHub names it, owner/name#123.
func prName(repo string, pr int) string {
	return contract.GitHubContext{Repo: repo, PR: pr}.String()
}

// refFromAttrs reads a jobRef back from a listed execution; ok is false when it is no job.
func refFromAttrs(ex *workflowpb.WorkflowExecutionInfo) (jobRef, bool) {
	fields := ex.GetSearchAttributes().GetIndexedFields()
	dc := converter.GetDefaultDataConverter()
	var vals []string
	var pr string
	if p := fields[contract.GitHubJobKey.GetName()]; p == nil || dc.FromPayload(p, &vals) != nil {
		return jobRef{}, false
	}
	if p := fields[contract.PullRequestKey.GetName()]; p != nil {
		_ = dc.FromPayload(p, &pr)
	}
	r := jobRef{WorkflowID: ex.GetExecution().GetWorkflowId()}
	if i := strings.LastIndex(pr, "#"); i >= 0 {
		r.PR, _ = strconv.Atoi(pr[i+1:])
	}
	for _, v := range vals {
		switch {
		case strings.HasPrefix(v, attrRepo):
			r.Repo = v[len(attrRepo):]
		case strings.HasPrefix(v, attrCommit):
			r.Commit = v[len(attrCommit):]
		case strings.HasPrefix(v, attrRule):
			r.Rule = v[len(attrRule):]
		case strings.HasPrefix(v, attrPath):
			r.Path = v[len(attrPath):]
		}
	}
	return r, r.Repo != "" && r.PR != 0
}

// start starts the job's session and says whether this call started it. The workflow ID is the
// job key's; a job that runs or ran already is refused by the server (conflict policy fail, reuse
// policy reject duplicate), whichever bot or delivery asks, so started is false and err nil.
func (j *Jobs) start(ctx context.Context, job Job) (started bool, err error) {
	in := j.cfg.Session
	in.Task, in.Workdir, in.Source, in.Model, in.Limits = job.Task, job.Workdir, job.Source, job.Model, job.Limits
	gh := job.GitHub
	in.GitHub = &gh
	label := fmt.Sprintf("%s %s: %s", gh.String(), job.Rule, orPR(job.Path))
	opts := client.StartWorkflowOptions{
		ID:                       job.Key.WorkflowID(),
		TaskQueue:                j.cfg.TaskQueue,
		StaticSummary:            clip(label, 200),
		StaticDetails:            fmt.Sprintf("**Job** %s on `%s` at %s\n\n**Task**\n\n%s", job.Rule, orPR(job.Path), gh.Commit, job.Task),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		// Without it the SDK hides the server's refusal and hands back the existing run as if this
		// call had started it.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes:                    contract.StartSearchAttributes(in, contract.GitHubJobKey.ValueSet(job.ref().attrs())),
	}
	_, err = j.cfg.Temporal.ExecuteWorkflow(ctx, opts, contract.SessionWorkflow, in)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case errors.As(err, &already):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("starting job %s (%s %s: %s): %w", opts.ID, gh.String(), job.Rule, orPR(job.Path), err)
	}
	return true, nil
}

// exists says whether a workflow with the ID was ever started (and is still in the server's
// retention).
func (j *Jobs) exists(ctx context.Context, id string) (bool, error) {
	_, err := j.cfg.Temporal.DescribeWorkflow(ctx, id, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("looking up job %s: %w", id, err)
	}
	return true, nil
}

// runningJob is a job the visibility store lists as running.
type runningJob = jobRef

// running lists the repository's running jobs. The visibility store trails the server by a
// moment, so a job another bot started a moment ago may be missing: the cap is a bound that two
// events in the same second can exceed by the jobs of one of them.
func (j *Jobs) running(ctx context.Context, repo string) ([]runningJob, error) {
	q := fmt.Sprintf("%s = %s AND ExecutionStatus = 'Running'", contract.GitHubJobKey.GetName(), quote(attrRepo+strings.ToLower(repo)))
	return j.list(ctx, q)
}

// list runs a visibility query over every page and returns the jobs it names.
func (j *Jobs) list(ctx context.Context, query string) ([]jobRef, error) {
	var refs []jobRef
	var token []byte
	for {
		resp, err := j.cfg.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token, PageSize: 1000})
		if err != nil {
			return nil, fmt.Errorf("listing jobs (%s): %w", query, err)
		}
		for _, ex := range resp.GetExecutions() {
			if r, ok := refFromAttrs(ex); ok {
				refs = append(refs, r)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return refs, nil
		}
	}
}

// cancelOld sends the cancel signal to the pull request's running jobs of other commits than
// v.Commit and returns the running jobs without them. A job that ended meanwhile is no error.
func (j *Jobs) cancelOld(ctx context.Context, running []runningJob, v Vars) ([]runningJob, error) {
	var kept []runningJob
	var errs []error
	for _, r := range running {
		if r.PR != v.PR || r.Commit == v.Commit {
			kept = append(kept, r)
			continue
		}
		req := contract.CancelRequest{Reason: fmt.Sprintf("superseded by commit %s", short(v.Commit)), By: "github"}
		err := j.cfg.Temporal.SignalWorkflow(ctx, r.WorkflowID, "", contract.SignalCancel, req)
		var nf *serviceerror.NotFound
		switch {
		case errors.As(err, &nf):
		case err != nil:
			errs = append(errs, fmt.Errorf("cancelling job %s of commit %s: %w", r.WorkflowID, short(r.Commit), err))
			kept = append(kept, r)
		default:
			j.cfg.Logger.Info("github job of an earlier commit cancelled", "workflow_id", r.WorkflowID, "commit", r.Commit, "head", v.Commit)
		}
	}
	return kept, errors.Join(errs...)
}

// closePR cancels the closed pull request's running jobs: an escalation one waits on is answered
// abort with "closed" first (so its notice shows the answer), then the session gets the cancel
// signal. Nothing of a closed pull request runs on, or can be steered from it.
func (j *Jobs) closePR(ctx context.Context, repo string, number int, merged bool) error {
	running, err := j.running(ctx, repo)
	if err != nil {
		return err
	}
	how := "closed"
	if merged {
		how = "merged"
	}
	reason := fmt.Sprintf("pull request %s was %s", prName(repo, number), how)
	answerer := session.TemporalAnswerer{Client: j.cfg.Temporal}
	var errs []error
	for _, r := range running {
		if r.PR != number {
			continue
		}
		if st, err := answerer.Status(ctx, r.WorkflowID); err == nil && st.Escalation != nil && st.Escalation.Answer == nil &&
			!escalation.NoticeOnly(*st.Escalation) && slices.Contains(escalation.Choices(*st.Escalation), contract.ActionAbort) {
			a := contract.Answer{EscalationID: st.Escalation.ID, Action: contract.ActionAbort, Text: "closed: " + reason, By: "github", Via: "github"}
			if _, err := answerer.AnswerAs(ctx, r.WorkflowID, "github-closed/"+st.Escalation.ID, a); err != nil {
				j.cfg.Logger.Warn("answering a closed pull request's escalation", "workflow_id", r.WorkflowID, "error", err)
			}
		}
		err := j.cfg.Temporal.SignalWorkflow(ctx, r.WorkflowID, "", contract.SignalCancel, contract.CancelRequest{Reason: reason, By: "github"})
		var nf *serviceerror.NotFound
		switch {
		case errors.As(err, &nf):
		case err != nil:
			errs = append(errs, fmt.Errorf("cancelling job %s of closed %s: %w", r.WorkflowID, prName(repo, number), err))
		default:
			j.cfg.Logger.Info("github job of a closed pull request cancelled", "workflow_id", r.WorkflowID, "pull_request", prName(repo, number))
		}
	}
	return errors.Join(errs...)
}

// quote writes s as a visibility query string literal.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// short is a commit SHA the way GitHub shows it.
func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// clip shortens s to n bytes at most, at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
