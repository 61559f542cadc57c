package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/fakegw"
)

// TestAllowForTheSession: at the terminal's approval prompt, t approves the call and lets every
// later call of its tool run without asking; `starter approve ID --allow-command` approves a
// run_command call and lets later calls of exactly that command run without asking. In both, a
// call the allowance does not cover (another tool, another command) still asks, the call it
// covers says why it ran unasked, and the summary lists the allowance.
func TestAllowForTheSession(t *testing.T) {
	environ := env.StarterEnv(t, "KEEL_TOOLS_APPROVAL=writes", "KEEL_GATEWAY_FAKE=true")
	cases := []struct {
		name string
		// command is what the shell runs; allow answers the first prompt (the first
		// run_command call) given the session's ID.
		command string
		allow   func(t *testing.T, s *tmuxShell, wid string)
		// asksNext is the call that must still ask after the allowance; unasked the one that
		// must then run without asking; summary the summary's line.
		asksNext, unasked, summary string
	}{
		{
			name:    "tool key",
			command: starter + ` demo`,
			allow:   func(t *testing.T, s *tmuxShell, _ string) { s.key("t") },
			// The demo runs go test, writes calc.go, then runs go test again.
			asksNext: "approve write_file",
			unasked:  `run_command {"command":"` + demo.TestCommand + `"}`,
			summary:  "allowed for the session: every run_command call",
		},
		{
			name: "command flag",
			command: func() string {
				task := filepath.Join(t.TempDir(), "task")
				text := fakegw.CommandsTask("Echo three times.", "echo one", "echo two", "echo one")
				if err := os.WriteFile(task, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				return starter + ` run --dev --workdir ` + t.TempDir() + ` "$(cat ` + task + `)"`
			}(),
			allow: func(t *testing.T, _ *tmuxShell, wid string) {
				if out, err := starterIn(environ, "approve", wid, "--allow-command"); err != nil || !strings.Contains(out, "from now on in this session") {
					t.Fatalf("starter approve --allow-command: %v\n%s", err, out)
				}
			},
			asksNext: `approve run_command {"command":"echo two"}`,
			unasked:  `run_command {"command":"echo one"}`,
			summary:  "allowed for the session: run_command of exactly `echo one`",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := startShell(t, environ)
			s.typeLine(c.command + `; echo "exit=$?"`)
			wid := s.sessionStarted(t)
			s.waitText(60*time.Second, "approve run_command")
			c.allow(t, s, wid)
			sc := s.waitText(60*time.Second, c.asksNext)
			if n := strings.Count(sc, "[y]es / [n]o"); n != 2 {
				t.Fatalf("%d approval prompts before the call the allowance does not cover; want 2:\n%s", n, sc)
			}
			s.key("y")
			if code := s.waitExit(2 * time.Minute); code != "0" {
				t.Fatalf("exit %s:\n%s", code, s.screen())
			}
			sc = s.screen()
			if n := strings.Count(sc, "[y]es / [n]o"); n != 2 {
				t.Errorf("%d approval prompts; want 2 (the allowed call, and the one it does not cover):\n%s", n, sc)
			}
			if !strings.Contains(sc, c.unasked+" runs without asking") {
				t.Errorf("no line says %s ran without asking:\n%s", c.unasked, sc)
			}
			if !strings.Contains(sc, c.summary) {
				t.Errorf("the summary lacks %q:\n%s", c.summary, sc)
			}
		})
	}
}
