package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tui"
)

// sessionStatus is a workflow's execution status as the server reports it.
func sessionStatus(t *testing.T, wid string) enumspb.WorkflowExecutionStatus {
	t.Helper()
	d, err := env.Client().DescribeWorkflow(context.Background(), wid, "")
	if err != nil {
		t.Fatalf("describing %s: %v", wid, err)
	}
	return d.RawResponse.GetWorkflowExecutionInfo().GetStatus()
}

// TestWatchDetaches: `starter watch` in a terminal is a viewer of a session another starter
// started. Esc, Ctrl+C and q at its terminal, and SIGTERM and SIGHUP sent to it, each end the
// watch with exit 0, say the session goes on, and leave it running; x asks before it cancels, n
// goes back, and x then y cancels the session.
func TestWatchDetaches(t *testing.T) {
	environ := env.StarterEnv(t, "KEEL_TOOLS_APPROVAL=writes")
	origin := startLiveEnv(t, environ, "demo", "--inject", "long_command", "-o", "jsonl")
	wid := origin.workflowID()
	// The session waits for the approval of its first command until someone decides it: it runs
	// as long as the test needs.
	origin.waitEvent(60*time.Second, "approval request", func(e contract.Event) bool { return e.Event == contract.EventApproval })

	watch := func(t *testing.T) *tmuxShell {
		s := startShell(t, environ)
		s.typeLine(starter + " watch " + wid + `; echo "exit=$?"`)
		s.waitText(30*time.Second, tui.WatchHelp)
		return s
	}
	cases := []struct {
		name string
		send func(s *tmuxShell)
		what string
	}{
		{"esc", func(s *tmuxShell) { s.key("Escape") }, "detached (Esc)"},
		{"ctrl-c", func(s *tmuxShell) { s.key("C-c") }, "detached (Ctrl+C)"},
		{"q", func(s *tmuxShell) { s.key("q") }, "detached (q)"},
		{"sigterm", func(s *tmuxShell) { _ = s.foreground().Signal(syscall.SIGTERM) }, "detached (terminated by a signal (SIGTERM))"},
		{"sighup", func(s *tmuxShell) { _ = s.foreground().Signal(syscall.SIGHUP) }, "detached (the terminal hung up (SIGHUP))"},
	}
	t.Run("clock", func(t *testing.T) {
		// The session's clock counts from its start: attach when it is 12 s old at least, so a clock
		// that counts from attaching shows less.
		d, err := env.Client().DescribeWorkflow(t.Context(), wid, "")
		if err != nil {
			t.Fatal(err)
		}
		started := d.RawResponse.GetWorkflowExecutionInfo().GetStartTime().AsTime()
		waitFor(60*time.Second, func() bool { return time.Since(started) >= 12*time.Second })
		s := watch(t)
		clock := regexp.MustCompile(`· session (\d{2,}s|\d+m \d\ds) · .*esc detaches`)
		s.waitScreen(10*time.Second, "a status line with the session's age", func(sc string) bool { return clock.MatchString(sc) })
		s.key("q")
		if code := s.waitExit(20 * time.Second); code != "0" {
			t.Fatalf("exit %s, want 0:\n%s", code, s.screen())
		}
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := watch(t)
			tc.send(s)
			if code := s.waitExit(20 * time.Second); code != "0" {
				t.Fatalf("exit %s, want 0:\n%s", code, s.screen())
			}
			sc := s.waitText(5*time.Second, tc.what)
			if !strings.Contains(sc, "session "+wid+" goes on") || strings.Contains(sc, "cancelling") {
				t.Fatalf("the watcher did not say the session goes on, or cancelled it:\n%s", sc)
			}
			if st := sessionStatus(t, wid); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				t.Fatalf("the session is %s after the watcher left, want running", st)
			}
		})
	}
	t.Run("order", func(t *testing.T) {
		// Approve the first call; once the session asks for the next one, a watcher shows the
		// decision where it happened: before the approved command's result, not after the whole
		// transcript.
		if out, err := starterIn(environ, "approve", wid); err != nil {
			t.Fatalf("approve: %v\n%s", err, out)
		}
		first := origin.waitEvent(60*time.Second, "the first approval", func(e contract.Event) bool { return e.Event == contract.EventApproval })
		origin.waitEvent(90*time.Second, "the next approval", func(e contract.Event) bool { return e.Event == contract.EventApproval && e.Seq > first.Seq })
		s := watch(t)
		sc := s.screen()
		decided, result := strings.Index(sc, "• answer: run_command approved by"), strings.Index(sc, "[run_command result]")
		if decided < 0 || result < 0 || decided > result {
			t.Fatalf("the approval's decision (at %d) does not come before the command's result (at %d):\n%s", decided, result, sc)
		}
		s.key("q")
		if code := s.waitExit(20 * time.Second); code != "0" {
			t.Fatalf("exit %s, want 0:\n%s", code, s.screen())
		}
	})
	t.Run("x cancels after y", func(t *testing.T) {
		s := watch(t)
		s.key("x")
		s.waitText(10*time.Second, tui.CancelConfirmText)
		s.key("n")
		s.waitText(10*time.Second, tui.NotCancelled)
		if st := sessionStatus(t, wid); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Fatalf("the session is %s after x then n, want running", st)
		}
		s.key("x")
		s.waitScreen(10*time.Second, "the second question", func(sc string) bool { return strings.Count(sc, tui.CancelConfirmText) == 2 })
		s.key("y")
		if code := s.waitExit(30 * time.Second); code != "130" {
			t.Fatalf("exit %s after x then y, want 130 (cancelled):\n%s", code, s.screen())
		}
		s.waitText(5*time.Second, tui.WatchCancelReason)
		if r := origin.finish(); r.Summary.Status != contract.StatusCancelled {
			t.Fatalf("the session ended %q, want cancelled:\n%s", r.Summary.Status, r.Stdout)
		}
	})
}

// TestEscDeniesApproval: Esc at the approval prompt of the starter's own session denies the call
// and the session goes on (no cancel); Ctrl+C still cancels it.
func TestEscDeniesApproval(t *testing.T) {
	r := startTTY(t, env.StarterEnv(t, "KEEL_TOOLS_APPROVAL=writes"), "demo", "--inject", "long_command")
	r.waitSeen(t, 60*time.Second, "[y]es / [n]o")
	r.master.Write([]byte{0x1b})
	r.waitSeen(t, 30*time.Second, "run_command denied by")
	if r.seen("cancelling") || r.cmd.ProcessState != nil {
		t.Fatalf("Esc at the approval prompt cancelled the session:\n%s", r.text())
	}
	r.master.Write([]byte{0x03})
	if code := r.exit(t, 60*time.Second); code != 130 {
		t.Fatalf("exit %d after Ctrl+C, want 130:\n%s", code, r.text())
	}
	if !r.canonical(t) {
		t.Fatal("the terminal was left in raw mode")
	}
}

// TestContinueFinishedSession: `starter continue` goes on from a finished demo's end in a new
// session: the whole transcript carried (its turns counted on), the same work directory, and at
// least one more turn for the next instruction.
func TestContinueFinishedSession(t *testing.T) {
	environ := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true")
	demo := startLiveEnv(t, environ, "demo", "-o", "jsonl").finish()
	if demo.Code != 0 {
		t.Fatalf("the demo exited %d:\n%s", demo.Code, demo.Stderr)
	}
	wid, ws := demo.Summary.WorkflowID, demo.Workspace()
	r := startLiveEnv(t, environ, "continue", "--dev", wid[strings.LastIndexByte(wid, '-')+1:], "now say that you are done", "-o", "jsonl").finish()
	want := fmt.Sprintf("continuing %s after its turn %d as ", wid, demo.Summary.Turns)
	if !strings.Contains(r.Stdout, want) || !strings.Contains(r.Stdout, "in "+ws) {
		t.Fatalf("continue does not say it goes on from turn %d of %s in %s:\n%s\n%s", demo.Summary.Turns, wid, ws, r.Stdout, r.Stderr)
	}
	if r.Summary.Turns <= demo.Summary.Turns {
		t.Fatalf("the continued session ended after %d turns, want more than the %d it carried: %+v\n%s", r.Summary.Turns, demo.Summary.Turns, r.Summary, r.Stderr)
	}
	t.Logf("continued: %s after %d turns (%s)", r.Summary.Status, r.Summary.Turns, r.Summary.Reason)
}
