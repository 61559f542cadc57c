package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/devkit/gitserver"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// TestSessionsOnTwoCommits: two sessions on two commits of one repository, started at once with
// `starter run --repo URL --commit SHA` against one worker process and a git server on loopback,
// each run in a workspace of their own that the worker made at their commit, and each reads its
// own commit's marker file. Nothing is pushed to the server.
func TestSessionsOnTwoCommits(t *testing.T) {
	testenv.Needs(t, "a Temporal dev server")
	srv := gitserver.Start(t, t.TempDir(), "")
	bare, url := srv.Repo(t, "app")
	src := t.TempDir()
	gitserver.Git(t, src, "init", "--quiet", "-b", "main")
	var commits []string
	for _, m := range []string{"marker-of-commit-one", "marker-of-commit-two"} {
		if err := os.WriteFile(filepath.Join(src, "MARKER"), []byte(m+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		gitserver.Git(t, src, "add", "-A")
		gitserver.Git(t, src, "commit", "--quiet", "-m", m)
		commits = append(commits, gitserver.Git(t, src, "rev-parse", "HEAD"))
	}
	gitserver.Git(t, src, "push", "--quiet", bare, "main")
	refsBefore := gitserver.Git(t, bare, "for-each-ref")

	environ := startFakeWorker(t)

	runs := make([]testenv.Run, len(commits))
	errs := make([]error, len(commits))
	var wg sync.WaitGroup
	for i, c := range commits {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(starter, "run", "--repo", url, "--commit", c, "--output", "jsonl",
				fakegw.CommandsTask("Read the marker.", "cat MARKER"))
			cmd.Env = environ
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if errs[i] = cmd.Start(); errs[i] == nil {
				runs[i], errs[i] = testenv.Finish(cmd, &stdout, &stderr)
			}
		}()
	}
	wg.Wait()
	for i, want := range []string{"marker-of-commit-one", "marker-of-commit-two"} {
		r := runs[i]
		if errs[i] != nil || r.Code != 0 || r.Summary.Status != contract.StatusCompleted {
			t.Fatalf("session %d: %v, exit %d, summary %+v\n%s", i, errs[i], r.Code, r.Summary, r.Stderr)
		}
		var read string
		for _, e := range r.Events {
			if e.Event == contract.EventToolResult {
				read += e.Text
			}
		}
		other := "marker-of-commit-two"
		if i == 1 {
			other = "marker-of-commit-one"
		}
		if !strings.Contains(read, want) || strings.Contains(read, other) {
			t.Errorf("session %d on %s read %q, want its own commit's marker %q", i, commits[i], read, want)
		}
	}
	made, _ := filepath.Glob(filepath.Join(envValue(environ, "KEEL_DEV_STATE_DIR"), "workspaces", "sessions", "*", "work"))
	if len(made) != 2 {
		t.Errorf("the worker made workspaces %v, want two", made)
	}
	if after := gitserver.Git(t, bare, "for-each-ref"); after != refsBefore {
		t.Errorf("the server's refs changed:\n%s\nthen\n%s", refsBefore, after)
	}
}

// TestSessionLeavesAsABranch: a session on a commit served by a loopback git server writes a
// file, deletes one, and then does what a hostile model would to the workspace's git (a pushurl
// to another repository, a pre-push hook, an alias for push, its own commit, a keel/ ref of its
// own). When it ends, the server has the branch keel/<session> whose tree is exactly the
// workspace's files, whose parent is the start commit, and no other ref of either repository
// moved; nothing the model wrote ran; the summary names the branch.
func TestSessionLeavesAsABranch(t *testing.T) {
	testenv.Needs(t, "a Temporal dev server")
	srv := gitserver.Start(t, t.TempDir(), "")
	bare, url := srv.Repo(t, "app")
	evilBare, evilURL := srv.Repo(t, "evil")
	src := t.TempDir()
	gitserver.Git(t, src, "init", "--quiet", "-b", "main")
	for name, text := range map[string]string{"MARKER": "the start\n", "KEEP.txt": "kept\n"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitserver.Git(t, src, "add", "-A")
	gitserver.Git(t, src, "commit", "--quiet", "-m", "start")
	start := gitserver.Git(t, src, "rev-parse", "HEAD")
	gitserver.Git(t, src, "push", "--quiet", bare, "main")
	refsBefore := gitserver.Git(t, bare, "for-each-ref")
	evilBefore := gitserver.Git(t, evilBare, "for-each-ref")
	canary := filepath.Join(t.TempDir(), "canary")
	hook := fmt.Sprintf(`sh -c "echo '#!/bin/sh' > .git/hooks/pre-push; echo 'echo ran >> %s' >> .git/hooks/pre-push; chmod +x .git/hooks/pre-push"`, canary)

	environ := startFakeWorker(t)

	cmd := exec.Command(starter, "run", "--repo", url, "--commit", start, "--output", "jsonl",
		fakegw.CommandsTask("Write NEW.txt and delete MARKER.",
			`sh -c "echo by the model > NEW.txt"`,
			"rm MARKER",
			"git config remote.origin.pushurl "+evilURL,
			`git config alias.push "!echo ran >> `+canary+`"`,
			hook,
			"git -c user.name=m -c user.email=m@example.com commit --quiet --allow-empty -m mine",
			"git update-ref refs/heads/keel/mine HEAD"))
	cmd.Env = environ
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r, err := testenv.Finish(cmd, &stdout, &stderr)
	if err != nil || r.Code != 0 || r.Summary.Status != contract.StatusCompleted {
		t.Fatalf("run: %v, exit %d, summary %+v\n%s", err, r.Code, r.Summary, r.Stderr)
	}
	br := r.Summary.Branch
	want := contract.BranchName(r.Summary.WorkflowID)
	if br == nil || !br.Pushed || br.Name != want || br.Parent != start {
		t.Fatalf("the summary's branch is %+v, want %s pushed on %s", br, want, start)
	}
	if got := gitserver.Git(t, bare, "rev-parse", "refs/heads/"+want); got != br.Commit {
		t.Errorf("the server's %s is %s, the summary says %s", want, got, br.Commit)
	}
	if got := gitserver.Git(t, bare, "rev-parse", br.Commit+"^"); got != start {
		t.Errorf("the branch's parent is %s, want the start commit %s", got, start)
	}
	if files := gitserver.Git(t, bare, "ls-tree", "-r", "--name-only", br.Commit); files != "KEEP.txt\nNEW.txt" {
		var results []string
		for _, e := range r.Events {
			if e.Event == contract.EventToolResult {
				results = append(results, e.Text)
			}
		}
		t.Errorf("the branch holds\n%s\nwant KEEP.txt and NEW.txt; the tools said %q", files, results)
	}
	if got := gitserver.Git(t, bare, "show", br.Commit+":NEW.txt"); got != "by the model" {
		t.Errorf("NEW.txt on the branch is %q", got)
	}
	var others []string
	for _, l := range strings.Split(gitserver.Git(t, bare, "for-each-ref"), "\n") {
		if !strings.HasSuffix(l, "refs/heads/"+want) {
			others = append(others, l)
		}
	}
	if strings.Join(others, "\n") != refsBefore {
		t.Errorf("refs other than %s changed on the server:\n%s\nthen\n%s", want, refsBefore, strings.Join(others, "\n"))
	}
	if got := gitserver.Git(t, evilBare, "for-each-ref"); got != evilBefore {
		t.Errorf("the repository the model pointed pushurl at got a push:\n%s", got)
	}
	if _, err := os.Stat(canary); err == nil {
		t.Error("a hook or alias the model wrote ran on the worker")
	}
}
