package e2e

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"

	"github.com/keelrun/keel/internal/contract"
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
	l := startLiveWith(t, environ, strings.NewReader(task), "run", "--workdir", t.TempDir(), "--task-file", "-", "-o", "jsonl")
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
	if in := startedTask(t, wid); in != task {
		t.Fatalf("the session's task is %q, want the text from standard input", in)
	}

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

// startedTask reads the task a session was started with from its history.
func startedTask(t *testing.T, wid string) string {
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
	return in.Task
}
