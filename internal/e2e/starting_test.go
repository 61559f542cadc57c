package e2e

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/devserver"
)

// startLiveWith is startLiveEnv with standard input.
func startLiveWith(t *testing.T, environ []string, stdin io.Reader, args ...string) *liveRun {
	t.Helper()
	return startLiveCmd(t, environ, func(cmd *exec.Cmd) { cmd.Stdin = stdin }, args...)
}

// TestRunWithoutWorker: `starter run` whose task queue no worker polls says so soon after the
// start, naming the queue and the ways out; the first Ctrl+C asks the session to cancel and a
// second one leaves at once with exit 130. The task came from standard input (--task-file -).
func TestRunWithoutWorker(t *testing.T) {
	environ := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true")
	queue := envValue(environ, "KEEL_TEMPORAL_TASK_QUEUE")
	task := "a task read from standard input\nwith a second line"
	// The work directory lives on the workers only (as a deployment's shared volume does).
	const remote = "/keel-e2e-workspace-on-the-workers"
	l := startLiveWith(t, environ, strings.NewReader(task), "run", "--workdir", remote, "--task-file", "-", "-o", "jsonl")
	wid := l.workflowID()
	t.Cleanup(func() { _ = env.Client().TerminateWorkflow(context.Background(), wid, "", "test cleanup") })
	started := time.Now()
	warn := l.waitEvent(30*time.Second, "no-worker warning", func(e contract.Event) bool {
		return e.Event == contract.EventNotice && strings.Contains(e.Text, "no worker polls")
	})
	t.Logf("warned %s after the start: %s", time.Since(started).Round(100*time.Millisecond), warn.Text)
	for _, want := range []string{queue, "go run ./worker", "--dev"} {
		if !strings.Contains(warn.Text, want) {
			t.Fatalf("the warning does not name %q: %s", want, warn.Text)
		}
	}
	if in := startedInputOf(t, wid); in.Task != task || in.Workdir != remote {
		t.Fatalf("the session started with task %q in %q, want the text from standard input in %s", in.Task, in.Workdir, remote)
	}
	l.waitEvent(30*time.Second, "work directory notice", func(e contract.Event) bool {
		return e.Event == contract.EventNotice && strings.Contains(e.Text, remote) && strings.Contains(e.Text, "on the workers")
	})

	if err := l.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	l.waitEvent(30*time.Second, "cancelling notice", func(e contract.Event) bool {
		return e.Event == contract.EventNotice && strings.HasPrefix(e.Text, "cancelling")
	})
	if err := l.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = l.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the starter ignored the second Ctrl+C")
	}
	if code := l.cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d after the second Ctrl+C, want 130\n%s", code, l.stderr.String())
	}
}

// TestRunRefusesEmptyTask: an empty or blank task is a usage error (exit 2) naming the problem,
// and no session starts.
func TestRunRefusesEmptyTask(t *testing.T) {
	for _, args := range [][]string{{"run", ""}, {"run", "  \n\t"}, {"run"}} {
		cmd := exec.Command(starter, args...)
		cmd.Env = env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true")
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !(strings.Contains(string(out), "empty") || strings.Contains(string(out), "no task")) {
			t.Fatalf("starter %q: %v, want exit 2 naming the empty task\n%s", args, err, out)
		}
	}
}

// startedInputOf reads the input a session was started with from its history.
func startedInputOf(t *testing.T, wid string) contract.SessionInput {
	t.Helper()
	var in contract.SessionInput
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	it := env.Client().GetWorkflowHistory(ctx, wid, "", false, 0)
	ev, err := it.Next()
	if err != nil {
		t.Fatal(err)
	}
	if err := converter.GetDefaultDataConverter().FromPayloads(ev.GetWorkflowExecutionStartedEventAttributes().GetInput(), &in); err != nil {
		t.Fatal(err)
	}
	return in
}

// TestInterruptProcessGroup: `kill -INT -- -PGID` on `starter demo` that started its own dev
// server (what a shell's Ctrl+C, `timeout -s INT` or a supervisor does) reaches the starter only:
// the cancel reaches the session through the server, the running command is gone, the starter
// exits 130 with a cancelled summary, and then stops the server it started.
func TestInterruptProcessGroup(t *testing.T) {
	addr := freeAddr(t)
	_, uiPort, _ := net.SplitHostPort(freeAddr(t))
	environ := env.StarterEnv(t, "KEEL_TEMPORAL_ADDRESS="+addr, "KEEL_DEV_UI_PORT="+uiPort)
	l := startLiveCmd(t, environ, func(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} },
		"demo", "--inject", "long_command", "-o", "jsonl")
	ws := strings.TrimPrefix(l.waitEvent(3*time.Minute, "workspace", func(e contract.Event) bool {
		return strings.HasPrefix(e.Text, "workspace: ")
	}).Text, "workspace: ")
	if !waitFor(60*time.Second, func() bool { return len(processesIn(ws, "sleep", "15")) == 1 }) {
		t.Fatal("the sleep command never ran")
	}
	if err := syscall.Kill(-l.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r := l.finish()
	if r.Code != 130 || r.Summary.Status != contract.StatusCancelled {
		t.Fatalf("exit %d, summary %+v; want 130 and cancelled\nstderr: %s", r.Code, r.Summary, r.Stderr)
	}
	if n := len(processesIn(ws, "sleep", "15")); n != 0 {
		t.Fatalf("sleep 15 outlived the cancel")
	}
	if !waitFor(10*time.Second, func() bool { return !devserver.Answering(addr) }) {
		t.Fatalf("the dev server the starter started still answers on %s after the starter exited", addr)
	}
}
