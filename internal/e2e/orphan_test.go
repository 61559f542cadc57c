package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
)

// demoID finds a demo session's ID in what the starter printed.
var demoID = regexp.MustCompile(`keel-demo-\d{8}-\d{6}-[0-9a-f]{6}`)

// waitClosed fails the test unless the session is no longer running within timeout; it returns
// how it ended.
func waitClosed(t *testing.T, wid string, timeout time.Duration) enumspb.WorkflowExecutionStatus {
	t.Helper()
	var st enumspb.WorkflowExecutionStatus
	if !waitFor(timeout, func() bool { st = sessionStatus(t, wid); return st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING }) {
		t.Fatalf("session %s is still running %s after its starter left", wid, timeout)
	}
	return st
}

// TestPipeKeepsLineMode: with standard input a terminal and standard output a pipe (starter demo
// | tee log), the starter never takes the terminal out of line mode: raw mode would turn off the
// terminal's newline translation for the pipe's reader too, and its lines would staircase.
func TestPipeKeepsLineMode(t *testing.T) {
	master, slave := openPTY(t)
	_ = master
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(starter, "demo")
	cmd.Env = env.StarterEnv(t)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, w, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	tty := &ttyRun{slave: slave}
	var mu sync.Mutex
	var out strings.Builder
	rawSeen := false
	lines := bufio.NewScanner(r)
	for lines.Scan() {
		mu.Lock()
		out.WriteString(lines.Text() + "\n")
		mu.Unlock()
		// After every line the starter printed, while it follows the session.
		if !tty.canonical(t) {
			rawSeen = true
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the demo failed: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "→ ") {
		t.Fatalf("the demo printed no tool call:\n%s", out.String())
	}
	// The demo's first go test fails: marked ✗, with its last lines, where FAIL is.
	text := out.String()
	if at := strings.Index(text, "  ✗ The command finished with exit status 1"); at < 0 || strings.Contains(text, "✓ The command finished with exit status 1") ||
		!strings.Contains(text[at:], "\n    FAIL") {
		t.Errorf("the failing go test is not marked ✗ with its last lines:\n%s", text)
	}
	// The fix of calc.go shows as a diff under its write: a line removed, a line added.
	if !strings.Contains(out.String(), "\n    - ") || !strings.Contains(out.String(), "\n    + ") {
		t.Errorf("the write of the fix shows no diff:\n%s", out.String())
	}
	if rawSeen {
		t.Fatalf("the starter put the terminal in raw mode although its output went to a pipe:\n%s", out.String())
	}
}

// TestStarterGoneEndsSession: a demo starter whose output's reader goes away (| head -3, SIGPIPE)
// or whose terminal hangs up (SIGHUP) does not die where it stands, leaving a session only its
// own worker could end: the session ends.
func TestStarterGoneEndsSession(t *testing.T) {
	t.Run("pipe", func(t *testing.T) {
		t.Parallel()
		sh := exec.Command("bash", "-c", `"$0" demo --inject long_command | head -3`, starter)
		sh.Env = env.StarterEnv(t)
		out, err := sh.CombinedOutput()
		if err != nil {
			t.Fatalf("the pipeline failed: %v\n%s", err, out)
		}
		wid := demoID.FindString(string(out))
		if wid == "" {
			t.Fatalf("no session ID in the first lines:\n%s", out)
		}
		t.Cleanup(func() { _ = env.Client().TerminateWorkflow(t.Context(), wid, "", "test cleanup") })
		waitClosed(t, wid, 30*time.Second)
	})
	t.Run("hangup", func(t *testing.T) {
		t.Parallel()
		l := startLive(t, nil, "demo", "--inject", "long_command", "-o", "jsonl")
		wid := l.workflowID()
		t.Cleanup(func() { _ = env.Client().TerminateWorkflow(t.Context(), wid, "", "test cleanup") })
		l.waitEvent(60*time.Second, "the long command", func(e contract.Event) bool { return e.Event == contract.EventToolCall })
		if err := l.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		r := l.finish()
		if r.Code != 130 {
			t.Errorf("exit %d after SIGHUP, want 130 (cancelled):\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		waitClosed(t, wid, 30*time.Second)
	})
}

// TestCancelEndsUntakenSession: `starter cancel` ends a session no worker took, and says so:
// one no worker ever started is terminated at once; one whose worker died is terminated when no
// worker takes the cancel within the bound. A cancel signal alone would wait for a worker forever.
func TestCancelEndsUntakenSession(t *testing.T) {
	t.Run("never taken", func(t *testing.T) {
		t.Parallel()
		environ := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true")
		l := startLiveEnv(t, environ, "run", "--workdir", t.TempDir(), "-o", "jsonl", "say hi")
		wid := l.workflowID()
		t.Cleanup(func() { _ = env.Client().TerminateWorkflow(t.Context(), wid, "", "test cleanup") })
		// The short ID is enough: the last part of the session's ID.
		short := wid[strings.LastIndexByte(wid, '-')+1:]
		out, err := starterIn(environ, "cancel", short)
		if err != nil {
			t.Fatalf("cancel %s: %v\n%s", short, err, out)
		}
		if !strings.Contains(out, "never taken by a worker") || !strings.Contains(out, "terminated it") {
			t.Errorf("cancel does not say what happened:\n%s", out)
		}
		if st := waitClosed(t, wid, 5*time.Second); st != enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED {
			t.Errorf("the session ended %s, want terminated", st)
		}
	})
	t.Run("worker gone", func(t *testing.T) {
		t.Parallel()
		environ := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true")
		// run --approval writes: the session waits for the approval of its first command.
		l := startLiveEnv(t, environ, "run", "--dev", "--approval", "writes", "--workdir", t.TempDir(), "-o", "jsonl", fakegw.WithMode("fix the test", fakegw.ModeLongCommand))
		wid := l.workflowID()
		t.Cleanup(func() { _ = env.Client().TerminateWorkflow(t.Context(), wid, "", "test cleanup") })
		l.waitEvent(60*time.Second, "approval request", func(e contract.Event) bool { return e.Event == contract.EventApproval })
		// The starter and the only worker of the session's queue die at once.
		_ = l.cmd.Process.Kill()
		_ = l.cmd.Wait()
		start := time.Now()
		out, err := starterIn(environ, "cancel", wid)
		if err != nil {
			t.Fatalf("cancel: %v\n%s", err, out)
		}
		if !strings.Contains(out, "no worker took the cancel") || !strings.Contains(out, "terminated it") {
			t.Errorf("cancel does not say what happened:\n%s", out)
		}
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("cancel took %s", took)
		}
		if st := waitClosed(t, wid, 5*time.Second); st != enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED {
			t.Errorf("the session ended %s, want terminated", st)
		}
	})
}

// TestPlainRunNeedsNoKey: the model's key is the workers' setting, so a plain `run` (no --dev)
// with no gateway.api_key starts its session rather than refusing to.
func TestPlainRunNeedsNoKey(t *testing.T) {
	var environ []string
	for _, kv := range env.StarterEnv(t) {
		if !strings.HasPrefix(kv, "KEEL_GATEWAY_API_KEY=") && !strings.HasPrefix(kv, "KEEL_GATEWAY_FAKE=") {
			environ = append(environ, kv)
		}
	}
	l := startLiveEnv(t, environ, "run", "--workdir", t.TempDir(), "-o", "jsonl", "say hi")
	wid := l.workflowID()
	t.Cleanup(func() { _ = env.Client().TerminateWorkflow(t.Context(), wid, "", "test cleanup") })
	if st := sessionStatus(t, wid); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("the session is %s, want running (waiting for a worker)", st)
	}
}
