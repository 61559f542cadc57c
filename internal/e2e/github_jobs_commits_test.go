package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegithub"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/devkit/gitserver"
	"github.com/keelrun/keel/internal/devkit/testenv"
	"github.com/keelrun/keel/internal/githubjobs"
	"github.com/keelrun/keel/internal/store"
)

// TestGitHubJobsRunOnTheirCommits: two pull requests of one repository, at two commits whose
// MARKER differs, arrive as signed webhooks; their jobs (a rule with no workdir) run at the same
// time on workers acting as two hosts (their own state directories and workspace roots, only the
// Temporal server and the PostgreSQL store shared), whose workspaces.github_url points owner/name
// at a git server on loopback. Each job's first command blocks until both jobs' commands have
// started, which proves they overlap; then read_file shows each job's model its own commit's
// MARKER. Each job's changes arrive as its branch on its commit, and nothing else is pushed.
func TestGitHubJobsRunOnTheirCommits(t *testing.T) {
	testenv.Needs(t, "a Temporal dev server")
	testenv.Needs(t, "PostgreSQL")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const repo = "acme/shop"
	srv := gitserver.Start(t, t.TempDir(), "")
	bare, _ := srv.Repo(t, repo)
	src := t.TempDir()
	gitserver.Git(t, src, "init", "--quiet", "-b", "main")
	markers := []string{"marker-of-commit-one", "marker-of-commit-two"}
	var commits []string
	for _, m := range markers {
		if err := os.WriteFile(filepath.Join(src, "MARKER"), []byte(m+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		gitserver.Git(t, src, "add", "-A")
		gitserver.Git(t, src, "commit", "--quiet", "-m", m)
		commits = append(commits, gitserver.Git(t, src, "rev-parse", "HEAD"))
	}
	gitserver.Git(t, src, "push", "--quiet", bare, "main")

	bin, err := env.Build("./worker")
	if err != nil {
		t.Fatal(err)
	}
	base := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+startGateway(t)+"/v1",
		"KEEL_STORE_BACKEND=postgres", "KEEL_STORE_DSN="+drillDSN(), "KEEL_WORKSPACES_GITHUB_URL="+srv.URL)
	hosts := []*followHost{newFollowHost(t, bin, "A", base), newFollowHost(t, bin, "B", base)}

	gh, err := fakegithub.Start(fakegithub.Options{Token: ghToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gh.Close() })
	// The job's first command waits for a file the test writes once both jobs' commands run.
	prompt := "Check the marker of {{.Repo}}#{{.PR}}.\n" +
		fakegw.CommandLine(`sh -c "touch started; while [ ! -e go ]; do sleep 0.1; done"`) + "\n" +
		fakegw.ReadLine("MARKER")
	rules, err := githubjobs.ParseRules([]byte(`
rules:
  - name: review
    for_each: pull_request
    prompt: ` + strconv.Quote(fakegw.WithMode(prompt, fakegw.ModeCommands)) + `
    limits: {max_turns: 20}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := &jobsRig{t: t, gh: gh, queue: envValue(base, "KEEL_TEMPORAL_TASK_QUEUE"), rules: rules}
	bot := r.bot(ctx)
	ids := make([]string, len(commits))
	for i, c := range commits {
		pr := 20 + i
		gh.AddPR(repo, fakegithub.PR{Number: pr, Author: "alice", Title: "Marker " + strconv.Itoa(i+1), HeadSHA: c,
			Files: []fakegithub.File{{Name: "MARKER"}}})
		body, err := json.Marshal(r.event("opened", repo, pr))
		if err != nil {
			t.Fatal(err)
		}
		r.deliver(ctx, bot.url, fakegithub.Delivery{Event: "pull_request", ID: "c0ffee00-0000-4000-8000-0000000000" + strconv.Itoa(pr), Body: body})
		ids[i] = jobID(repo, c, "")
	}

	// Both jobs' first commands are running at once, each in a workspace a worker made.
	on := map[string]string{} // a started command's file: the host it runs on
	started := func() []string {
		var out []string
		for _, h := range hosts {
			m, _ := filepath.Glob(filepath.Join(h.root, "sessions", "*", "work", "started"))
			for _, p := range m {
				on[p] = h.name
			}
			out = append(out, m...)
		}
		return out
	}
	if !waitFor(2*time.Minute, func() bool { return len(started()) == 2 }) {
		t.Fatalf("the jobs' commands did not both start: %v\nhost A:\n%s\nhost B:\n%s", started(), hosts[0].stderr.String(), hosts[1].stderr.String())
	}
	var seen []string
	for _, p := range started() {
		dir := filepath.Dir(p)
		b, err := os.ReadFile(filepath.Join(dir, "MARKER"))
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, strings.TrimSpace(string(b)))
		t.Logf("a job's command runs on host %s in %s, whose MARKER holds %q", on[p], dir, b)
		if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(seen)
	if !slices.Equal(seen, markers) {
		t.Errorf("the two running jobs' workspaces hold the markers %q, want one each of %q", seen, markers)
	}

	completed := func() bool {
		for i, id := range ids {
			got := r.jobComments(repo, 20+i)[id]
			if len(got) != 1 || !strings.Contains(got[0], ": completed after") {
				return false
			}
		}
		return true
	}
	if !waitFor(2*time.Minute, completed) {
		t.Fatalf("the jobs' results did not land: #20 %v, #21 %v", r.jobComments(repo, 20), r.jobComments(repo, 21))
	}

	// Each job's model was shown its own commit's marker by read_file, and never the other's.
	st, err := store.Open(ctx, "postgres", drillDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i, id := range ids {
		var sum contract.Summary
		if err := env.Client().GetWorkflow(ctx, id, "").Get(ctx, &sum); err != nil || sum.Transcript == nil {
			t.Fatalf("job %s: %+v, %v", id, sum, err)
		}
		msgs, err := st.Load(ctx, sum.Transcript.Head)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, sum.Transcript.Pending...)
		var read []string
		for _, m := range msgs {
			if m.Role == contract.RoleTool && m.Name == "read_file" {
				read = append(read, m.Content)
			}
		}
		other := markers[1-i]
		if len(read) != 1 || !strings.Contains(read[0], markers[i]) || strings.Contains(strings.Join(read, ""), other) {
			t.Errorf("the job on %s (commit %s) was shown by read_file %q; want its own %q", id, commits[i][:7], read, markers[i])
		}
		// Its branch is its workspace's final tree on top of its own commit.
		br := contract.BranchName(id)
		if parent := gitserver.Git(t, bare, "rev-parse", "refs/heads/"+br+"^"); parent != commits[i] {
			t.Errorf("the branch %s sits on %s, want the job's commit %s", br, parent, commits[i])
		}
		if got := gitserver.Git(t, bare, "show", "refs/heads/"+br+":MARKER"); got != markers[i] {
			t.Errorf("MARKER on %s is %q, want %q", br, got, markers[i])
		}
	}
	refs := gitserver.Git(t, bare, "for-each-ref", "--format=%(refname)")
	want := []string{"refs/heads/" + contract.BranchName(ids[0]), "refs/heads/" + contract.BranchName(ids[1]), "refs/heads/main"}
	slices.Sort(want)
	if refs != strings.Join(want, "\n") {
		t.Errorf("the server's refs:\n%s\nwant\n%s", refs, strings.Join(want, "\n"))
	}
}
