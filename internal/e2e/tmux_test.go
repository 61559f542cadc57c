package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tmuxShell is an interactive bash in a tmux pane of its own tmux server: the test types into it
// the way a person types at a terminal, and reads the screen back, scrollback included.
type tmuxShell struct {
	t      *testing.T
	socket string
}

// shellPrompt is the prompt of the test's shell, so a test can tell when a command has returned.
const shellPrompt = "keel-test$ "

// startShell starts bash in a detached tmux session of 160 by 50 with environ. TestMain has
// installed tmux where it was missing; without it the test fails.
func startShell(t *testing.T, environ []string) *tmuxShell {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("the terminal tests drive a shell through tmux, which is not installed (apt-get install -y tmux): %v", err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g history-limit 10000\nset -g status off\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &tmuxShell{t: t, socket: filepath.Join(dir, "tmux.sock")}
	environ = append(append([]string(nil), environ...), "PS1="+shellPrompt, "TERM=xterm-256color", "HISTFILE=/dev/null")
	cmd := exec.Command("tmux", "-S", s.socket, "-f", conf, "new-session", "-d", "-x", "160", "-y", "50",
		"bash", "--norc", "--noprofile", "-i")
	cmd.Env = environ
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("starting tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", s.socket, "kill-server").Run() })
	s.waitScreen(10*time.Second, "the shell's prompt", func(sc string) bool { return strings.Contains(sc, shellPrompt) })
	return s
}

// tmux runs one tmux command against this shell's server.
func (s *tmuxShell) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// typeLine types text and Enter.
func (s *tmuxShell) typeLine(text string) {
	s.t.Helper()
	s.tmux("send-keys", "-l", text)
	s.tmux("send-keys", "Enter")
}

// key presses one named key (Escape, C-c, ...).
func (s *tmuxShell) key(name string) {
	s.t.Helper()
	s.tmux("send-keys", name)
}

// screen is the pane's text, scrollback included, one row a line.
func (s *tmuxShell) screen() string {
	s.t.Helper()
	return s.tmux("capture-pane", "-p", "-J", "-S", "-10000")
}

// waitScreen fails the test unless the screen satisfies cond within timeout; it returns the screen.
func (s *tmuxShell) waitScreen(timeout time.Duration, what string, cond func(string) bool) string {
	s.t.Helper()
	var sc string
	if !waitFor(timeout, func() bool { sc = s.screen(); return cond(sc) }) {
		s.t.Fatalf("no %s within %s; the screen:\n%s", what, timeout, sc)
	}
	return sc
}

// waitText waits until text shows on the screen.
func (s *tmuxShell) waitText(timeout time.Duration, text string) string {
	s.t.Helper()
	return s.waitScreen(timeout, strconv.Quote(text), func(sc string) bool { return strings.Contains(sc, text) })
}

// foreground is the process the shell runs in the foreground now: the shell's newest child.
func (s *tmuxShell) foreground() *os.Process {
	s.t.Helper()
	shell := strings.TrimSpace(s.tmux("display-message", "-p", "#{pane_pid}"))
	var child int
	if !waitFor(10*time.Second, func() bool { child = childOf(shell); return child != 0 }) {
		s.t.Fatalf("the shell %s runs no command", shell)
	}
	p, err := os.FindProcess(child)
	if err != nil {
		s.t.Fatal(err)
	}
	return p
}

// childOf is the newest child process of pid, or 0: read from /proc, whose stat line has the
// parent's ID in its fourth field.
func childOf(pid string) int {
	entries, _ := os.ReadDir("/proc")
	newest := 0
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name (second field) is in parentheses and may hold spaces.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		if f := strings.Fields(rest); len(f) > 2 && f[1] == pid && n > newest {
			newest = n
		}
	}
	return newest
}
