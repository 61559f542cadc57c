package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: the test holds the master, the starter gets the slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var unlock int32
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, m.Fd(), unix.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlocking the pty: %v", e)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// ttyRun is a starter whose standard input and output are a terminal.
type ttyRun struct {
	cmd    *exec.Cmd
	master *os.File
	slave  *os.File
	mu     sync.Mutex
	screen bytes.Buffer
}

func startTTY(t *testing.T, environ []string, args ...string) *ttyRun {
	t.Helper()
	m, s := openPTY(t)
	r := &ttyRun{cmd: exec.Command(starter, args...), master: m, slave: s}
	r.cmd.Env = environ
	r.cmd.Stdin, r.cmd.Stdout, r.cmd.Stderr = s, s, s
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			r.mu.Lock()
			r.screen.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { _ = r.cmd.Process.Kill() })
	return r
}

func (r *ttyRun) seen(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Contains(r.screen.String(), s)
}

func (r *ttyRun) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.screen.String()
}

// canonical reports whether the terminal is back in normal line mode with echo and signal keys.
func (r *ttyRun) canonical(t *testing.T) bool {
	tio, err := unix.IoctlGetTermios(int(r.slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return tio.Lflag&unix.ICANON != 0 && tio.Lflag&unix.ECHO != 0 && tio.Lflag&unix.ISIG != 0
}

// TestTerminalKeys runs the starter on a real terminal: a lone "c" and an Alt combination do not
// cancel, "y" approves the waiting call, Esc cancels (exit 130), and the terminal is restored.
func TestTerminalKeys(t *testing.T) {
	r := startTTY(t, env.StarterEnv(t, "KEEL_TOOLS_APPROVAL=writes"), "demo", "--inject", "long_command")
	if !waitFor(60*time.Second, func() bool { return r.seen("[y]es / [n]o") }) {
		t.Fatalf("no approval prompt:\n%s", r.text())
	}
	if r.canonical(t) {
		t.Fatal("the starter did not take the terminal out of line mode while following")
	}
	r.master.Write([]byte("c"))
	r.master.Write([]byte{0x1b, 'c'})
	r.master.Write([]byte("y"))
	if !waitFor(20*time.Second, func() bool { return r.seen("run_command approved") }) {
		t.Fatalf("the y key did not approve:\n%s", r.text())
	}
	if !waitFor(20*time.Second, func() bool { return r.seen("→ run_command") }) {
		t.Fatalf("the approved command never started:\n%s", r.text())
	}
	if r.cmd.ProcessState != nil {
		t.Fatal("the starter exited on c or Alt+c")
	}
	r.master.Write([]byte{0x1b})
	err := r.cmd.Wait()
	if code := r.cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d (%v), want 130:\n%s", code, err, r.text())
	}
	if !r.canonical(t) {
		t.Fatal("the terminal was left in raw mode")
	}
}

// TestTerminalEscalationPrompt: at a terminal, an escalation asks [R]etry, [E]dit, [A]bort? and the
// a key aborts the session.
func TestTerminalEscalationPrompt(t *testing.T) {
	r := startTTY(t, env.StarterEnv(t), "demo", "--inject", "bad_args")
	if !waitFor(60*time.Second, func() bool { return r.seen("[R]etry, [E]dit, [A]bort?") }) {
		t.Fatalf("no escalation prompt:\n%s", r.text())
	}
	r.master.Write([]byte("a"))
	_ = r.cmd.Wait()
	if code := r.cmd.ProcessState.ExitCode(); code != 1 || !r.seen("aborted") {
		t.Fatalf("exit %d, want 1 and an aborted session:\n%s", code, r.text())
	}
	if !r.canonical(t) {
		t.Fatal("the terminal was left in raw mode")
	}
}
