package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v84/github"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/fakegithub"
	"github.com/keelrun/keel/internal/githubbot"
	"github.com/keelrun/keel/internal/githubjobs"
)

// ghToken is the one token the fake GitHub of these tests accepts.
const ghToken = "gh-test-token"

// jobsRig is a worker process on the fake gateway, a fake GitHub, and demo workspaces for the
// changed files the tests' rules give a job each.
type jobsRig struct {
	t     *testing.T
	gh    *fakegithub.Server
	queue string
	root  string
	rules githubjobs.Rules
}

// newJobsRig starts the worker and the fake GitHub and parses a rule file whose review rule runs
// one job per changed .go file in a workspace of its own under the rig's root; extra is added to
// the rule file's top level.
func newJobsRig(t *testing.T, extra string, files ...string) *jobsRig {
	t.Helper()
	gw := startGateway(t)
	gh, err := fakegithub.Start(fakegithub.Options{Token: ghToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gh.Close() })
	workerBin, err := env.Build("./worker")
	if err != nil {
		t.Fatal(err)
	}
	environ := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+gw+"/v1")
	w := &workerProc{bin: workerBin, env: environ, t: t}
	w.start()
	t.Cleanup(w.kill)
	root := t.TempDir()
	for _, f := range files {
		if err := demo.CopyWorkspace(filepath.Join(root, f)); err != nil {
			t.Fatal(err)
		}
	}
	rules, err := githubjobs.ParseRules(fmt.Appendf(nil, `%s
rules:
  - name: review
    for_each: file
    files: ["**/*.go"]
    prompt: "Review {{.Path}} of {{.Repo}}#{{.PR}}.\n\n{{.Title}}"
    workdir: %s/{{.Path}}
    limits: {max_turns: 20}
`, extra, root))
	if err != nil {
		t.Fatal(err)
	}
	return &jobsRig{t: t, gh: gh, queue: envValue(environ, "KEEL_TEMPORAL_TASK_QUEUE"), root: root, rules: rules}
}

// ghSecret is the webhook secret of these tests' bots.
const ghSecret = "gh-test-secret"

// ghBot is one bot replica: the webhook bot (signature check, redelivery memory, dispatch) on a
// loopback server of its own, with its own jobs handler, Temporal client and GitHub client.
type ghBot struct {
	url  string
	jobs *githubjobs.Jobs
}

// bot starts a bot replica that serves until the test ends.
func (r *jobsRig) bot(ctx context.Context) *ghBot {
	r.t.Helper()
	tc, err := client.Dial(client.Options{HostPort: env.Address()})
	if err != nil {
		r.t.Fatal(err)
	}
	gc, err := githubbot.NewGitHubClient(r.gh.URL(), ghToken, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	var base contract.SessionInput
	base.Model, base.Limits = "gpt-4o-mini", contract.Limits{MaxTurns: 20}
	wctx, cancel := context.WithCancel(ctx)
	j, err := githubjobs.New(wctx, githubjobs.Config{Rules: r.rules, Temporal: tc, GitHub: gc, TaskQueue: r.queue, Session: base})
	if err != nil {
		r.t.Fatal(err)
	}
	bot, err := githubbot.New(githubbot.Config{Secret: ghSecret, GitHub: gc, Sessions: githubbot.TemporalSessions{Client: tc}, PullRequests: j})
	if err != nil {
		r.t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(githubbot.WebhookPath, bot)
	srv := httptest.NewServer(mux)
	r.t.Cleanup(func() {
		srv.Close()
		bot.Wait()
		cancel()
		j.Wait()
		tc.Close()
	})
	return &ghBot{url: srv.URL + githubbot.WebhookPath, jobs: j}
}

// event is the pull_request payload GitHub sends for the pull request as the fake holds it.
func (r *jobsRig) event(action, repo string, pr int) *github.PullRequestEvent {
	r.t.Helper()
	ev, err := r.gh.PullRequestEvent(action, repo, pr, "alice")
	if err != nil {
		r.t.Fatal(err)
	}
	return ev
}

// deliver sends d to the bot (again, when d was sent before) and checks the bot took it.
func (r *jobsRig) deliver(ctx context.Context, url string, d fakegithub.Delivery) fakegithub.Delivery {
	r.t.Helper()
	got, err := fakegithub.Redeliver(ctx, nil, url, ghSecret, d)
	if err != nil {
		r.t.Fatal(err)
	}
	if got.Status/100 != 2 {
		r.t.Fatalf("the bot answered the delivery %d: %s", got.Status, got.Response)
	}
	return got
}

// requests counts the requests to path the fake GitHub answered.
func (r *jobsRig) requests(method, path string) int {
	n := 0
	for _, q := range r.gh.Requests() {
		if q.Method == method && q.Path == path && q.Status/100 == 2 {
			n++
		}
	}
	return n
}

// jobID is the workflow ID of the review job of path at commit, as the identity tuple gives it.
func jobID(repo, commit, path string) string {
	return contract.JobKey{Repository: repo, Commit: commit, Path: path, PromptVersion: "review@" + githubjobs.DefaultPromptVersion, Model: "gpt-4o-mini"}.WorkflowID()
}

// jobComments maps the workflow ID in each job marker on the pull request to the bodies holding it.
func (r *jobsRig) jobComments(repo string, pr int) map[string][]string {
	out := map[string][]string{}
	for _, c := range r.gh.Comments(repo, pr) {
		_, rest, ok := strings.Cut(c.Body, "<!-- keel-job:")
		if id, _, ok2 := strings.Cut(rest, " -->"); ok && ok2 {
			out[id] = append(out[id], c.Body)
		}
	}
	return out
}

// commentPosts counts the comments created on the pull request.
func (r *jobsRig) commentPosts(repo string, pr int) int {
	return r.requests("POST", fmt.Sprintf("/repos/%s/issues/%d/comments", repo, pr))
}

// runs lists every run the visibility store holds for a job query.
func runs(ctx context.Context, t *testing.T, query string) []string {
	t.Helper()
	resp, err := env.Client().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
	if err != nil {
		t.Fatalf("listing %s: %v", query, err)
	}
	var ids []string
	for _, ex := range resp.GetExecutions() {
		ids = append(ids, ex.GetExecution().GetWorkflowId())
	}
	slices.Sort(ids)
	return ids
}

// sha is a commit SHA made up for a test.
func sha(s string) string { return fmt.Sprintf("%040x", []byte(s))[:40] }

// TestGitHubJobs: a pull request event with three changed .go files starts three sessions (a
// README and a removed file get none). The delivery goes to one bot replica, again to it, and to a
// second replica at the same time, and still makes three sessions, one run each; every result
// lands on its own pull request as one comment, and a bot started later that resumes and gets the
// delivery once more posts nothing new.
func TestGitHubJobs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const repo = "acme/shop"
	files := []string{"a.go", "pkg/b.go", "pkg/c.go"}
	r := newJobsRig(t, "", append(files, "d.go")...)
	c7, c8 := sha("seven"), sha("eight")
	r.gh.AddPR(repo, fakegithub.PR{Number: 7, Author: "alice", Title: "Three files", HeadSHA: c7, Files: []fakegithub.File{
		{Name: "a.go"}, {Name: "README.md"}, {Name: "pkg/b.go", Status: "added"}, {Name: "old.go", Status: "removed"}, {Name: "pkg/c.go"}}})
	r.gh.AddPR(repo, fakegithub.PR{Number: 8, Author: "bob", Title: "One file", HeadSHA: c8, Files: []fakegithub.File{{Name: "d.go"}}})
	ev7, err := json.Marshal(r.event("opened", repo, 7))
	if err != nil {
		t.Fatal(err)
	}
	ev8, err := json.Marshal(r.event("opened", repo, 8))
	if err != nil {
		t.Fatal(err)
	}
	d7 := fakegithub.Delivery{Event: "pull_request", ID: "7a1b2c3d-0000-4000-8000-000000000007", Body: ev7}
	d8 := fakegithub.Delivery{Event: "pull_request", ID: "7a1b2c3d-0000-4000-8000-000000000008", Body: ev8}

	one, two := r.bot(ctx), r.bot(ctx)
	var wg sync.WaitGroup
	for _, to := range []struct {
		url string
		d   fakegithub.Delivery
	}{{one.url, d7}, {one.url, d7}, {two.url, d7}, {two.url, d8}} {
		wg.Go(func() { r.deliver(ctx, to.url, to.d) })
	}
	wg.Wait()

	want7 := []string{jobID(repo, c7, "a.go"), jobID(repo, c7, "pkg/b.go"), jobID(repo, c7, "pkg/c.go")}
	want8 := []string{jobID(repo, c8, "d.go")}
	done := func(pr int, ids []string) bool {
		got := r.jobComments(repo, pr)
		for _, id := range ids {
			if len(got[id]) != 1 || !strings.Contains(got[id][0], ": completed after") {
				return false
			}
		}
		return true
	}
	if !waitFor(3*time.Minute, func() bool { return done(7, want7) && done(8, want8) }) {
		t.Fatalf("the results did not all land: #7 %v, #8 %v", r.jobComments(repo, 7), r.jobComments(repo, 8))
	}
	check := func(when string) {
		t.Helper()
		for pr, ids := range map[int][]string{7: want7, 8: want8} {
			got := r.jobComments(repo, pr)
			if len(got) != len(ids) || len(r.gh.Comments(repo, pr)) != len(ids) {
				t.Errorf("%s: #%d has comments for jobs %v, want one each for %v", when, pr, keys(got), ids)
			}
			if n := r.commentPosts(repo, pr); n != len(ids) {
				t.Errorf("%s: %d comments were posted on #%d, want %d (results are edits of the job's comment)", when, n, pr, len(ids))
			}
		}
	}
	check("after the deliveries")
	// One run per job: the server refused every second start.
	query := fmt.Sprintf("%s = '%s#7'", contract.PullRequestKey.GetName(), repo)
	slices.Sort(want7)
	if !waitFor(30*time.Second, func() bool { return slices.Equal(runs(ctx, t, query), want7) }) {
		t.Fatalf("runs of #7's jobs: %v, want one each of %v", runs(ctx, t, query), want7)
	}

	// A bot started later (no memory of the delivery) resumes the watchers of recent jobs and gets
	// the delivery once more.
	before := r.gh.Comments(repo, 7)
	edits := func() int {
		n := 0
		for _, q := range r.gh.Requests() {
			if q.Method == "PATCH" && strings.HasPrefix(q.Path, "/repos/"+repo+"/issues/comments/") {
				n++
			}
		}
		return n
	}
	edited := edits()
	filesPath := "/repos/" + repo + "/pulls/7/files"
	listed := r.requests("GET", filesPath)
	three := r.bot(ctx)
	if err := three.jobs.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	r.deliver(ctx, three.url, d7)
	if !waitFor(30*time.Second, func() bool { return r.requests("GET", filesPath) > listed }) {
		t.Fatal("the later bot never handled the delivery")
	}
	three.jobs.Wait()
	check("after a later bot resumed and got the delivery")
	// Nothing was started again (that would write a running comment) and no result rewritten.
	if n := edits() - edited; n != 0 {
		t.Errorf("the later bot edited %d comments, want none", n)
	}
	if after := r.gh.Comments(repo, 7); !slices.EqualFunc(before, after, func(a, b fakegithub.Comment) bool { return a.Body == b.Body }) {
		t.Errorf("resuming changed the comments:\n%v\n%v", before, after)
	}
}

// TestGitHubJobsNewCommit: with max_running 2, a pull request of three files starts two jobs and
// a comment names the one left out; a push of a new head commit cancels the running jobs of the
// old one (their comments say so) and starts the new commit's job.
func TestGitHubJobsNewCommit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const repo = "acme/slow"
	r := newJobsRig(t, "max_running: 2", "x.go", "y.go", "z.go")
	// The prompt names the fake model's hang mode: each job's first command runs until it is
	// cancelled.
	r.withRules(t, `
max_running: 2
rules:
  - name: review
    for_each: file
    files: ["**/*.go"]
    prompt: "Review {{.Path}} of {{.Repo}}#{{.PR}}.MODE"
    workdir: ROOT/{{.Path}}
    limits: {max_turns: 20}
`, "hang")
	title := "Slow reviews"
	old, head := sha("old"), sha("new")
	r.gh.AddPR(repo, fakegithub.PR{Number: 9, Title: title, HeadSHA: old, Files: []fakegithub.File{{Name: "x.go"}, {Name: "y.go"}, {Name: "z.go"}}})
	bot := r.bot(ctx).jobs
	if err := bot.HandlePullRequest(ctx, r.event("opened", repo, 9)); err != nil {
		t.Fatal(err)
	}
	started := []string{jobID(repo, old, "x.go"), jobID(repo, old, "y.go")}
	got := r.jobComments(repo, 9)
	if len(got) != 2 || len(got[started[0]]) != 1 || len(got[started[1]]) != 1 {
		t.Fatalf("job comments %v, want one each for %v", keys(got), started)
	}
	var leftOut []string
	for _, c := range r.gh.Comments(repo, 9) {
		if strings.Contains(c.Body, githubjobs.LeftOutMarker(old)) {
			leftOut = append(leftOut, c.Body)
		}
	}
	if len(leftOut) != 1 || !strings.Contains(leftOut[0], "did not start 1 job") || !strings.Contains(leftOut[0], "review on z.go") {
		t.Fatalf("the left-out comment: %q", leftOut)
	}
	if d, err := env.Client().DescribeWorkflow(ctx, jobID(repo, old, "z.go"), ""); err == nil {
		t.Fatalf("the job past the cap was started: %v", d.RawResponse.GetWorkflowExecutionInfo().GetStatus())
	}
	// A push comes seconds later, once the visibility store lists the running jobs.
	runningQ := fmt.Sprintf("%s = 'repo:%s' AND ExecutionStatus = 'Running'", contract.GitHubJobKey.GetName(), repo)
	if !waitFor(30*time.Second, func() bool { return len(runs(ctx, t, runningQ)) == 2 }) {
		t.Fatalf("running jobs listed: %v", runs(ctx, t, runningQ))
	}
	r.gh.AddPR(repo, fakegithub.PR{Number: 9, Title: title, HeadSHA: head, Files: []fakegithub.File{{Name: "x.go"}}})
	if err := bot.HandlePullRequest(ctx, r.event("synchronize", repo, 9)); err != nil {
		t.Fatal(err)
	}
	superseded := "cancelled after"
	if !waitFor(90*time.Second, func() bool {
		got := r.jobComments(repo, 9)
		return strings.Contains(strings.Join(got[started[0]], ""), superseded) && strings.Contains(strings.Join(got[started[1]], ""), superseded)
	}) {
		t.Fatalf("the old commit's jobs were not cancelled: %v", r.jobComments(repo, 9))
	}
	for _, id := range started {
		if body := r.jobComments(repo, 9)[id][0]; !strings.Contains(body, "superseded by commit "+head[:7]) {
			t.Errorf("the comment of %s does not say what superseded it:\n%s", id, body)
		}
	}
	fresh := jobID(repo, head, "x.go")
	if c := r.jobComments(repo, 9)[fresh]; len(c) != 1 || !strings.Contains(c[0], "running") {
		t.Fatalf("the new commit's job comment: %q", c)
	}
	// Stop the new job too: its comment shows the cancellation, edited in place.
	if err := env.Client().SignalWorkflow(ctx, fresh, "", contract.SignalCancel, contract.CancelRequest{Reason: "test over"}); err != nil {
		t.Fatal(err)
	}
	if !waitFor(90*time.Second, func() bool {
		return strings.Contains(strings.Join(r.jobComments(repo, 9)[fresh], ""), "cancelled after")
	}) {
		t.Fatalf("the new job's comment: %v", r.jobComments(repo, 9)[fresh])
	}
	if n, want := r.commentPosts(repo, 9), 4; n != want {
		t.Errorf("%d comments posted on #9, want %d (three jobs and the left-out note)", n, want)
	}
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
