// Package githubjobs starts Keel sessions from GitHub pull request events: a rule file says which
// jobs a pull request yields (one per changed file matching a glob, one per pull request), each
// job's workflow ID comes from its identity tuple so the Temporal server, not a bot's memory,
// keeps a job from running twice, and each job's result lands on the pull request as one comment
// that is edited in place rather than posted again.
package githubjobs

import (
	"cmp"
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

	"github.com/keelrun/keel/escalation"
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
	// Login is who the GitHub token comments as (a GitHub App: "APP-SLUG[bot]"); empty: asked of
	// GitHub (GET /user) once. Only its comments are edited.
	Login  string
	Logger *slog.Logger
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
	self     escalation.GitHubIdentity
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
	return &Jobs{cfg: cfg, ctx: ctx, watching: map[string]bool{}, self: escalation.GitHubIdentity{Login: cfg.Login}}, nil
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
//
// An event is applied only when it still describes the pull request: GitHub is asked for its
// current state and head, so a redelivered or late event of an earlier head (or of an open pull
// request since closed) changes nothing and is logged. A closed event cancels the pull
// request's running jobs (closePR). A pull request from a fork gets only the jobs of rules with
// forks: run.
func (j *Jobs) HandlePullRequest(ctx context.Context, ev *github.PullRequestEvent) error {
	action := ev.GetAction()
	if action != "closed" && !slices.Contains(startsJobs, action) {
		return nil
	}
	pr := ev.GetPullRequest()
	repo := ev.GetRepo().GetFullName()
	if pr == nil || repo == "" || pr.GetNumber() == 0 || pr.GetHead().GetSHA() == "" {
		return errors.New("the pull_request event lacks the repository, the number or the head commit")
	}
	cur, err := j.current(ctx, repo, pr.GetNumber())
	if err != nil {
		return err
	}
	wantState := "open"
	if action == "closed" {
		wantState = "closed"
	}
	if cur.GetState() != wantState || cur.GetHead().GetSHA() != pr.GetHead().GetSHA() {
		j.cfg.Logger.Info("stale github pull_request event ignored: the pull request has moved on", "pull_request", prName(repo, pr.GetNumber()),
			"action", action, "event_head", pr.GetHead().GetSHA(), "head", cur.GetHead().GetSHA(), "state", cur.GetState())
		return nil
	}
	if action == "closed" {
		return j.closePR(ctx, repo, pr.GetNumber(), cur.GetMerged())
	}
	v := Vars{Repo: repo, PR: cur.GetNumber(), Title: cur.GetTitle(), Author: cur.GetUser().GetLogin(),
		Base: cur.GetBase().GetRef(), Head: cur.GetHead().GetRef(), Commit: cur.GetHead().GetSHA()}
	if head := cur.GetHead().GetRepo().GetFullName(); head == "" || !strings.EqualFold(head, repo) {
		// No head repository at all is a fork that was deleted: as untrusted as any other.
		v.Fork = cmp.Or(head, "(deleted fork)")
	}
	files, err := j.changedFiles(ctx, v.Repo, v.PR)
	if err != nil {
		return err
	}
	jobs, err := j.cfg.Rules.Jobs(v, files, Defaults{Model: j.cfg.Session.Model, Workdir: j.cfg.Session.Workdir, Limits: j.cfg.Session.Limits})
	if err != nil {
		// A job that cannot be rendered stays unrendered on every delivery; the others start.
		j.cfg.Logger.Error("github jobs left out", "pull_request", prName(v.Repo, v.PR), "error", err)
	}
	if v.Fork != "" {
		j.cfg.Logger.Info("github pull request from a fork", "pull_request", prName(v.Repo, v.PR), "fork", v.Fork, "jobs", len(jobs))
		if len(jobs) == 0 {
			return nil
		}
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

// current asks GitHub for the pull request as it is now.
func (j *Jobs) current(ctx context.Context, repo string, number int) (*github.PullRequest, error) {
	owner, name, _ := strings.Cut(repo, "/")
	p, _, err := j.cfg.GitHub.PullRequests.Get(ctx, owner, name, number)
	if err != nil {
		return nil, fmt.Errorf("reading pull request %s: %w", prName(repo, number), err)
	}
	return p, nil
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
