package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tui"
)

// TestDenyWithAReason: n at the approval prompt asks why, and the line typed reaches the model
// with the denial: the session's transcript holds the call's result saying what the person said.
func TestDenyWithAReason(t *testing.T) {
	environ := env.StarterEnv(t, "KEEL_TOOLS_APPROVAL=writes")
	s := startShell(t, environ)
	s.typeLine(starter + ` demo --inject long_command; echo "exit=$?"`)
	wid := s.sessionStarted(t)
	s.waitText(60*time.Second, "[y]es / [n]o")
	s.key("n")
	s.waitText(10*time.Second, tui.ReasonPrompt)
	const reason = "the tests live in ./calc, run only those"
	s.typeLine(reason)
	s.waitText(30*time.Second, "run_command denied")
	// The session goes on; end it from here.
	s.key("C-c")
	if code := s.waitExit(60 * time.Second); code != "130" && code != "0" {
		t.Fatalf("exit %s after Ctrl+C:\n%s", code, s.screen())
	}
	r := runIn(t, environ, "watch", wid, "-o", "jsonl")
	for _, e := range r.Events {
		if e.Event == contract.EventMessage && e.Class == contract.RoleTool && strings.Contains(e.Text, "said: "+reason) {
			return
		}
	}
	t.Fatalf("no tool result in the transcript carries the reason %q:\n%s", reason, r.Stdout)
}
