package e2e

import (
	"context"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/cli"
	"github.com/keelrun/keel/internal/textfmt"
)

// exitLine is what the shell prints after the starter: its exit status.
var exitLine = regexp.MustCompile(`(?m)^exit=(\d+)\s*$`)

// waitExit waits for the shell to print the starter's exit status and returns it.
func (s *tmuxShell) waitExit(timeout time.Duration) string {
	s.t.Helper()
	var m []string
	s.waitScreen(timeout, "exit status", func(sc string) bool { m = exitLine.FindStringSubmatch(sc); return m != nil })
	return m[1]
}

// sessionStarted waits for the starter's "session ... started" line and returns the session's ID;
// the session is terminated when the test ends, since no worker may ever end it.
func (s *tmuxShell) sessionStarted(t *testing.T) string {
	t.Helper()
	started := regexp.MustCompile(`session (\S+) started`)
	var m []string
	s.waitScreen(60*time.Second, "session start", func(sc string) bool { m = started.FindStringSubmatch(sc); return m != nil })
	t.Cleanup(func() { _ = env.Client().TerminateWorkflow(context.Background(), m[1], "", "test cleanup") })
	return m[1]
}

// following waits for the starter's status line ("esc to interrupt"), which it draws only after it
// has put the terminal into raw mode and handles SIGINT and SIGTERM itself. A key or signal sent
// earlier races the start-up: a Ctrl+C before raw mode reaches the starter as a SIGINT, and a
// signal before the starter handles it ends the process.
func (s *tmuxShell) following() {
	s.t.Helper()
	s.waitText(30*time.Second, "esc to interrupt")
}

// TestFirstSignalWaitsBounded: with no worker on the queue, the first Ctrl+C at the terminal or a
// SIGTERM from outside cancels the session, says what the starter waits for, for how long, and that
// a second one leaves now; after cli.CancelWait it exits 130 saying the session may still be
// cancelling and how to check. A SIGTERM is reported as a signal, not as the terminal, and a
// second SIGTERM leaves at once.
func TestFirstSignalWaitsBounded(t *testing.T) {
	bound := cli.CancelWait
	waiting := "waiting up to " + textfmt.Duration(bound)
	cases := []struct {
		name string
		// send interrupts the starter once, or twice for a second signal.
		send   func(s *tmuxShell)
		reason string
		twice  bool
	}{
		{name: "ctrl-c", send: func(s *tmuxShell) { s.key("C-c") }, reason: "cancelling: at the terminal"},
		{name: "sigterm", send: func(s *tmuxShell) { _ = s.foreground().Signal(syscall.SIGTERM) }, reason: "cancelling: terminated by a signal (SIGTERM)"},
		{name: "second sigterm", send: func(s *tmuxShell) { _ = s.foreground().Signal(syscall.SIGTERM) }, reason: "cancelling: terminated by a signal (SIGTERM)", twice: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startShell(t, env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true"))
			s.typeLine(starter + ` run --workdir "$(mktemp -d)" "say hi"; echo "exit=$?"`)
			wid := s.sessionStarted(t)
			s.following()
			tc.send(s)
			sent := time.Now()
			sc := s.waitText(10*time.Second, tc.reason)
			if strings.Contains(sc, "interrupted at the terminal") {
				t.Errorf("the interrupt was reported as the terminal's:\n%s", sc)
			}
			s.waitText(5*time.Second, waiting)
			s.waitText(5*time.Second, "leaves now")
			if tc.twice {
				tc.send(s)
				if code := s.waitExit(5 * time.Second); code != "130" {
					t.Fatalf("exit %s after the second signal, want 130:\n%s", code, s.screen())
				}
				if took := time.Since(sent); took >= bound {
					t.Fatalf("the second signal took %s to leave, the whole bound of %s", took, bound)
				}
				s.waitText(5*time.Second, "starter watch "+wid)
				return
			}
			code := s.waitExit(bound + 20*time.Second)
			took := time.Since(sent)
			if code != "130" {
				t.Fatalf("exit %s, want 130:\n%s", code, s.screen())
			}
			if took < bound-time.Second {
				t.Fatalf("left after %s, before the bound of %s", took, bound)
			}
			sc = s.waitText(5*time.Second, "may still be cancelling")
			if !strings.Contains(sc, "starter watch "+wid) {
				t.Fatalf("the exit does not say how to check the session:\n%s", sc)
			}
		})
	}
}

// TestSecondEscStaysOut: Esc cancels a demo whose in-process worker ends the session at once, and a
// second Esc 0.2 s later, which may arrive after the session ended, is read and dropped by the
// starter: the next command typed at the shell runs intact.
func TestSecondEscStaysOut(t *testing.T) {
	s := startShell(t, env.StarterEnv(t, "KEEL_TOOLS_APPROVAL=writes"))
	s.typeLine(starter + ` demo --inject long_command; echo "exit=$?"`)
	s.waitText(60*time.Second, "[y]es / [n]o")
	// Esc at the approval prompt denies the call; approve it, and cancel while it runs.
	s.key("y")
	s.waitText(30*time.Second, "→ run_command")
	s.key("Escape")
	// The person's second press, as people press it: a fixed moment later, not on a condition.
	time.Sleep(200 * time.Millisecond)
	s.key("Escape")
	if code := s.waitExit(30 * time.Second); code != "130" {
		t.Fatalf("exit %s, want 130:\n%s", code, s.screen())
	}
	s.waitScreen(10*time.Second, "the prompt after the starter", func(sc string) bool {
		i := exitLine.FindStringIndex(sc)
		return i != nil && strings.Contains(sc[i[1]:], shellPrompt)
	})
	s.typeLine("echo abc-two")
	sc := s.waitScreen(10*time.Second, "the echoed line", func(sc string) bool {
		return regexp.MustCompile(`(?m)^abc-two\s*$`).MatchString(sc) || strings.Contains(sc, "command not found")
	})
	if strings.Contains(sc, "command not found") || !strings.Contains(sc, shellPrompt+"echo abc-two") {
		t.Fatalf("the typed command did not reach the shell intact:\n%s", sc)
	}
}
