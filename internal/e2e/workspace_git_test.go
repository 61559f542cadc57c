package e2e

import (
	"bytes"
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

	environ := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+startGateway(t)+"/v1")
	workerBin, err := env.Build("./worker")
	if err != nil {
		t.Fatal(err)
	}
	w := &workerProc{bin: workerBin, env: environ, t: t}
	w.start()
	defer w.kill()

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
