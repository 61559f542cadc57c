package e2e

import (
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/fakegithub"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// e2eRepo is the repository of the local GitHub's pull requests.
const e2eRepo = "keel-org/app"

// startFakeGitHub runs a local GitHub accepting token, with the pull requests in e2eRepo.
func startFakeGitHub(t *testing.T, token string, prs ...fakegithub.PR) *fakegithub.Server {
	t.Helper()
	gh, err := fakegithub.Start(fakegithub.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gh.Close() })
	for _, pr := range prs {
		gh.AddPR(e2eRepo, pr)
	}
	return gh
}

// TestGitHubChannelCommentsOnTheSessionsPR runs two sessions for two pull requests (of two
// repositories) on one worker process that has no default pull request: each escalation comments
// on its own session's pull request, once, mentioning that pull request's author, and the
// triage label goes on both.
func TestGitHubChannelCommentsOnTheSessionsPR(t *testing.T) {
	const token = "ghp-e2e-pr"
	gh := startFakeGitHub(t, token, fakegithub.PR{Number: 7, Author: "app-author", HeadSHA: "a7a7a7a7a7a7"})
	const libRepo = "keel-org/lib"
	gh.AddPR(libRepo, fakegithub.PR{Number: 31, Author: "lib-author", HeadSHA: "b31b31b31b31"})

	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = gw.Close() }()
	// One environment for the worker and both starters: one task queue, one state folder.
	environ := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+gw.BaseURL()+"/v1",
		"KEEL_ESCALATION_CHANNELS=github", "KEEL_ESCALATION_DEADLINE=6s",
		"KEEL_ESCALATION_GITHUB_TOKEN="+token, "KEEL_ESCALATION_GITHUB_BASE_URL="+gh.URL())
	workerBin, err := env.Build("./worker")
	if err != nil {
		t.Fatal(err)
	}
	w := &workerProc{bin: workerBin, env: environ, t: t}
	w.start()
	defer w.kill()

	sessions := []contract.GitHubContext{
		{Repo: e2eRepo, PR: 7, Commit: "a7a7a7a7a7a7"},
		{Repo: libRepo, PR: 31, Commit: "b31b31b31b31"},
	}
	authors := []string{"app-author", "lib-author"}
	runs := make([]testenv.Run, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		ws := t.TempDir()
		if err := demo.CopyWorkspace(ws); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(starter, "run", "--repo", s.Repo, "--pr", strconv.Itoa(s.PR), "--commit", s.Commit,
			"--workdir", ws, "--output", "jsonl", fakegw.WithMode("fix the failing test", fakegw.ModeBadArgs))
		cmd.Env = environ
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if runs[i], err = testenv.Finish(cmd, &stdout, &stderr); err != nil {
				t.Errorf("starter for %s: %v\nstderr:\n%s", s, err, runs[i].Stderr)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	for i, s := range sessions {
		r := runs[i]
		if r.Code != 1 || r.Summary.Status != contract.StatusAborted {
			t.Fatalf("session for %s: exit %d, status %q; want 1, aborted at the deadline\nstderr:\n%s", s, r.Code, r.Summary.Status, r.Stderr)
		}
		var esc *contract.Escalation
		for _, e := range r.Events {
			if e.Event == contract.EventEscalation && e.Escalation != nil {
				esc = e.Escalation
			}
		}
		if esc == nil || esc.GitHub == nil || *esc.GitHub != s {
			t.Fatalf("session for %s: escalation %+v; want one that carries its pull request", s, esc)
		}
		comments := gh.Comments(s.Repo, s.PR)
		if len(comments) != 1 {
			t.Fatalf("%s has %d comments, want exactly 1: %+v", s, len(comments), comments)
		}
		for _, want := range []string{escalation.GitHubMarker(esc.ID), "@" + authors[i] + " ", r.Summary.WorkflowID, "`/keel retry`", "starter answer"} {
			if !strings.Contains(comments[0].Body, want) {
				t.Errorf("the comment on %s lacks %q:\n%s", s, want, comments[0].Body)
			}
		}
		if got := gh.Labels(s.Repo, s.PR); len(got) != 1 || got[0] != escalation.TriageLabel {
			t.Errorf("%s has labels %q, want %s", s, got, escalation.TriageLabel)
		}
	}
	if n := gh.Unauthorized(); n != 0 {
		t.Errorf("%d GitHub requests without the token", n)
	}
}
