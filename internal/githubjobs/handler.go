// Package githubjobs starts Keel sessions from GitHub pull request events: a rule file says which
// jobs a pull request yields (one per changed file matching a glob, one per pull request), each
// job's workflow ID comes from its identity tuple so the Temporal server, not a bot's memory,
// keeps a job from running twice, and each job's result lands on the pull request as one comment
// that is edited in place rather than posted again.
package githubjobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v84/github"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
)

// Config is what a Jobs needs.
type Config struct {
	Rules    Rules
	Temporal client.Client
	GitHub   *github.Client
	// TaskQueue is the workers' task queue the sessions are started on.
	TaskQueue string
	// Session is what every job's session starts from (system prompt, policy, retry, escalation,
	// heartbeat timeout, ...); each job sets its own task, work directory, model, limits and pull
	// request over it. Its Model, Workdir and Limits are the defaults of rules that name none.
	Session contract.SessionInput
	// ResumeWindow is how far back Resume looks for jobs that ended while no bot watched them
	// (DefaultResumeWindow).
	ResumeWindow time.Duration
	Logger       *slog.Logger
}

// DefaultResumeWindow is how far back a starting bot looks for ended jobs whose result it has
// yet to post.
const DefaultResumeWindow = 24 * time.Hour

// Jobs starts the jobs of pull request events and posts their results. Its watchers run until the
// context given to New is done; Wait waits for them.
type Jobs struct {
	cfg Config
	ctx context.Context
	wg  sync.WaitGroup
	// watching holds the workflow IDs with a watcher in this process, so Resume and a start never
	// watch one job twice here (another process may watch it too: the comment is edited in place).
	mu       sync.Mutex
	watching map[string]bool
}

// New checks cfg and returns a Jobs whose watchers live as long as ctx.
func New(ctx context.Context, cfg Config) (*Jobs, error) {
	switch {
	case cfg.Temporal == nil:
		return nil, errors.New("github jobs: no Temporal client")
	case cfg.GitHub == nil:
		return nil, errors.New("github jobs: no GitHub client")
	case cfg.TaskQueue == "":
		return nil, errors.New("github jobs: no task queue")
	case len(cfg.Rules.Rules) == 0:
		return nil, errors.New("github jobs: no rules")
	}
	if cfg.ResumeWindow <= 0 {
		cfg.ResumeWindow = DefaultResumeWindow
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Jobs{cfg: cfg, ctx: ctx, watching: map[string]bool{}}, nil
}

// Wait waits for the watchers, which stop when New's context is done.
func (j *Jobs) Wait() { j.wg.Wait() }

// startsJobs are the pull_request actions that start jobs: a new pull request, a new head commit,
// a pull request opened again.
var startsJobs = []string{"opened", "synchronize", "reopened"}

// HandlePullRequest starts the jobs the rules yield for the event's head commit. Delivered twice, or to two
// bots at once, it starts each job once: the second start of a workflow ID is refused by the
// server. Before that it cancels (old_commits: cancel) the pull request's jobs of earlier commits
// that still run, and it starts no more jobs than max_running allows, telling the pull request
// which jobs it left out. It is the webhook bot's handler of pull_request deliveries
// (githubbot.PullRequestHandler), called once the delivery's signature is checked.
func (j *Jobs) HandlePullRequest(ctx context.Context, ev *github.PullRequestEvent) error {
	if !slices.Contains(startsJobs, ev.GetAction()) {
		return nil
	}
	pr := ev.GetPullRequest()
	repo := ev.GetRepo().GetFullName()
	if pr == nil || repo == "" || pr.GetNumber() == 0 || pr.GetHead().GetSHA() == "" {
		return errors.New("the pull_request event lacks the repository, the number or the head commit")
	}
	v := Vars{Repo: repo, PR: pr.GetNumber(), Title: pr.GetTitle(), Author: pr.GetUser().GetLogin(),
		Base: pr.GetBase().GetRef(), Head: pr.GetHead().GetRef(), Commit: pr.GetHead().GetSHA()}
	files, err := j.changedFiles(ctx, v.Repo, v.PR)
	if err != nil {
		return err
	}
	jobs, err := j.cfg.Rules.Jobs(v, files, Defaults{Model: j.cfg.Session.Model, Workdir: j.cfg.Session.Workdir, Limits: j.cfg.Session.Limits})
	if err != nil {
		return err
	}
	running, err := j.running(ctx, v.Repo)
	if err != nil {
		return err
	}
	var errs []error
	if j.cfg.Rules.OldCommits == OldCommitsCancel {
		var cerr error
		running, cerr = j.cancelOld(ctx, running, v)
		errs = append(errs, cerr)
	}
	left, err := j.startAll(ctx, jobs, running)
	errs = append(errs, err)
	if len(left) > 0 {
		errs = append(errs, j.commentLeftOut(ctx, v, left))
	}
	return errors.Join(errs...)
}

// changedFiles lists the pull request's changed files, every page of them.
func (j *Jobs) changedFiles(ctx context.Context, repo string, pr int) ([]string, error) {
	owner, name, _ := strings.Cut(repo, "/")
	var files []string
	for f, err := range j.cfg.GitHub.PullRequests.ListFilesIter(ctx, owner, name, pr, &github.ListOptions{PerPage: 100}) {
		if err != nil {
			return nil, fmt.Errorf("listing the changed files of %s#%d: %w", repo, pr, err)
		}
		if f.GetStatus() == "removed" {
			// A deleted file has nothing left to review.
			continue
		}
		files = append(files, f.GetFilename())
	}
	return files, nil
}

// startAll starts the jobs while the repository's cap allows, given the jobs running now, and
// returns those it left out. A job already started (running, or ended) takes no new slot.
func (j *Jobs) startAll(ctx context.Context, jobs []Job, running []runningJob) ([]Job, error) {
	slots := j.cfg.Rules.MaxRunning - len(running)
	capped := j.cfg.Rules.MaxRunning > 0
	var left []Job
	var errs []error
	for _, job := range jobs {
		id := job.Key.WorkflowID()
		if slices.ContainsFunc(running, func(r runningJob) bool { return r.WorkflowID == id }) {
			continue
		}
		if capped && slots <= 0 {
			exists, err := j.exists(ctx, id)
			if err != nil {
				errs = append(errs, err)
			} else if !exists {
				left = append(left, job)
			}
			continue
		}
		started, err := j.start(ctx, job)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if started {
			slots--
			j.cfg.Logger.Info("github job started", "workflow_id", id, "pull_request", job.GitHub.String(), "rule", job.Rule, "path", job.Path)
			ref := job.ref()
			// The process whose start the server took writes the job's comment first, so a result
			// found by any watcher later is an edit of it, never a second comment.
			errs = append(errs, j.postComment(ctx, ref, runningBody(ref)))
			j.watch(ref)
		}
	}
	return left, errors.Join(errs...)
}
