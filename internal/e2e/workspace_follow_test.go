package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/devkit/gitserver"
	"github.com/keelrun/keel/internal/devkit/testenv"
	"github.com/keelrun/keel/internal/store"
)

// followHost is one worker of TestWorkspaceFollowsTheSession acting as a host of its own: its own
// state directory and workspace root, nothing shared with the others but the Temporal server and
// the PostgreSQL store.
type followHost struct {
	t      *testing.T
	name   string
	root   string
	proc   *drillWorker
	stderr *syncBuffer
}

func newFollowHost(t *testing.T, bin, name string, base []string) *followHost {
	dir := t.TempDir()
	h := &followHost{t: t, name: name, root: filepath.Join(dir, "workspaces"), stderr: &syncBuffer{}}
	h.proc = &drillWorker{t: t, bin: bin, env: append(slices.Clone(base), "KEEL_DEV_STATE_DIR="+filepath.Join(dir, "state"),
		"KEEL_WORKSPACES_ROOT="+h.root), stderr: h.stderr}
	h.proc.start()
	t.Cleanup(h.proc.kill)
	return h
}

// signal sends sig to the worker process.
func (h *followHost) signal(sig syscall.Signal) {
	h.proc.mu.Lock()
	defer h.proc.mu.Unlock()
	if h.proc.cmd != nil && h.proc.cmd.Process != nil {
		_ = h.proc.cmd.Process.Signal(sig)
	}
}

// waitFile waits until a session's workspace on this host holds name.
func (h *followHost) waitFile(ctx context.Context, name string) {
	h.t.Helper()
	for ctx.Err() == nil {
		if m, _ := filepath.Glob(filepath.Join(h.root, "sessions", "*", "work", name)); len(m) > 0 {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	h.t.Fatalf("no workspace on host %s holds %s in time\n%s", h.name, name, h.stderr.String())
}

// TestWorkspaceFollowsTheSession is the multi-host drill of workspaces: a session on a
// repository at commit X runs on host A; A is killed with SIGKILL in the middle of a command
// after turn 3; host B, which never saw the session, finishes it with the workspace as the last
// recorded tool result left it, and the model is told the interrupted command's outcome is
// unknown. `starter fork --turn 2`, served by B, starts from turn 2's files; B is paused with
// SIGSTOP in the middle of the fork's command while host C takes over, and once resumed it
// records nothing. The server then holds the two sessions' branches and nothing else new.
func TestWorkspaceFollowsTheSession(t *testing.T) {
	testenv.Needs(t, "a Temporal dev server")
	testenv.Needs(t, "PostgreSQL")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	srv := gitserver.Start(t, t.TempDir(), "")
	bare, url := srv.Repo(t, "app")
	src := t.TempDir()
	gitserver.Git(t, src, "init", "--quiet", "-b", "main")
	if err := os.WriteFile(filepath.Join(src, "MARKER"), []byte("at commit X\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitserver.Git(t, src, "add", "-A")
	gitserver.Git(t, src, "commit", "--quiet", "-m", "X")
	commitX := gitserver.Git(t, src, "rev-parse", "HEAD")
	gitserver.Git(t, src, "push", "--quiet", bare, "main")

	bin, err := env.Build("./worker")
	if err != nil {
		t.Fatal(err)
	}
	base := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+startGateway(t)+"/v1",
		"KEEL_STORE_BACKEND=postgres", "KEEL_STORE_DSN="+drillDSN(), "KEEL_TEMPORAL_HEARTBEAT_TIMEOUT="+testHeartbeatTimeout.String())
	a := newFollowHost(t, bin, "A", base)

	task := fakegw.CommandsTask("Edit the files.",
		`sh -c "echo one > a.txt"`,
		`sh -c "echo two > b.txt"`,
		`sh -c "echo three >> a.txt"`,
		`sh -c "touch started.txt; sleep 300"`,
		`sh -c "cat a.txt b.txt MARKER; ls"`)
	run := exec.CommandContext(ctx, starter, "run", "--repo", url, "--commit", commitX, "--output", "jsonl", task)
	run.Env = base
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	a.waitFile(ctx, "started.txt")
	a.proc.kill()
	b := newFollowHost(t, bin, "B", base)
	r, err := testenv.Finish(run, &stdout, &stderr)
	if err != nil || r.Code != 0 || r.Summary.Status != contract.StatusCompleted {
		t.Fatalf("run: %v, exit %d, summary %+v\n%s\nhost B:\n%s", err, r.Code, r.Summary, r.Stderr, b.stderr.String())
	}
	id := r.Summary.WorkflowID
	results := toolResults(r.Events)
	if len(results) != 5 {
		t.Fatalf("the session's tool results: %q, want five", results)
	}
	if !strings.Contains(results[3], "outcome is unknown") {
		t.Errorf("the command cut off by the kill was answered %q, want its outcome unknown", results[3])
	}
	if last := results[4]; !strings.Contains(last, "one\nthree\ntwo\nat commit X") || strings.Contains(last, "started.txt") {
		t.Errorf("host B's first command saw %q; want turn 3's files, not the killed command's", last)
	}
	st, err := store.Open(ctx, "postgres", drillDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The model reads the note in the call's result, which the transcript keeps.
	var sum contract.Summary
	if err := env.Client().GetWorkflow(ctx, id, "").Get(ctx, &sum); err != nil || sum.Transcript == nil {
		t.Fatalf("the session's result: %+v, %v", sum, err)
	}
	msgs, err := st.Load(ctx, sum.Transcript.Head)
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, sum.Transcript.Pending...)
	if !anyMessage(msgs, func(m contract.Message) bool {
		return m.Role == contract.RoleTool && strings.HasPrefix(m.Content, activities.RestoredNote(3))
	}) {
		t.Error("the model was not told its workspace was restored as recorded after turn 3")
	}

	// The fork of turn 2 runs on B; B is paused mid-command and C goes on.
	fork := exec.CommandContext(ctx, starter, "fork", id, "--turn", "2", "--output", "jsonl")
	fork.Env = base
	var fout, ferr bytes.Buffer
	fork.Stdout, fork.Stderr = &fout, &ferr
	if err := fork.Start(); err != nil {
		t.Fatal(err)
	}
	b.waitFile(ctx, "started.txt")
	b.signal(syscall.SIGSTOP)
	c := newFollowHost(t, bin, "C", base)
	fr, err := testenv.Finish(fork, &fout, &ferr)
	b.signal(syscall.SIGCONT)
	if err != nil || fr.Code != 0 || fr.Summary.Status != contract.StatusCompleted {
		t.Fatalf("fork: %v, exit %d, summary %+v\n%s\nhost C:\n%s", err, fr.Code, fr.Summary, fr.Stderr, c.stderr.String())
	}
	forkID := fr.Summary.WorkflowID
	fres := toolResults(fr.Events)
	// The fork re-runs commands 3 to 5 from turn 2's files: a.txt held "one" alone then.
	if n := len(fres); n < 3 || !strings.Contains(fres[n-1], "one\nthree\ntwo\nat commit X") || strings.Contains(fres[n-1], "started.txt") {
		t.Errorf("the fork's tool results: %q; want its last command to see turn 2's files plus its own turn 3", fres)
	}
	forkRec, err := st.LatestRecord(ctx, forkID)
	if err != nil {
		t.Fatal(err)
	}
	// The stale worker, resumed, finds its call gone: its record is refused and logged.
	// A minute: its next heartbeat is answered that the call is gone within seconds.
	if !testenv.WaitFor(time.Minute, func() bool { return strings.Contains(b.stderr.String(), "refused to record the session's workspace") }) {
		t.Errorf("host B, resumed, did not log its refused record:\n%s", b.stderr.String())
	}
	if after, err := st.LatestRecord(ctx, forkID); err != nil || after.Seq != forkRec.Seq {
		t.Errorf("the fork's newest record moved after host B resumed: %+v then %+v (%v)", forkRec, after, err)
	}

	// Each session's branch arrived; nothing else was pushed.
	refs := gitserver.Git(t, bare, "for-each-ref", "--format=%(refname)")
	want := []string{"refs/heads/" + contract.BranchName(forkID), "refs/heads/" + contract.BranchName(id), "refs/heads/main"}
	slices.Sort(want)
	if refs != strings.Join(want, "\n") {
		t.Errorf("the server's refs:\n%s\nwant\n%s", refs, strings.Join(want, "\n"))
	}
	for name, files := range map[string]string{contract.BranchName(id): "one\nthree", contract.BranchName(forkID): "one\nthree"} {
		if got := gitserver.Git(t, bare, "show", "refs/heads/"+name+":a.txt"); got != files {
			t.Errorf("a.txt on %s is %q, want %q", name, got, files)
		}
		if out, err := exec.Command("git", "--git-dir", bare, "cat-file", "-e", "refs/heads/"+name+":started.txt").CombinedOutput(); err == nil {
			t.Errorf("%s holds started.txt, which only a cut-off command wrote (%s)", name, out)
		}
	}
}

// toolResults are the texts of a run's tool_result events, in order.
func toolResults(evs []contract.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Event == contract.EventToolResult {
			out = append(out, e.Text)
		}
	}
	return out
}
