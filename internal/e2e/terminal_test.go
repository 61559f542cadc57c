package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
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
	// A wide window, so the status line is not clipped to the default 80 columns.
	if err := unix.IoctlSetWinsize(int(m.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: 160}); err != nil {
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

// typeText writes text to the terminal a few keys at a time, as a person typing fast would.
func (r *ttyRun) typeText(t *testing.T, text string) {
	t.Helper()
	for len(text) > 0 {
		n := min(3, len(text))
		if _, err := r.master.Write([]byte(text[:n])); err != nil {
			t.Fatal(err)
		}
		text = text[n:]
	}
}

// waitSeen fails the test unless s appears on the terminal within timeout.
func (r *ttyRun) waitSeen(t *testing.T, timeout time.Duration, s string) {
	t.Helper()
	if !waitFor(timeout, func() bool { return r.seen(s) }) {
		t.Fatalf("%q never appeared:\n%s", s, r.text())
	}
}

// exit waits for the starter to end and returns its exit status.
func (r *ttyRun) exit(t *testing.T, timeout time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case <-done:
		return r.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("the starter did not exit within %s:\n%s", timeout, r.text())
		return -1
	}
}

// TestTerminalEscalationPrompt: at a terminal, an escalation is printed once and asks [R]etry,
// [E]dit, [A]bort?; the model's messages and the blocked calls print in order, each on a line of
// its own; a asks for confirmation, n keeps the session, a then y aborts it, and the terminal is
// back in line mode.
func TestTerminalEscalationPrompt(t *testing.T) {
	r := startTTY(t, env.StarterEnv(t), "demo", "--inject", "bad_args")
	r.waitSeen(t, 60*time.Second, "[R]etry, [E]dit, [A]bort?")
	screen := r.text()
	if n := strings.Count(screen, "needs a person"); n != 1 {
		t.Errorf("the escalation was printed %d times, want once:\n%s", n, screen)
	}
	if strings.Contains(screen, ".I will try") {
		t.Errorf("consecutive model messages ran together:\n%s", screen)
	}
	last := -1
	for _, tool := range []string{"list_dir", "read_file", "search", "run_command"} {
		said := strings.Index(screen, "I will try "+tool+".")
		blocked := strings.Index(screen, "• blocked: The call to "+tool)
		if said < 0 || blocked < said || said < last {
			t.Errorf("%s: want the model's message, then its blocked call, after the previous tool's (positions %d, %d, previous %d):\n%s", tool, said, blocked, last, screen)
		}
		last = blocked
	}
	if esc := strings.Index(screen, "needs a person"); esc < last {
		t.Errorf("the escalation printed before the last blocked call:\n%s", screen)
	}

	r.master.Write([]byte("a"))
	r.waitSeen(t, 10*time.Second, "abort the session?")
	r.master.Write([]byte("n"))
	r.waitSeen(t, 10*time.Second, "not aborted")
	if r.cmd.ProcessState != nil || r.seen("aborted by") {
		t.Fatalf("the session ended on a without confirmation:\n%s", r.text())
	}
	r.master.Write([]byte("a"))
	if !waitFor(10*time.Second, func() bool { return strings.Count(r.text(), "abort the session?") == 2 }) {
		t.Fatalf("a did not ask again:\n%s", r.text())
	}
	r.master.Write([]byte("y"))
	if code := r.exit(t, 60*time.Second); code != 1 {
		t.Fatalf("exit %d, want 1 (aborted):\n%s", code, r.text())
	}
	// The last output may still be on its way from the pseudo-terminal after the exit.
	r.waitSeen(t, 10*time.Second, "aborted")
	if !r.canonical(t) {
		t.Fatal("the terminal was left in raw mode")
	}
}

// TestTerminalEdit: Esc drops an edit and asks again; the Edit answer echoes what is typed, takes
// backspace, sends the whole line on Enter (the session records it), and none of the typed
// letters act as hot keys. The answer prints
// before the next turn's text, and the session then completes.
func TestTerminalEdit(t *testing.T) {
	r := startTTY(t, env.StarterEnv(t), "demo", "--inject", "bad_args")
	r.waitSeen(t, 60*time.Second, "[R]etry, [E]dit, [A]bort?")
	// Esc drops an edit: nothing is sent, the next line starts on a row of its own, and the
	// question is asked again.
	r.master.Write([]byte("e"))
	r.waitSeen(t, 10*time.Second, "edit> ")
	r.typeText(t, "abc")
	r.waitSeen(t, 10*time.Second, "edit> abc")
	r.master.Write([]byte{0x1b})
	r.waitSeen(t, 10*time.Second, "abc\r\nkeel: edit dropped; nothing was sent")
	if !waitFor(10*time.Second, func() bool { return strings.Count(r.text(), "[R]etry, [E]dit, [A]bort?") == 2 }) {
		t.Fatalf("the question was not asked again after Esc:\n%s", r.text())
	}
	r.master.Write([]byte("e"))
	if !waitFor(10*time.Second, func() bool { return strings.Count(r.text(), "edit> ") == 2 }) {
		t.Fatalf("e did not open the editor again:\n%s", r.text())
	}
	r.typeText(t, "read calc.go, fix Add and retry thx")
	r.master.Write([]byte{0x7f, 0x7f, 0x7f, 0x7f})
	r.waitSeen(t, 10*time.Second, "read calc.go, fix Add and retry")
	r.master.Write([]byte("\r"))
	want := "answered edit in the terminal: read calc.go, fix Add and retry"
	r.waitSeen(t, 30*time.Second, want)
	if code := r.exit(t, 60*time.Second); code != 0 {
		t.Fatalf("exit %d, want 0 (completed after the edit):\n%s", code, r.text())
	}
	r.waitSeen(t, 10*time.Second, "completed ·")
	screen := r.text()
	if strings.Contains(screen, want+" thx") || strings.Contains(screen, "abort the session?") || strings.Contains(screen, "answered retry") {
		t.Errorf("typed text was recorded wrongly or replayed as keys:\n%s", screen)
	}
	if answer, next := strings.Index(screen, want), strings.Index(screen, "Let me look at the files"); next < answer {
		t.Errorf("the answer printed after the next turn's text:\n%s", screen)
	}
	if !r.canonical(t) {
		t.Fatal("the terminal was left in raw mode")
	}
}

// TestTerminalStatusLine: while a command runs, the terminal shows a status line (spinner, what
// runs and for how long, the session's time and tokens, "esc to interrupt") and the command's
// output as it arrives, before its result.
func TestTerminalStatusLine(t *testing.T) {
	r := startTTY(t, env.StarterEnv(t), "demo", "--inject", "chatty_command")
	status := regexp.MustCompile(`[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] run_command sh -c .* ` + durationRE + ` · session ` + durationRE + ` · ~?\d+ tokens · esc to interrupt`)
	// The command runs for 6 s: wait for its second line and the status line together, which may
	// draw in either order on a busy machine, or for the result, which must not come first.
	var screen string
	waitFor(60*time.Second, func() bool {
		screen = r.text()
		return strings.Contains(screen, "The command finished") || (strings.Contains(screen, "step 2 of 6") && status.MatchString(screen))
	})
	if strings.Contains(screen, "The command finished") {
		t.Fatalf("the result came before the output and the status line showed while the command ran:\n%q", screen)
	}
	if !strings.Contains(screen, "step 2 of 6") || !status.MatchString(screen) {
		t.Fatalf("no output or no status line while the command ran:\n%q", screen)
	}
	if code := r.exit(t, 60*time.Second); code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, r.text())
	}
	r.waitSeen(t, 10*time.Second, "completed ·")
	if !regexp.MustCompile(`session ` + durationRE + ` · ~?[1-9]\d* tokens`).MatchString(r.text()) {
		t.Errorf("the status line never counted tokens:\n%q", r.text())
	}
	if !r.canonical(t) {
		t.Fatal("the terminal was left in raw mode")
	}
}

// TestNoTerminalStdin: with standard input on /dev/null (a character device, not a terminal) the
// starter does not offer the R/E/A prompt; it prints the command that answers, which works.
func TestNoTerminalStdin(t *testing.T) {
	m, s := openPTY(t)
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r := &ttyRun{cmd: exec.Command(starter, "demo", "--inject", "bad_args"), master: m, slave: s}
	r.cmd.Env = env.StarterEnv(t)
	r.cmd.Stdin, r.cmd.Stdout, r.cmd.Stderr = null, s, s
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.cmd.Process.Kill() })
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
	answer := regexp.MustCompile(`keel: answer with: starter answer (\S+) (\S+) retry\|edit\|abort`)
	var ids []string
	if !waitFor(60*time.Second, func() bool { ids = answer.FindStringSubmatch(r.text()); return ids != nil }) {
		t.Fatalf("no answer command printed:\n%s", r.text())
	}
	if r.seen("[R]etry") {
		t.Fatalf("the R/E/A prompt showed without a terminal on standard input:\n%s", r.text())
	}
	cli, stdout, stderr := startStarter(t, nil, "answer", ids[1], ids[2], "abort")
	if err := cli.Wait(); err != nil {
		t.Fatalf("answer: %v\n%s%s", err, stdout, stderr)
	}
	if code := r.exit(t, 60*time.Second); code != 1 {
		t.Fatalf("exit %d, want 1 (aborted):\n%s", code, r.text())
	}
	// The last output may still be on its way from the pseudo-terminal after the exit.
	r.waitSeen(t, 10*time.Second, "aborted")
}

// TestTerminalSecondCancelLeaves: at a terminal Ctrl+C is a key, not a signal. With no worker to
// end the session, the first Ctrl+C sends the cancel and a second cancel key (Esc) leaves at once
// with exit 130, the terminal back in line mode.
func TestTerminalSecondCancelLeaves(t *testing.T) {
	r := startTTY(t, env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true"), "run", "--workdir", t.TempDir(), "say hi")
	started := regexp.MustCompile(`session (\S+) started`)
	var m []string
	if !waitFor(60*time.Second, func() bool { m = started.FindStringSubmatch(r.text()); return m != nil }) {
		t.Fatalf("the session never started:\n%s", r.text())
	}
	t.Cleanup(func() { _ = env.Client().TerminateWorkflow(context.Background(), m[1], "", "test cleanup") })
	// Ctrl+C is a key only once the terminal is in raw mode; before that it is a SIGINT.
	if !waitFor(30*time.Second, func() bool { return !r.canonical(t) }) {
		t.Fatalf("the starter never took the terminal out of line mode:\n%s", r.text())
	}
	r.master.Write([]byte{0x03})
	r.waitSeen(t, 30*time.Second, "cancelling")
	r.master.Write([]byte{0x1b})
	if code := r.exit(t, 30*time.Second); code != 130 {
		t.Fatalf("exit %d, want 130 after the second cancel key:\n%s", code, r.text())
	}
	r.waitSeen(t, 10*time.Second, "interrupted again")
	if !r.canonical(t) {
		t.Fatal("the terminal was left in raw mode")
	}
}
