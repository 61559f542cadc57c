package githubjobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v84/github"

	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
)

// JobMarker is the hidden marker of a job's comment: the comment is found by it and edited in
// place, so a job has one comment however often its result is posted.
func JobMarker(workflowID string) string { return "<!-- keel-job:" + workflowID + " -->" }

// LeftOutMarker marks the comment that names a commit's jobs the cap left out.
func LeftOutMarker(commit string) string { return "<!-- keel-jobs-left-out:" + commit + " -->" }

// header is the first line of a job's comment.
func header(r jobRef) string {
	what := "the pull request"
	if r.Path != "" {
		what = "`" + r.Path + "`"
	}
	return fmt.Sprintf("**Keel job %s** on %s at %s", r.Rule, what, short(r.Commit))
}

// runningBody is the comment of a job that has started.
func runningBody(r jobRef) string {
	return fmt.Sprintf("%s: running (session `%s`).\n\n%s", header(r), r.WorkflowID, JobMarker(r.WorkflowID))
}

// maxAnswer caps the answer quoted in a comment, well below GitHub's 65,536 characters.
const maxAnswer = 60000

// resultBody is the comment of a job that has ended: how, in what it cost, and its answer.
func resultBody(r jobRef, sum contract.Summary, ended error) string {
	var b strings.Builder
	b.WriteString(header(r))
	switch {
	case ended != nil:
		fmt.Fprintf(&b, ": ended without a result (%s).", oneLine(ended.Error()))
	default:
		fmt.Fprintf(&b, ": %s after %s, %d tokens", sum.Status, textfmt.Count(int64(sum.Turns), "turn"), sum.Tokens)
		if sum.Limit != "" {
			fmt.Fprintf(&b, " (limit %s)", sum.Limit)
		}
		if sum.Reason != "" {
			fmt.Fprintf(&b, ": %s", oneLine(sum.Reason))
		}
		b.WriteString(".")
		if sum.Answer != "" {
			b.WriteString("\n\n")
			b.WriteString(clip(sum.Answer, maxAnswer))
		}
		b.WriteString(changesBlock(sum.Changes))
		b.WriteString(branchBlock(sum.Branch))
	}
	fmt.Fprintf(&b, "\n\nSession `%s`.\n\n%s", r.WorkflowID, JobMarker(r.WorkflowID))
	// The answer and the reason quote the model: no control or bidi character reaches the comment.
	return textfmt.Harmless(b.String())
}

// maxLeftOutNamed bounds how many left-out jobs the notice names; the rest are counted, so the
// notice stays well under GitHub's 65,536 characters however many files a pull request changes.
const maxLeftOutNamed = 50

// maxNamedPath bounds one path the left-out notice names.
const maxNamedPath = 200

// leftOutBody names the jobs the repository's cap left out (the first maxLeftOutNamed, the rest
// as a count), and how they start later.
func leftOutBody(v Vars, left []Job, max int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Keel** did not start %s for %s: this repository runs at most %s at once (max_running) and that many run now.\n\n",
		textfmt.Count(int64(len(left)), "job"), short(v.Commit), textfmt.Count(int64(max), "job"))
	for _, j := range left[:min(len(left), maxLeftOutNamed)] {
		fmt.Fprintf(&b, "- %s on %s\n", j.Rule, clip(orPR(j.Path), maxNamedPath))
	}
	if n := len(left) - maxLeftOutNamed; n > 0 {
		fmt.Fprintf(&b, "- and %d more, not named here\n", n)
	}
	b.WriteString("\nThey start when this event is delivered again once jobs have finished (Redeliver in the webhook's Recent Deliveries), or with the next push; jobs that already ran are not run again.\n\n")
	b.WriteString(LeftOutMarker(v.Commit))
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// postComment writes the job's comment: an edit of the one with its marker, or a new comment
// when there is none yet.
func (j *Jobs) postComment(ctx context.Context, r jobRef, body string) error {
	return j.upsertComment(ctx, r.Repo, r.PR, JobMarker(r.WorkflowID), body)
}

// commentLeftOut tells the pull request which jobs of its head commit the cap left out.
func (j *Jobs) commentLeftOut(ctx context.Context, v Vars, left []Job) error {
	return j.upsertComment(ctx, v.Repo, v.PR, LeftOutMarker(v.Commit), leftOutBody(v, left, j.cfg.Rules.MaxRunning))
}

// upsertComment edits the bot's own comment on the pull request that holds marker to read body
// (leaving it when it does already), or posts body as a new comment when none holds it. A comment
// by anybody else that holds the marker is neither edited nor taken for the bot's: anyone who can
// comment can type a marker.
func (j *Jobs) upsertComment(ctx context.Context, repo string, pr int, marker, body string) error {
	owner, name, _ := strings.Cut(repo, "/")
	self, err := j.self.Self(ctx, j.cfg.GitHub)
	if err != nil {
		return err
	}
	issues := j.cfg.GitHub.Issues
	for c, err := range issues.ListCommentsIter(ctx, owner, name, pr, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}) {
		if err != nil {
			return fmt.Errorf("listing the comments of %s#%d: %w", repo, pr, err)
		}
		if !strings.Contains(c.GetBody(), marker) {
			continue
		}
		if !escalation.OwnComment(c, self) {
			j.cfg.Logger.Warn("github comment holds a Keel marker but is not the bot's; left alone", "pull_request", prName(repo, pr),
				"comment", c.GetID(), "author", c.GetUser().GetLogin())
			continue
		}
		if c.GetBody() == body {
			return nil
		}
		if _, _, err := issues.EditComment(ctx, owner, name, c.GetID(), &github.IssueComment{Body: github.Ptr(body)}); err != nil {
			return fmt.Errorf("editing comment %d on %s#%d: %w", c.GetID(), repo, pr, err)
		}
		return nil
	}
	if _, _, err := issues.CreateComment(ctx, owner, name, pr, &github.IssueComment{Body: github.Ptr(body)}); err != nil {
		return fmt.Errorf("commenting on %s#%d: %w", repo, pr, err)
	}
	return nil
}

// retryGitHub runs post until it succeeds, GitHub refuses it for good, ctx is done, or attempts
// run out, waiting 1, 2, 4, ... seconds between attempts: a result must not be lost to one failed
// request.
func retryGitHub(ctx context.Context, attempts int, post func() error) error {
	var err error
	wait := time.Second
	for i := 0; i < attempts; i++ {
		if err = post(); err == nil || refused(err) {
			return err
		}
		var rl *github.RateLimitError
		if errors.As(err, &rl) {
			wait = max(wait, time.Until(rl.Rate.Reset.Time))
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Minute)
	}
	return err
}

// refused says GitHub answered with a client error that asking again will not change (not found,
// no permission, invalid); rate limits are not among them.
func refused(err error) bool {
	var rl *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	var er *github.ErrorResponse
	if errors.As(err, &rl) || errors.As(err, &abuse) || !errors.As(err, &er) || er.Response == nil {
		return false
	}
	code := er.Response.StatusCode
	return code >= 400 && code < 500 && code != 429
}
