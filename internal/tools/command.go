package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// readerDrain bounds the wait for the last output after the command's group is gone; a process
// that left the group could keep the pipe open forever.
const readerDrain = 2 * time.Second

// stopReason says why a command did not end on its own.
type stopReason int

const (
	notStopped stopReason = iota
	stoppedTimeout
	stoppedCancel
)

// runCommand runs one program, without a shell, in the work directory, and reports its exit
// status and capped output. A non-zero exit is information for the model, not a tool error.
func (b *Box) runCommand(ctx context.Context, root, line string, timeoutSeconds int) contract.ToolResult {
	words, refusal := splitWords(line)
	if refusal != "" {
		return refused(refusal)
	}
	if !b.allowed(words[0]) {
		return refused(toolspec.PolicyDeniedFeedback(toolspec.RunCommand, fmt.Sprintf(
			"the program %q is not on the allowed list, which holds %s", words[0], strings.Join(b.Policy.Commands, ", "))))
	}
	program, refusal := findProgram(root, words[0])
	if refusal != "" {
		return refused(refusal)
	}
	timeout, limited := b.timeout(timeoutSeconds)
	out := newCapture(b.outputCap())
	if b.Sandbox != nil {
		return b.runSandboxed(ctx, root, words, timeout, limited, out)
	}
	cmd := &exec.Cmd{Path: program, Args: words, Dir: root, Env: commandEnv(), SysProcAttr: sysProcAttr()}
	run, err := startLocked(cmd, b.outputSink(out))
	if err != nil {
		return notStartable(words[0])
	}
	reason, waitErr := run.wait(ctx, timeout)
	leftovers := groupAlive(run.pgid)
	if leftovers {
		_ = KillGroup(run.pgid, DefaultGrace)
	}
	run.drain(readerDrain)
	return commandResult(reason, stateOutcome(cmd.ProcessState, waitErr, leftovers), timeout, limited, out.String())
}

func notStartable(program string) contract.ToolResult {
	return refused(fmt.Sprintf("The program %q could not be started (it may not be an executable program); nothing was run and nothing changed. "+
		"Choose another program, or run a script through an allowed interpreter such as sh.", program))
}

// outputSink is where a command's output goes: the capture, and the live writer if there is one.
func (b *Box) outputSink(out *capture) io.Writer {
	if b.Live == nil {
		return out
	}
	return io.MultiWriter(out, b.Live)
}

// allowed applies the allow list; the program is compared exactly as written, so a script in the
// work directory named like an allowed program is not confused with it.
func (b *Box) allowed(program string) bool {
	if len(b.Policy.Commands) == 0 {
		return true
	}
	for _, c := range b.Policy.Commands {
		if c == program {
			return true
		}
	}
	return false
}

// timeout is the smaller of the policy's limit and the call's own; limited says the policy won.
func (b *Box) timeout(seconds int) (time.Duration, bool) {
	limit := b.Policy.CommandTimeout.Std()
	if limit <= 0 {
		limit = contract.DefaultCommandTimeout
	}
	if seconds > 0 {
		asked := time.Duration(seconds) * time.Second
		if asked <= limit {
			return asked, false
		}
		return limit, true
	}
	return limit, false
}

func (b *Box) outputCap() int {
	if b.OutputCap > 0 {
		return b.OutputCap
	}
	return contract.DefaultOutputCap
}

// findProgram locates the program: a bare name on PATH, a name with a slash inside the work
// directory.
func findProgram(root, name string) (string, string) {
	if !strings.Contains(name, "/") {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Sprintf("The program %q is not installed; nothing was run and nothing changed. Use another program.", name)
		}
		return p, ""
	}
	pl, refusal := resolve(root, name)
	if refusal != "" {
		return "", refusal
	}
	info, err := os.Stat(pl.abs)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !info.Mode().IsRegular()) {
		return "", fmt.Sprintf("There is no program file %q; nothing was run and nothing changed. Use list_dir to find the right name.", pl.rel)
	}
	return pl.abs, ""
}

// running is a started command: its process group and the goroutines that wait for it and read
// its output.
type running struct {
	pgid     int
	proc     *os.Process
	exited   chan error
	readDone chan struct{}
	reader   *os.File
}

// startLocked starts cmd with stdout and stderr on one pipe (interleaved as written) and stdin on
// the null device. Start and Wait run on one goroutine locked to its OS thread, because Linux
// sends the parent-death signal when the forking thread exits: locked for the command's whole
// life, that thread cannot go away before it.
func startLocked(cmd *exec.Cmd, out io.Writer) (*running, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating the output pipe: %w", err)
	}
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = pw, pw
	started := make(chan error, 1)
	r := &running{exited: make(chan error, 1), readDone: make(chan struct{}), reader: pr}
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		r.exited <- cmd.Wait()
	}()
	err = <-started
	pw.Close() // the child holds its own copy
	if err != nil {
		pr.Close()
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	r.pgid = cmd.Process.Pid // Setpgid makes the child the leader of a new group
	r.proc = cmd.Process
	go func() {
		defer close(r.readDone)
		_, _ = io.Copy(out, pr)
	}()
	return r, nil
}

// wait waits for the command to exit, stopping its whole group on timeout or cancellation.
func (r *running) wait(ctx context.Context, timeout time.Duration) (stopReason, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-r.exited:
		return notStopped, err
	case <-timer.C:
		return stoppedTimeout, r.stop()
	case <-ctx.Done():
		return stoppedCancel, r.stop()
	}
}

// stop ends the command's group and then its process, in case the group could not be signalled,
// and returns the command's exit.
func (r *running) stop() error {
	_ = KillGroup(r.pgid, DefaultGrace)
	_ = r.proc.Kill() // already gone in the normal case; the error says so and is not needed
	return <-r.exited
}

// drain waits for the output reader to reach the end, closing the pipe if that takes too long.
func (r *running) drain(limit time.Duration) {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-r.readDone:
	case <-t.C:
		r.reader.Close()
		<-r.readDone
	}
	r.reader.Close()
}

// outcome is how a command that was not stopped ended.
type outcome struct {
	// known is false when the end could not be observed.
	known bool
	// signal ended the command, 0 if it exited.
	signal syscall.Signal
	// code is the exit status.
	code int
	// failed says the exit was not a clean success even with status 0.
	failed bool
	// leftovers says background processes outlived it and were stopped.
	leftovers bool
	// limit describes the sandbox limit it hit, empty if none is known.
	limit string
}

// stateOutcome reads an unsandboxed command's end.
func stateOutcome(state *os.ProcessState, waitErr error, leftovers bool) outcome {
	if state == nil {
		return outcome{}
	}
	o := outcome{known: true, leftovers: leftovers, code: state.ExitCode(), failed: waitErr != nil}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		o.signal = ws.Signal()
	}
	return o
}

// commandResult writes what happened for the model. Whether a command changed files cannot be
// known in general (a read-only `go test` and a `make` look alike), so the result says so only
// where it matters and is true: a command that failed, was stopped or ended by a signal "may have
// changed files" (a half-done command can leave files half-written, to check before running it
// again); one that succeeded says nothing of files, its output says what it did. Every command
// result counts as a possible change for the ledger (Changed) either way.
func commandResult(reason stopReason, o outcome, timeout time.Duration, limited bool, output string) contract.ToolResult {
	body := "\n\nOutput:\n" + output
	if strings.TrimSpace(output) == "" {
		body = "\n\nIt printed nothing."
	}
	switch reason {
	case stoppedTimeout:
		msg := fmt.Sprintf("The command was stopped after %s because it ran too long; it may have changed files before it stopped. ", seconds(timeout))
		if limited {
			msg += fmt.Sprintf("The limit for commands is %s. ", seconds(timeout))
		}
		msg += "Run something that finishes sooner (a narrower selection, or a command that does not wait for input), or conclude."
		return contract.ToolResult{Content: msg + body, IsError: true, Changed: true}
	case stoppedCancel:
		return contract.ToolResult{Content: "The command was stopped because the session was cancelled; it may have changed files before it stopped. " +
			"Check the files it works on before running it again." + body, IsError: true, Changed: true}
	}
	extra := ""
	if o.leftovers {
		extra = " It left processes running in the background; they were stopped."
	}
	if o.limit != "" {
		extra += " " + o.limit
	}
	if !o.known {
		return contract.ToolResult{Content: "The command ran, but its end could not be observed; it may have changed files. " +
			"Check the files it works on before running it again." + body, IsError: true, Changed: true}
	}
	if o.signal != 0 {
		return contract.ToolResult{Content: fmt.Sprintf(signalOpening+"%s before it finished; it may have changed files.%s "+
			"Read the output, fix the cause, and run it again.", o.signal, extra) + body, Changed: true}
	}
	if o.code == 0 && !o.failed {
		return contract.ToolResult{Content: fmt.Sprintf(succeededPrefix+"success).%s", extra) + body, Changed: true}
	}
	return contract.ToolResult{Content: fmt.Sprintf(failedOpening+"%d, which means it failed; it may have changed files before it failed.%s "+
		"Read the output, fix the cause, and run it again.", o.code, extra) + body, Changed: true}
}

// Openings of the results commandResult writes for a command that failed or was ended by a
// signal: the result is not an error for the model's sake (the output says what to fix), but a
// person's view marks it as failed.
const (
	failedOpening   = "The command finished with exit status "
	succeededPrefix = "The command finished with exit status 0 ("
	signalOpening   = "The command was ended by the signal "
)

// CommandFailed reports whether a run_command result says the command failed (a non-zero exit
// status, or ended by a signal). It reads only the opening Keel wrote, never the output after it.
func CommandFailed(content string) bool {
	return (strings.HasPrefix(content, failedOpening) && !strings.HasPrefix(content, succeededPrefix)) ||
		strings.HasPrefix(content, signalOpening)
}

// seconds renders a duration for the model in whole seconds when it is one.
func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		n := int(d / time.Second)
		if n == 1 {
			return "1 second"
		}
		return fmt.Sprintf("%d seconds", n)
	}
	return d.String()
}
