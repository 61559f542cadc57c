package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/devkit/stubmcp"
)

// stubModule is the module name the MCP server of TestEscapeAfterSandbox runs as python3 -m.
const stubModule = "keelstubmcp"

// TestEscapeAfterSandbox: a scripted hostile model, through a real worker (started, as under
// `starter run --dev`, in the work directory), leaves what would run on the host after the
// sandbox: core.fsmonitor and an alias in .git/config, hooks made executable by a command, an
// include, an exclude entry hiding a Go file, a commondir pointing at a configuration of its own,
// by the file tools, by commands, through a link and by moving .git or its hooks aside. Every
// attempt fails or is undone and the model is told so, while git add and commit still work in
// the sandbox. Afterwards git status, git commit, the alias and go run (stamping version control
// information, so go runs git too), run by the host user in the work directory, leave no canary,
// and the Go file the model tried to hide is listed by the session's review and tracked by git. The worker's MCP server, configured as `python3 -m NAME`, is the
// genuine module and not the NAME.py planted in the work directory.
func TestEscapeAfterSandbox(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	workerBin, err := env.Build("./worker")
	if err != nil {
		t.Fatal(err)
	}
	gwURL := startGateway(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, canary, genuine, conf := filepath.Join(base, "ws"), filepath.Join(base, "canary"), filepath.Join(base, "genuine"), filepath.Join(base, "conf")
	for _, d := range []string{ws, canary, genuine, conf} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hostGit(t, ws, "init", "-q", ".")
	// A benign Go program: go run on the host builds it, and a build that stamps version
	// control information runs git in the work directory.
	for name, text := range map[string]string{"go.mod": "module escape\n\ngo 1.22\n", "main.go": "package main\n\nfunc main() {}\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hostGit(t, ws, "add", "go.mod", "main.go")
	hostGit(t, ws, "commit", "-q", "-m", "first")
	// No .git/info: the model's attempt to create one is undone, not refused by a mount.
	if err := os.RemoveAll(filepath.Join(ws, ".git", "info")); err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(ws, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	// What a model of an earlier session left in the work directory, and the genuine module.
	if err := os.WriteFile(filepath.Join(ws, stubModule+".py"), []byte(stubmcp.Planted(filepath.Join(canary, "mcp"))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(genuine, stubModule+".py"), []byte(stubmcp.Module), 0o644); err != nil {
		t.Fatal(err)
	}
	confFile := filepath.Join(conf, "keel.yaml")
	if err := os.WriteFile(confFile, fmt.Appendf(nil, "mcp:\n  servers:\n    - name: stub\n      command: [python3, -m, %s]\n      env: [\"PYTHONPATH=%s\"]\n",
		stubModule, genuine), 0o644); err != nil {
		t.Fatal(err)
	}

	environ := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+gwURL+"/v1")
	var stderr syncBuffer
	worker := exec.Command(workerBin, "-config", confFile)
	worker.Dir, worker.Env, worker.Stdout, worker.Stderr = ws, environ, &stderr, &stderr
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = worker.Process.Kill()
		_ = worker.Wait()
		if t.Failed() {
			t.Logf("the worker's output:\n%s", stderr.String())
		}
	})

	task := fakegw.EscapeGitTask(canary, stubmcp.Tool)
	run, err := env.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: envValue(environ, "KEEL_TEMPORAL_TASK_QUEUE")},
		contract.SessionWorkflow, contract.SessionInput{Task: task, Settings: contract.Settings{ToolSettings: contract.ToolSettings{Workdir: ws}}, Limits: contract.Limits{MaxTurns: 40}})
	if err != nil {
		t.Fatal(err)
	}
	var sum contract.Summary
	if err := run.Get(ctx, &sum); err != nil || sum.Status != contract.StatusCompleted {
		t.Fatalf("the session did not complete: %v %+v", err, sum)
	}

	var results []string
	for _, m := range transcriptOf(ctx, t, run.GetID()) {
		if m.Role == contract.RoleTool {
			results = append(results, m.Content)
		}
	}
	steps := fakegw.EscapeGitSteps(task)
	if len(results) != len(steps) {
		t.Fatalf("%d results for %d attempts:\n%s", len(results), len(steps), strings.Join(results, "\n---\n"))
	}
	for i, s := range steps {
		if why := s.Check(results[i]); why != "" {
			t.Errorf("%s: %s:\n%s", s.Name, why, results[i])
		}
	}

	// canaries lists what the payloads left in the canary folder, and empties it, so each
	// command below is charged with its own.
	canaries := func() []string {
		left, _ := os.ReadDir(canary)
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
			_ = os.RemoveAll(filepath.Join(canary, e.Name()))
		}
		return names
	}
	if c := canaries(); len(c) > 0 {
		t.Errorf("the worker ran what the model wrote; canaries: %v", c)
	}
	// The hidden Go file is not hidden: the session's review lists it as created and not hidden
	// from git status, and git tracks it (the model committed it) and does not ignore it. go run
	// on the host runs it, as it runs any Go file the model wrote; what Keel guarantees is that
	// the user sees it.
	listed := false
	if sum.Changes != nil {
		for _, f := range sum.Changes.Files {
			if f.Path == fakegw.EscapeGitHidden {
				listed = f.Change == contract.FileCreated && f.Hidden == ""
			}
		}
	}
	if !listed {
		t.Errorf("the session's review does not list %s as created and shown by git status: %+v", fakegw.EscapeGitHidden, sum.Changes)
	}
	// The host user types git and go in the work directory. go run stamps no version control
	// information at the default -buildvcs=auto (only go build and go install do), so it is
	// run a second time as a user whose GOFLAGS ask for it: then go runs git status there.
	goRun := func(flags ...string) *exec.Cmd {
		cmd := exec.Command("go", append(append([]string{"run"}, flags...), ".")...)
		cmd.Dir, cmd.Env = ws, append(os.Environ(), "GOFLAGS=-buildvcs=auto", "GOTOOLCHAIN=local")
		return cmd
	}
	for _, h := range []struct {
		name string
		cmd  *exec.Cmd
		code int // the exit status wanted
	}{
		{"git status", userGitCmd(ws, "status"), 0},
		{"git commit", userGitCmd(ws, "commit", "-q", "--allow-empty", "-m", "by the user"), 0},
		{"git st", userGitCmd(ws, "st"), 1},                                                                                  // no alias: not a git command
		{"git ls-files " + fakegw.EscapeGitHidden, userGitCmd(ws, "ls-files", "--error-unmatch", fakegw.EscapeGitHidden), 0}, // tracked
		{"git check-ignore " + fakegw.EscapeGitHidden, userGitCmd(ws, "check-ignore", "-q", fakegw.EscapeGitHidden), 1},      // not ignored
		{"go run .", goRun(), 0},
		{"go run -buildvcs=true .", goRun("-buildvcs=true"), 0},
	} {
		out, err := h.cmd.CombinedOutput()
		if h.cmd.ProcessState.ExitCode() != h.code {
			t.Errorf("%s as the host user: %v (want exit status %d)\n%s", h.name, err, h.code, out)
		}
		if c := canaries(); len(c) > 0 {
			t.Errorf("%s as the host user ran what the model wrote; canaries: %v", h.name, c)
		}
	}
	if now, err := os.ReadFile(filepath.Join(ws, ".git", "config")); err != nil || !bytes.Equal(now, config) {
		t.Errorf(".git/config changed: %v\n%s", err, now)
	}
	for _, p := range []string{".git/info", ".git/commondir", ".git/old-hooks", ".git-old", ".git/hooks/pre-commit", ".git/hooks/post-commit"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s is in the work directory after the session", p)
		}
	}
}

// hostGit runs git in dir as the test's user and fails the test if git fails.
func hostGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := userGit(dir, args...); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// userGit runs git in dir as the test's user, as the user of the machine would.
func userGit(dir string, args ...string) ([]byte, error) {
	return userGitCmd(dir, args...).CombinedOutput()
}

// userGitCmd is the git command userGit runs.
func userGitCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@example.com", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@example.com")
	return cmd
}

// TestRunDevShowsWeakerSandbox: `starter run --dev` on a machine where commands get no cgroup (the
// starter runs in a mount namespace of its own with every cgroup hierarchy unmounted) shows the
// operator the sandbox's weaker mode, the line a worker of its own logs when it starts.
func TestRunDevShowsWeakerSandbox(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs unshare and root to unmount the cgroup hierarchies in a mount namespace of its own")
	}
	const noCgroups = `for m in $(awk '$3 ~ /^cgroup/ {print $2}' /proc/self/mounts | sort -r); do umount -l "$m" || exit 9; done; exec "$0" "$@"`
	environ := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true")
	r := startLiveCmd(t, environ, func(cmd *exec.Cmd) {
		cmd.Path = unshare
		cmd.Args = append([]string{"unshare", "--mount", "--propagation", "private", "sh", "-c", noCgroups}, cmd.Args...)
	}, "run", "--dev", "--workdir", t.TempDir(), "-o", "jsonl", "say hi").finish()
	if r.Code != 0 || r.Summary.Status != contract.StatusCompleted {
		t.Fatalf("exit %d, summary %+v\n%s", r.Code, r.Summary, r.Stderr)
	}
	const want = "keel: warning: sandbox limits: no cgroup for commands ("
	if !strings.Contains(r.Stderr, want) || !strings.Contains(r.Stderr, "shared memory and /tmp are not bounded per command") {
		t.Fatalf("the operator was not shown the weaker mode (want %q):\n%s", want, r.Stderr)
	}
}
